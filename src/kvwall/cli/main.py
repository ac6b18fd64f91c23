"""The `kvwall` command: it dispatches to its subcommands, each of which has its parser and its printer in a module of
its own (kvwall.cli.<command>), and prints a refusal as one line.

    kvwall footprint --model llama-3-70b --context 128k
    kvwall crossover --model llama-3-70b --batch 1 32
    kvwall regime --model llama-3-70b --device b200 --batch 32 --context 128k
    kvwall regime --model llama-3-70b --device h100-sxm --tp 4 --batch 32 --context 128k
    kvwall fit --model deepseek-v3 --device b200 --batch 64 --context 128k --weight-dtype native
    kvwall validate data/reported/serving-measurements.csv --output bounds.csv
    kvwall measure --quick
    kvwall template device model > my-hardware.yaml
    kvwall diff HEAD
    kvwall benchmark
    kvwall build --configfile mine.yaml --cores 4
"""

from __future__ import annotations

import argparse
import os
import sys

from kvwall.cli import (benchmark_report, build, catalogue, crossover, diff, fit, footprint, plan, regime, template,
                        validate)
from kvwall.cli.parser import OneLineParser
from kvwall.cli.request import CommandError
from kvwall.inputs.errors import SpecError
from kvwall.measure import command as measure
from kvwall.model.collectives import DomainError

#: The subcommands, in the order `kvwall --help` lists them (catalogue: import and list).
COMMANDS = (footprint, crossover, regime, fit, catalogue, measure, validate, plan, diff, template, build,
            benchmark_report)


def build_parser() -> argparse.ArgumentParser:
    """The parser of `kvwall` with every subcommand's parser."""
    parser = OneLineParser(
        prog="kvwall", description="The KV cache memory wall, from specs (SoK arXiv:2609.30854): ask for a model's KV "
        "footprint, its crossovers and its regime on a device; measure the KV slope; review a rebuild. Every number "
        "is printed with its evidence class and the equation or source behind it.",
        epilog="Run from the repository root (where config/ is) or pass --config DIR. 'kvwall COMMAND --help' "
        "explains each command.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status (2 on bad input, with one line on stderr)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build"]:  # every later argument is Snakemake's, which kvwall's parser does not know
        return build.run(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except (SpecError, CommandError, DomainError, plan.PlanError) as err:
        print(f"kvwall: {err}", file=sys.stderr)
    except BrokenPipeError:  # output piped into a reader that stopped early (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 2
