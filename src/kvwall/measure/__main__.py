"""`python -m kvwall.measure [--quick] ...`: the `kvwall measure` command without the kvwall entry point installed
(a machine that has the source tree on PYTHONPATH and its own numpy, scipy and torch)."""

import argparse
import sys

from kvwall.inputs.errors import SpecError
from kvwall.measure.command import register

parser = argparse.ArgumentParser(prog="python -m kvwall.measure")
register(parser.add_subparsers())
arguments = parser.parse_args(["measure", *sys.argv[1:]])
try:
    sys.exit(arguments.func(arguments))
except SpecError as error:
    print(f"kvwall: {error}", file=sys.stderr)
    sys.exit(2)
