# Read the workflow's own config file with kvwall's reader before Snakemake does, so that a syntax error or a key
# given twice stops the run with one line naming file, line and reason.
import sys

from kvwall.inputs.loader import SpecError, read_yaml

try:
    read_yaml("config/config.yaml")
except SpecError as error:
    sys.exit(f"kvwall: bad input: {error}")
