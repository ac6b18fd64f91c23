"""`kvwall diff [REV]`: what a change did to the artifacts, as a reviewer reads it.

For every table CSV under tables/ that differs from the git revision REV (default HEAD), the cells that changed,
the rows added and removed, found by daff's table alignment in this process; for every figure under figures/,
whether it changed and in which formats. The Markdown and LaTeX copies of a table are written from the same rows
as its CSV, so the CSV's cells say everything about them.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from collections import defaultdict
from pathlib import Path, PurePosixPath

import daff

#: Row markers of daff's highlighter output: changed cells, added and removed rows, the schema row.
CHANGED, ADDED, REMOVED, SCHEMA = "->", "+++", "---", "!"
#: Cells of an added or removed row shown before the row is cut short.
ROW_CELLS = 6


class DiffError(RuntimeError):
    """git could not answer (not a repository, unknown revision)."""


def _git(repo: Path, *args: str) -> str:
    run = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if run.returncode != 0:
        raise DiffError(f"git {' '.join(args)}: {run.stderr.strip() or 'failed'}")
    return run.stdout


def _rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text))]


def _cells(header: list[str], row: list[str]) -> str:
    shown = [f"{name}={value}" for name, value in zip(header, row) if value != ""][:ROW_CELLS]
    more = ", ..." if sum(1 for value in row if value != "") > ROW_CELLS else ""
    return ", ".join(shown) + more


def table_changes(old: list[list[str]], new: list[list[str]]) -> list[str]:
    """The changes from ``old`` to ``new`` (rows of a CSV, header first), one line each; empty when equal.

    A changed row is named by its first cell (the table's key: a model, a device, a batch) and lists each changed
    cell as ``column: old -> new``.
    """
    highlighted: list[list] = []
    flags = daff.CompareFlags()
    flags.show_unchanged = False
    alignment = daff.Coopy.compareTables(daff.PythonTableView(old), daff.PythonTableView(new), flags).align()
    daff.TableDiff(alignment, flags).hilite(daff.PythonTableView(highlighted))
    if not highlighted:
        return []
    header_at = next(i for i, row in enumerate(highlighted) if row[0] == "@@")
    header = [str(c) for c in highlighted[header_at][1:]]
    lines = []
    if header_at > 0 and highlighted[0][0] == SCHEMA:
        marks = highlighted[0][1:]
        added = [name for name, mark in zip(header, marks) if mark == ADDED]
        removed = [name for name, mark in zip(header, marks) if mark == REMOVED]
        renamed = [name for name, mark in zip(header, marks) if mark and mark not in (ADDED, REMOVED, "")]
        for what, names in (("columns added", added), ("columns removed", removed), ("columns renamed", renamed)):
            if names:
                lines.append(f"{what}: {', '.join(names)}")
    for row in highlighted[header_at + 1:]:
        action, cells = row[0], ["" if c is None else str(c) for c in row[1:]]
        if action == CHANGED:
            changed = [f"{name}: {cell.replace(CHANGED, ' -> ', 1)}" for name, cell in zip(header, cells) if CHANGED in cell]
            lines.append(f"changed {header[0]}={cells[0].split(CHANGED)[-1]}: " + "; ".join(changed))
        elif action == ADDED:
            lines.append(f"added   {_cells(header, cells)}")
        elif action == REMOVED:
            lines.append(f"removed {_cells(header, cells)}")
    return lines


def _changed_paths(repo: Path, revision: str, folder: str) -> dict[str, str]:
    """Paths under ``folder`` that differ from ``revision`` in the working tree: path -> A, D or M."""
    status = {}
    for line in _git(repo, "diff", "--no-renames", "--name-status", revision, "--", folder).splitlines():
        mark, path = line.split("\t", 1)
        status[path] = mark[0]
    for path in _git(repo, "ls-files", "--others", "--exclude-standard", "--", folder).splitlines():
        status[path] = "A"
    return status


def _at_revision(repo: Path, revision: str, path: str) -> str:
    return _git(repo, "show", f"{revision}:{path}")


def diff_lines(repo: Path, revision: str = "HEAD") -> list[str]:
    """The report: each differing table with its changed cells, then every figure, changed or not."""
    _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    lines = []
    tables = {p: m for p, m in _changed_paths(repo, revision, "tables").items() if p.endswith(".csv")}
    for path, mark in sorted(tables.items()):
        if mark == "D":
            lines.append(f"{path}: removed")
            continue
        new = _rows((repo / path).read_text(encoding="utf-8"))
        if mark == "A":
            lines.append(f"{path}: new table, {len(new) - 1} rows")
            continue
        changes = table_changes(_rows(_at_revision(repo, revision, path)), new)
        lines.append(f"{path}: {len(changes)} change{'s' if len(changes) != 1 else ''}" if changes else
                     f"{path}: same cells (formatting only)")
        lines.extend(f"  {change}" for change in changes)
    if not tables:
        lines.append(f"tables: no CSV differs from {revision}")
    figures = _changed_paths(repo, revision, "figures")
    formats: dict[str, set[str]] = defaultdict(set)
    for path in figures:
        formats[str(PurePosixPath(path).with_suffix(""))].add(PurePosixPath(path).suffix.lstrip("."))
    present = {str(PurePosixPath(p).with_suffix("")) for p in _git(repo, "ls-files", "--", "figures").splitlines()}
    for figure in sorted(present | set(formats)):
        if figure in formats:
            marks = {figures[p] for p in figures if str(PurePosixPath(p).with_suffix("")) == figure}
            what = "new" if marks == {"A"} else "removed" if marks == {"D"} else "changed"
            lines.append(f"{figure}: {what} ({', '.join(sorted(formats[figure]))})")
        else:
            lines.append(f"{figure}: unchanged")
    return lines


def run_command(args: argparse.Namespace) -> int:
    """Print the report; exit status 0, or 2 when git cannot answer."""
    try:
        lines = diff_lines(Path(args.repo), args.revision)
    except DiffError as err:
        print(f"kvwall: diff: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def register(subparsers) -> None:
    """Add the `diff` subcommand to the kvwall command line."""
    parser = subparsers.add_parser(
        "diff", help="changed table cells and changed figures against a git revision",
        description="Compare the artifacts in the working tree with a git revision: for every table CSV under "
        "tables/ that differs, the cells that changed (as 'column: old -> new', rows named by their first column), "
        "the rows added and removed; for every figure under figures/, whether it changed and in which formats. "
        "Run it after a rebuild to review what a change to config/ or src/ did.",
    )
    parser.add_argument("revision", nargs="?", default="HEAD", metavar="REV",
                        help="git revision to compare with (default: HEAD, the last commit)")
    parser.add_argument("--repo", default=".", metavar="DIR", help="repository root (default: .)")
    parser.set_defaults(func=run_command)
