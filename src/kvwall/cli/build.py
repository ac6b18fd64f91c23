"""`kvwall build [SNAKEMAKE ARGUMENTS]`: Snakemake, with every config file it would read checked by kvwall first.

Snakemake reads a config file named by ``--configfile`` (on the command line or in a profile) with its YTE template
engine while it starts, before any workflow code runs, and a file that sets ``__use_yte__`` has its ``?expression``
values run as Python. The workflow's own check (workflow/rules/preflight.smk) can only come after that read. This
command parses the arguments with Snakemake's own parser, so it sees exactly the files Snakemake would read, reads
each with kvwall's hardened reader (kvwall.inputs.reader) refusing any template, and only then runs Snakemake on the
same arguments, in the same process. A profile's own file, which the parser reads through YTE too, is read so the
moment before the parser reads it.

A plain build (no argument but a core count) that succeeds leaves BUILT_STAMP, the digest of every file of the
checkout as the build left it (tree_digest). A plain build that finds every file as that stamp recorded has nothing to
do, as Snakemake would find after its start of seconds, and returns at once without starting it. Only `kvwall build`
looks at the stamp: `snakemake --cores 4` always starts Snakemake.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
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
With no argument but --cores N, a build that finds no file changed since the last such build succeeded says so and
returns without starting Snakemake.
"""

#: What the last plain build that succeeded left: the interpreter it ran with and the digest of the checkout after it.
BUILT_STAMP = Path(".snakemake/kvwall-built.json")
#: The workflow's lock, held by a running build (workflow/rules/common.smk).
BUILD_LOCK = Path(".snakemake/kvwall-build.lock")
#: Folders whose files no build reads: version control, the environment, caches and the jobs' logs.
UNREAD_FOLDERS = frozenset({".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "logs"})
#: What Snakemake and the workflow keep under .snakemake/ for a run alone; the rest (metadata, incomplete markers,
#: views, the validation, check stamps) is what the next run reads.
RUN_SCRATCH = frozenset({"log", "locks", "auxiliary", "shadow", "scripts", "conda", "conda-archive", "singularity",
                         "iocache", "kvwall-kept", BUILD_LOCK.name, BUILT_STAMP.name})
#: A core count, the one argument a plain build takes.
CORES = re.compile(r"(?:--cores=|--jobs=|-c|-j)(?:\d+|all)")


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


def plain(argv: list[str]) -> bool:
    """Whether ``argv`` asks for the default build and nothing else (at most a core count), with no profile named
    from the environment."""
    if "SNAKEMAKE_PROFILE" in os.environ:
        return False
    if len(argv) == 2:
        return argv[0] in ("--cores", "-c", "--jobs", "-j") and bool(re.fullmatch(r"\d+|all", argv[1]))
    return len(argv) == 0 or (len(argv) == 1 and bool(CORES.fullmatch(argv[0])))


def tree_digest(root: Path = Path(".")) -> str:
    """A digest of every file under ``root`` a build may read or write (UNREAD_FOLDERS and .snakemake's RUN_SCRATCH
    aside): its path, size, modification time and inode, in path order."""
    entries = []
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        folders[:] = sorted(name for name in folders if name not in UNREAD_FOLDERS
                            and not (here == root / ".snakemake" and name in RUN_SCRATCH))
        for name in files:
            if here == root / ".snakemake" and name in RUN_SCRATCH:
                continue
            status = (here / name).lstat()
            entries.append(f"{(here / name).relative_to(root).as_posix()}\0{status.st_size}\0{status.st_mtime_ns}"
                           f"\0{status.st_ino}")
    return hashlib.sha256("\n".join(sorted(entries)).encode("utf-8", "surrogateescape")).hexdigest()


def _building() -> bool:
    """Whether a build holds the workflow's lock now."""
    try:
        with open(BUILD_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def current_stamp() -> dict:
    """What BUILT_STAMP holds for the checkout as it is now: the interpreter and tree_digest."""
    return {"python": sys.executable, "tree": tree_digest()}


def up_to_date() -> bool:
    """Whether the checkout is as the last plain build that succeeded left it (BUILT_STAMP), no build running."""
    try:
        recorded = json.loads(BUILT_STAMP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return not _building() and recorded == current_stamp()


def run(argv: list[str]) -> int:
    """Check the config files of ``argv``, then run Snakemake on it; 2 on a refused file, Snakemake's status else. A
    plain build of an unchanged checkout returns 0 without starting Snakemake."""
    if {"-h", "--help"} & set(argv):
        print(f"{USAGE}\n{documentation_line('kvwall build')}")
        return 0
    if plain(argv) and up_to_date():
        print(f"kvwall: build: nothing to do: no file changed since the last build ({BUILT_STAMP})", file=sys.stderr)
        return 0
    BUILT_STAMP.unlink(missing_ok=True)
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
        built = args_to_api(args, parser)
    except Exception as error:
        print_exception(error)
        return 1
    if built and plain(argv) and BUILT_STAMP.parent.is_dir():
        BUILT_STAMP.write_text(json.dumps(current_stamp()), encoding="utf-8")
    return 0 if built else 1


def register(subparsers) -> None:
    """Add `kvwall build` to the command's subparsers, for its help: main runs it before the parser (every later
    argument is Snakemake's)."""
    subparsers.add_parser("build", description=USAGE, add_help=False,
                          help="snakemake, with every --configfile checked by kvwall before Snakemake reads it")
