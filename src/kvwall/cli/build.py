"""`kvwall build [SNAKEMAKE ARGUMENTS]`: Snakemake, with every config file it would read checked by kvwall first.

Snakemake reads a config file named by ``--configfile`` (on the command line or in a profile) with its YTE template
engine while it starts, before any workflow code runs, and a file that sets ``__use_yte__`` has its ``?expression``
values run as Python. The workflow's own check (workflow/rules/preflight.smk) can only come after that read. This
command parses the arguments with Snakemake's own parser, so it sees exactly the files Snakemake would read, reads
each with kvwall's hardened reader (kvwall.inputs.reader) refusing any template, and only then runs Snakemake on the
same arguments, in the same process. A profile's own file, which the parser reads through YTE too, is read so the
moment before the parser reads it.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

from kvwall.cli.documentation import documentation_line
from kvwall.inputs.errors import SpecError
from kvwall.inputs.reader import read_yaml, refuse_templates

USAGE = """\
usage: kvwall build [SNAKEMAKE ARGUMENTS]

Run Snakemake (`snakemake --cores 4`, `kvwall build -n --forceall`, `kvwall build --configfile mine.yaml`) after
reading every config file it would read (--configfile, on the command line or in a profile, and each profile's own
file) with kvwall's reader:
a file that is not plain YAML or JSON values, or that holds a YTE template (`__use_yte__`, a `?expression`, which
Snakemake would run as Python before any check of the workflow), stops the build with one line naming the file and
the key, before Snakemake reads it. Every argument goes to Snakemake unchanged (`snakemake --help` lists them).
"""


def check_config_file(path: str | Path) -> None:
    """Refuse ``path`` unless kvwall's reader reads it as keys and plain values, without a template."""
    document = read_yaml(path)
    if not isinstance(document, dict):
        raise SpecError(path, "", "a config file holds keys and their values, not a single value or a list")
    refuse_templates(document, path)


def config_files(argv: list[str]) -> tuple[object, object, list[Path]]:
    """Snakemake's parser and parsed arguments for ``argv`` (its profiles included), and the config files named.
    Snakemake reads each profile's file with YTE while it parses, so each is checked the moment before it is read."""
    from snakemake.cli import parse_args  # Snakemake's import is seconds: only a build pays for it
    from snakemake.profiles import ProfileConfigFileParser

    parse = ProfileConfigFileParser.parse

    def checked_parse(self, stream):
        check_config_file(stream.name)
        return parse(self, stream)

    ProfileConfigFileParser.parse = checked_parse
    try:
        parser, args = parse_args(argv)
    finally:
        ProfileConfigFileParser.parse = parse
    return parser, args, [Path(path) for path in args.configfile]


def parsed(argv: list[str]) -> tuple[object, object, list[Path]]:
    """config_files(argv), with what Snakemake's parser prints held back until it is done: where it exits on a
    mistake (its usage, then the mistake), a CliException of the mistake's line alone."""
    from snakemake.exceptions import CliException

    captured, refused = io.StringIO(), False
    try:
        with contextlib.redirect_stderr(captured):
            return config_files(argv)
    except SystemExit as exited:
        if exited.code in (0, None):
            raise
        refused = True
        lines = captured.getvalue().strip().splitlines() or [f"Snakemake's parser exited with status {exited.code}"]
        raise CliException(re.sub(r"^\S+: error: ", "", lines[-1])) from None  # argparse's "<prog>: error: "
    finally:
        if not refused:
            sys.stderr.write(captured.getvalue())


def run(argv: list[str]) -> int:
    """Check the config files of ``argv``, then run Snakemake on it; 2 on a refused file, Snakemake's status else."""
    if {"-h", "--help"} & set(argv):
        print(f"{USAGE}\n{documentation_line('kvwall build')}")
        return 0
    from snakemake.exceptions import CliException

    try:
        parser, args, files = parsed(argv)
        for path in files:
            check_config_file(path)
    except CliException as error:
        print(f"kvwall: build: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except SpecError as error:
        print(f"kvwall: bad input: {error}", file=sys.stderr)
        return 2
    from snakemake.cli import args_to_api
    from snakemake.exceptions import print_exception

    try:  # as snakemake.cli.main runs it
        return 0 if args_to_api(args, parser) else 1
    except Exception as error:
        print_exception(error)
        return 1


def register(subparsers) -> None:
    """Add `kvwall build` to the command's subparsers, for its help: main runs it before the parser (every later
    argument is Snakemake's)."""
    subparsers.add_parser("build", description=USAGE, add_help=False,
                          help="snakemake, with every --configfile checked by kvwall before Snakemake reads it")
