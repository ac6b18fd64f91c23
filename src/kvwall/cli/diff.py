"""`kvwall diff [REV]`: what a change did to the artifacts, as a reviewer reads it, in text or as Markdown for a
pull-request comment.

- **Tables**: for every table CSV under tables/ that differs from the git revision REV (default HEAD), its rows
  aligned by the key columns its builder declares (kvwall.render.keyed; daff's alignment where no key holds), each
  changed row named by its key with every changed cell as ``column: old -> new``, and the rows added and removed in
  full. Numbers that differ by less than a relative tolerance (default TOLERANCE: last-digit noise) count as equal;
  ``--all`` shows every difference. The Markdown and LaTeX copies of a table are written from the same rows as its
  CSV, so the CSV's cells say everything about them.
- **Notebooks**: for every executed notebook that differs, the code cells whose outputs changed, with the lines.
- **CANONICAL-NUMBERS**: every number of canonical-numbers.json whose value or display changed, added or removed, by
  id, and every audit entry whose status or values changed.
- **Figures**: for every figure under figures/, whether it changed and in which formats.

The text lists only the artifacts that changed, then how many it left out as unchanged or within the tolerance (one
line, ``nothing changed``, when none did); ``--all`` lists every artifact compared and every difference.

Files of the working tree are read through kvwall.inputs.reader (regular files of bounded size, UTF-8).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import daff

from kvwall.inputs.errors import SpecError
from kvwall.inputs.reader import read_text
from kvwall.tables import key_of

#: Row markers of daff's highlighter output: changed cells, added and removed rows, the schema row.
CHANGED, ADDED, REMOVED, SCHEMA = "->", "+++", "---", "!"
#: Default relative tolerance: two numbers closer than this (relative to the larger) are the same number.
TOLERANCE = 1e-9
#: Changed output lines shown per notebook cell.
NOTEBOOK_LINES = 8
#: Where the canonical numbers' machine-readable twin lives.
CANONICAL_JSON = "canonical-numbers.json"
#: Items of one list a Markdown report shows before folding the rest into <details>.
MARKDOWN_OPEN = 20


class DiffError(RuntimeError):
    """git could not answer (not a repository, unknown revision), or a file could not be read."""


def _git(repo: Path, *args: str) -> str:
    try:
        run = subprocess.run(["git", *args], cwd=repo, capture_output=True)
    except OSError as err:  # no such folder, or not one git can run in
        raise DiffError(f"{repo}: {err.strerror}") from None
    if run.returncode != 0:
        raise DiffError(f"git {' '.join(args)}: {run.stderr.decode('utf-8', 'replace').strip() or 'failed'}")
    try:
        return run.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise DiffError(f"git {' '.join(args)}: the answer cannot be read as UTF-8 text") from None


def _rows(text: str, path: str) -> list[list[str]]:
    try:
        return [row for row in csv.reader(io.StringIO(text))]
    except csv.Error as err:  # a cell past the csv module's field limit, a NUL byte
        raise DiffError(f"{path}: not a CSV table ({err})") from None


def same_number(old: str, new: str, tolerance: float) -> bool:
    """Whether two cells hold numbers within ``tolerance`` of each other, relative to the larger."""
    try:
        a, b = float(old), float(new)
    except ValueError:
        return False
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


@dataclass(frozen=True)
class CellChange:
    column: str
    old: str
    new: str


@dataclass(frozen=True)
class RowChange:
    """A row present on both sides: its key (column -> value) and the cells that changed."""

    key: tuple[tuple[str, str], ...]
    cells: tuple[CellChange, ...]


@dataclass
class TableChanges:
    """What changed in one table: columns, rows changed, added and removed (each a full row: column -> value)."""

    key: tuple[str, ...]
    columns_added: list[str] = field(default_factory=list)
    columns_removed: list[str] = field(default_factory=list)
    changed: list[RowChange] = field(default_factory=list)
    added: list[dict[str, str]] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    within_tolerance: int = 0  # numeric cells that differ by less than the tolerance

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.added) + len(self.removed) + bool(self.columns_added) + bool(self.columns_removed)


def _keyed(rows: list[list[str]], key: tuple[str, ...]) -> dict[tuple[str, ...], dict[str, str]] | None:
    """Rows by their key values, or None when a key column is missing or two rows share a key."""
    header = rows[0]
    if not key or any(name not in header for name in key):
        return None
    found: dict[tuple[str, ...], dict[str, str]] = {}
    for row in rows[1:]:
        record = dict(zip(header, row))
        values = tuple(record.get(name, "") for name in key)
        if values in found:
            return None
        found[values] = record
    return found


def _by_key(old: list[list[str]], new: list[list[str]], key: tuple[str, ...], tolerance: float) -> TableChanges | None:
    old_rows, new_rows = _keyed(old, key), _keyed(new, key)
    if old_rows is None or new_rows is None:
        return None
    changes = TableChanges(key, [c for c in new[0] if c not in old[0]], [c for c in old[0] if c not in new[0]])
    common = [c for c in new[0] if c in old[0]]
    for values, record in new_rows.items():
        before = old_rows.get(values)
        if before is None:
            changes.added.append(record)
            continue
        cells = []
        for column in common:
            a, b = before.get(column, ""), record.get(column, "")
            if a == b:
                continue
            if same_number(a, b, tolerance):
                changes.within_tolerance += 1
            else:
                cells.append(CellChange(column, a, b))
        if cells:
            changes.changed.append(RowChange(tuple(zip(key, values)), tuple(cells)))
    changes.removed = [record for values, record in old_rows.items() if values not in new_rows]
    return changes


def _by_alignment(old: list[list[str]], new: list[list[str]], tolerance: float) -> TableChanges:
    """daff's alignment of two tables without a key; a changed row is named by its first cell."""
    highlighted: list[list] = []
    flags = daff.CompareFlags()
    flags.show_unchanged = False
    alignment = daff.Coopy.compareTables(daff.PythonTableView(old), daff.PythonTableView(new), flags).align()
    daff.TableDiff(alignment, flags).hilite(daff.PythonTableView(highlighted))
    changes = TableChanges(())
    if not highlighted:
        return changes
    header_at = next(i for i, row in enumerate(highlighted) if row[0] == "@@")
    header = [str(c) for c in highlighted[header_at][1:]]
    if header_at > 0 and highlighted[0][0] == SCHEMA:
        marks = highlighted[0][1:]
        changes.columns_added = [name for name, mark in zip(header, marks) if mark == ADDED]
        changes.columns_removed = [name for name, mark in zip(header, marks) if mark == REMOVED]
    for row in highlighted[header_at + 1:]:
        action, cells = row[0], ["" if c is None else str(c) for c in row[1:]]
        record = {name: cell for name, cell in zip(header, cells)}
        if action == CHANGED:
            changed = []
            for name, cell in zip(header, cells):
                if CHANGED not in cell or name in changes.columns_added or name in changes.columns_removed:
                    continue
                a, b = cell.split(CHANGED, 1)
                if same_number(a, b, tolerance):
                    changes.within_tolerance += 1
                else:
                    changed.append(CellChange(name, a, b))
            if changed:
                changes.changed.append(RowChange(((header[0], cells[0].split(CHANGED)[-1]),), tuple(changed)))
        elif action == ADDED:
            changes.added.append(record)
        elif action == REMOVED:
            changes.removed.append(record)
    return changes


def table_changes(old: list[list[str]], new: list[list[str]], key: tuple[str, ...] = (),
                  tolerance: float = TOLERANCE) -> TableChanges:
    """The changes from ``old`` to ``new`` (rows of a CSV, header first): rows aligned on ``key`` where it holds on
    both sides (present, no two rows alike), else by daff's alignment."""
    return _by_key(old, new, key, tolerance) or _by_alignment(old, new, tolerance)


def _row_text(record: dict[str, str]) -> str:
    return ", ".join(f"{name}={value}" for name, value in record.items() if value != "")


def table_lines(changes: TableChanges) -> list[str]:
    """The changes of one table as text, one line each."""
    lines = []
    for what, names in (("columns added", changes.columns_added), ("columns removed", changes.columns_removed)):
        if names:
            lines.append(f"{what}: {', '.join(names)}")
    for row in changes.changed:
        key = ", ".join(f"{name}={value}" for name, value in row.key)
        lines.append(f"changed {key}: " + "; ".join(f"{c.column}: {c.old} -> {c.new}" for c in row.cells))
    lines += [f"added   {_row_text(record)}" for record in changes.added]
    lines += [f"removed {_row_text(record)}" for record in changes.removed]
    return lines


@dataclass(frozen=True)
class TableReport:
    path: str
    status: str  # changed, new, removed
    changes: TableChanges | None = None
    rows: int = 0


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


def _working(repo: Path, path: str) -> str:
    try:
        return read_text(repo / path)
    except SpecError as err:
        raise DiffError(str(err)) from None


def _artifact(path: str) -> str:
    return str(PurePosixPath(path).relative_to("tables").with_suffix(""))


def table_reports(repo: Path, revision: str, tolerance: float) -> list[TableReport]:
    reports = []
    tables = {p: m for p, m in _changed_paths(repo, revision, "tables").items() if p.endswith(".csv")}
    for path, mark in sorted(tables.items()):
        if mark == "D":
            reports.append(TableReport(path, "removed"))
            continue
        new = _rows(_working(repo, path), path)
        if mark == "A":
            reports.append(TableReport(path, "new", rows=len(new) - 1))
            continue
        key = key_of(_artifact(path)) or ()
        changes = table_changes(_rows(_at_revision(repo, revision, path), f"{revision}:{path}"), new, key, tolerance)
        reports.append(TableReport(path, "changed", changes, len(new) - 1))
    return reports


def _outputs(cell: dict) -> list[str]:
    """The text a code cell's outputs show: streams, plain text and Markdown, in order, as lines."""
    lines = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            text = output.get("text", "")
        else:
            data = output.get("data", {})
            text = data.get("text/markdown") or data.get("text/plain") or ""
        lines += "".join(text).splitlines() if isinstance(text, list) else str(text).splitlines()
    return lines


@dataclass(frozen=True)
class CellOutputChange:
    index: int
    source: str  # the cell's first line of code
    removed: tuple[str, ...]
    added: tuple[str, ...]


def notebook_changes(old: dict, new: dict) -> list[CellOutputChange]:
    """The code cells (matched by position) whose outputs changed, with the lines only one side shows."""
    changes = []
    old_cells = [c for c in old.get("cells", []) if c.get("cell_type") == "code"]
    new_cells = [c for c in new.get("cells", []) if c.get("cell_type") == "code"]
    for index in range(max(len(old_cells), len(new_cells))):
        before = _outputs(old_cells[index]) if index < len(old_cells) else []
        after = _outputs(new_cells[index]) if index < len(new_cells) else []
        if before == after:
            continue
        cell = new_cells[index] if index < len(new_cells) else old_cells[index]
        source = "".join(cell.get("source", "")).strip().splitlines()
        gone, came = [l for l in before if l not in after], [l for l in after if l not in before]
        changes.append(CellOutputChange(index + 1, source[0] if source else "", tuple(gone), tuple(came)))
    return changes


def notebook_reports(repo: Path, revision: str) -> list[tuple[str, str, list[CellOutputChange]]]:
    reports = []
    for path, mark in sorted(_changed_paths(repo, revision, "notebooks/executed").items()):
        if not path.endswith(".ipynb"):
            continue
        if mark in "AD":
            reports.append((path, "new" if mark == "A" else "removed", []))
            continue
        try:
            old, new = json.loads(_at_revision(repo, revision, path)), json.loads(_working(repo, path))
            reports.append((path, "changed", notebook_changes(old, new)))
        except (json.JSONDecodeError, AttributeError, TypeError) as err:  # not JSON, or not a notebook's objects
            raise DiffError(f"{path}: not a notebook ({err})") from None
    return reports


@dataclass(frozen=True)
class NumberChange:
    id: str
    old: str  # display, empty when added
    new: str  # display, empty when removed


def _numbers(payload: dict) -> dict[str, dict]:
    found = {n["id"]: n for section in payload.get("sections", []) for n in section.get("numbers", [])}
    for entry in payload.get("audit", []):
        found[f"{entry['id']} (audit)"] = {"display": f"{entry['published']['display']} against "
                                           f"{entry['ours']['display']}: {entry['status']}", "value": entry["status"]}
    return found


def canonical_changes(old: dict, new: dict, tolerance: float) -> list[NumberChange]:
    """Every canonical number (and audit entry) by id whose value or display changed, added or removed."""
    before, after = _numbers(old), _numbers(new)
    changes = []
    for number_id in sorted(before.keys() | after.keys()):
        a, b = before.get(number_id), after.get(number_id)
        if a is None or b is None:
            changes.append(NumberChange(number_id, "" if a is None else a["display"], "" if b is None else b["display"]))
        elif a["display"] != b["display"] or a["value"] != b["value"]:
            if a["display"] == b["display"] and same_number(str(a["value"]), str(b["value"]), tolerance):
                continue
            if a["display"] == b["display"]:  # the value moved below the printed precision: show the values
                changes.append(NumberChange(number_id, f"{a['value']} ({a['display']})", f"{b['value']} ({b['display']})"))
            else:
                changes.append(NumberChange(number_id, a["display"], b["display"]))
    return changes


def canonical_report(repo: Path, revision: str, tolerance: float) -> tuple[list[NumberChange] | None, int]:
    """The canonical numbers' changes (None when canonical-numbers.json is as at ``revision``) and how many more
    numbers changed by less than the tolerance."""
    status = _changed_paths(repo, revision, CANONICAL_JSON).get(CANONICAL_JSON)
    if status is None:
        return None, 0
    try:
        old = json.loads(_at_revision(repo, revision, CANONICAL_JSON)) if status != "A" else {}
        new = json.loads(_working(repo, CANONICAL_JSON)) if status != "D" else {}
        changes = canonical_changes(old, new, tolerance)
        return changes, len(canonical_changes(old, new, 0.0)) - len(changes)
    except json.JSONDecodeError as err:
        raise DiffError(f"{CANONICAL_JSON}: not JSON ({err})") from None
    except (AttributeError, TypeError, KeyError) as err:  # JSON, but not the numbers' objects
        raise DiffError(f"{CANONICAL_JSON}: not the canonical numbers' format ({err!r})") from None


def figure_reports(repo: Path, revision: str) -> list[tuple[str, str]]:
    figures = _changed_paths(repo, revision, "figures")
    formats: dict[str, set[str]] = defaultdict(set)
    for path in figures:
        formats[str(PurePosixPath(path).with_suffix(""))].add(PurePosixPath(path).suffix.lstrip("."))
    present = {str(PurePosixPath(p).with_suffix("")) for p in _git(repo, "ls-files", "--", "figures").splitlines()}
    reports = []
    for figure in sorted(present | set(formats)):
        if figure in formats:
            marks = {figures[p] for p in figures if str(PurePosixPath(p).with_suffix("")) == figure}
            what = "new" if marks == {"A"} else "removed" if marks == {"D"} else "changed"
            reports.append((figure, f"{what} ({', '.join(sorted(formats[figure]))})"))
        else:
            reports.append((figure, "unchanged"))
    return reports


@dataclass(frozen=True)
class Report:
    revision: str
    tolerance: float
    tables: list[TableReport]
    notebooks: list[tuple[str, str, list[CellOutputChange]]]
    canonical: list[NumberChange] | None
    figures: list[tuple[str, str]]
    canonical_within_tolerance: int = 0  # canonical numbers that changed by less than the tolerance


def build(repo: Path, revision: str = "HEAD", tolerance: float = TOLERANCE) -> Report:
    """Everything that differs from ``revision`` in the working tree of ``repo``."""
    _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    canonical, within = canonical_report(repo, revision, tolerance)
    return Report(revision, tolerance, table_reports(repo, revision, tolerance), notebook_reports(repo, revision),
                  canonical, figure_reports(repo, revision), within)


def _tolerance_note(changes: TableChanges, tolerance: float) -> str:
    if not changes.within_tolerance:
        return ""
    return f" ({changes.within_tolerance} numeric cell{'s' if changes.within_tolerance != 1 else ''} within {tolerance:g} hidden)"


def _left_out(report: Report) -> tuple[int, int]:
    """How many artifacts the text leaves out as unchanged and as changed only within the tolerance."""
    unchanged = within = 0
    for table in report.tables:
        if table.status == "changed" and not table.changes.count:
            within += bool(table.changes.within_tolerance)
            unchanged += not table.changes.within_tolerance
    unchanged += sum(status == "changed" and not cells for _, status, cells in report.notebooks)
    if report.canonical == []:
        within += bool(report.canonical_within_tolerance)
        unchanged += not report.canonical_within_tolerance
    unchanged += sum(status == "unchanged" for _, status in report.figures)
    return unchanged, within


def _left_out_line(report: Report, shown: bool) -> str | None:
    """The line that counts what the text left out; ``nothing changed`` when it shows nothing."""
    unchanged, within = _left_out(report)
    tolerance = f"{within} within the tolerance {report.tolerance:g}"
    if not shown:
        return "nothing changed" + (f" ({tolerance}; --all shows every difference)" if within else "")
    if not unchanged + within:
        return None
    return (f"not shown: {unchanged} artifact{'s' if unchanged != 1 else ''} unchanged, {tolerance} (--all lists "
            "every artifact)")


def text_lines(report: Report, every: bool = False) -> list[str]:
    """The report as plain text: the artifacts that changed and a count of the rest, or with ``every`` each
    artifact compared."""
    lines = []
    for table in report.tables:
        if not every and table.status == "changed" and not table.changes.count:
            continue
        if table.status == "removed":
            lines.append(f"{table.path}: removed")
        elif table.status == "new":
            lines.append(f"{table.path}: new table, {table.rows} rows")
        else:
            changes = table.changes
            count = changes.count
            head = f"{count} change{'s' if count != 1 else ''}" if count else "same cells (formatting only)"
            keyed = f", rows keyed by {', '.join(changes.key)}" if changes.key and count else ""
            lines.append(f"{table.path}: {head}{keyed}{_tolerance_note(changes, report.tolerance)}")
            lines.extend(f"  {line}" for line in table_lines(changes))
    if every and not report.tables:
        lines.append(f"tables: no CSV differs from {report.revision}")
    for path, status, cells in report.notebooks:
        if not every and status == "changed" and not cells:
            continue
        if status != "changed":
            lines.append(f"{path}: {status}")
            continue
        lines.append(f"{path}: {len(cells)} cell{'s' if len(cells) != 1 else ''} with changed outputs"
                     if cells else f"{path}: same outputs")
        for cell in cells:
            lines.append(f"  cell {cell.index} ({cell.source}):")
            lines += [f"    - {line}" for line in cell.removed[:NOTEBOOK_LINES]]
            lines += [f"    + {line}" for line in cell.added[:NOTEBOOK_LINES]]
            hidden = max(0, len(cell.removed) - NOTEBOOK_LINES) + max(0, len(cell.added) - NOTEBOOK_LINES)
            if hidden:
                lines.append(f"    ({hidden} more lines)")
    if report.canonical is not None and (every or report.canonical):
        lines.append(f"{CANONICAL_JSON}: {len(report.canonical)} number{'s' if len(report.canonical) != 1 else ''} changed")
        for change in report.canonical:
            what = (f"added: {change.new}" if not change.old else f"removed (was {change.old})" if not change.new
                    else f"{change.old} -> {change.new}")
            lines.append(f"  {change.id}: {what}")
    lines += [f"{figure}: {status}" for figure, status in report.figures if every or status != "unchanged"]
    left_out = None if every else _left_out_line(report, bool(lines))
    return lines + ([left_out] if left_out else [])


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _folded(rows: list[str], what: str) -> list[str]:
    """Markdown table rows, the ones past MARKDOWN_OPEN folded into a <details> block."""
    if len(rows) <= MARKDOWN_OPEN + 2:
        return rows
    return [*rows[:MARKDOWN_OPEN + 2], "", f"<details><summary>{len(rows) - MARKDOWN_OPEN - 2} more {what}</summary>", "",
            *rows[:2], *rows[MARKDOWN_OPEN + 2:], "", "</details>"]


def _record_table(records: list[dict[str, str]], what: str) -> list[str]:
    columns = list(records[0])
    rows = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    rows += ["| " + " | ".join(_cell(r.get(c, "")) for c in columns) + " |" for r in records]
    return _folded(rows, what)


def markdown_lines(report: Report) -> list[str]:
    """The report as Markdown for a pull-request comment: a heading per area, a table per changed table."""
    lines = [f"## kvwall diff against `{report.revision}`", ""]
    changed_tables = [t for t in report.tables if t.status != "changed" or t.changes.count]
    lines += [f"### Tables ({len(changed_tables)} changed)", ""]
    if not changed_tables:
        lines += [f"No table's cells differ from `{report.revision}` (relative tolerance {report.tolerance:g}).", ""]
    for table in report.tables:
        if table.status != "changed":
            lines += [f"**`{table.path}`**: {table.status}" + (f", {table.rows} rows" if table.status == "new" else ""), ""]
            continue
        changes = table.changes
        if not changes.count:
            continue
        keyed = f", rows keyed by {', '.join(f'`{k}`' for k in changes.key)}" if changes.key else ""
        lines += [f"**`{table.path}`**: {changes.count} change{'s' if changes.count != 1 else ''}{keyed}"
                  f"{_tolerance_note(changes, report.tolerance)}", ""]
        for what, names in (("Columns added", changes.columns_added), ("Columns removed", changes.columns_removed)):
            if names:
                lines += [f"{what}: {', '.join(f'`{n}`' for n in names)}", ""]
        if changes.changed:
            rows = ["| Row | Column | Old | New |", "|---|---|---:|---:|"]
            for row in changes.changed:
                key = ", ".join(f"{n}={v}" for n, v in row.key)
                rows += [f"| {_cell(key)} | {_cell(c.column)} | {_cell(c.old)} | {_cell(c.new)} |" for c in row.cells]
            lines += [*_folded(rows, "changed cells"), ""]
        for what, records in (("Added", changes.added), ("Removed", changes.removed)):
            if records:
                lines += [f"{what} rows:", "", *_record_table(records, f"{what.lower()} rows"), ""]
    changed_notebooks = [n for n in report.notebooks if n[1] != "changed" or n[2]]
    lines += [f"### Notebooks ({len(changed_notebooks)} with changed outputs)", ""]
    for path, status, cells in changed_notebooks:
        if status != "changed":
            lines += [f"**`{path}`**: {status}", ""]
            continue
        lines += [f"**`{path}`**: {len(cells)} cell{'s' if len(cells) != 1 else ''} with changed outputs", ""]
        for cell in cells:
            shown = [f"- {l}" for l in cell.removed[:NOTEBOOK_LINES]] + [f"+ {l}" for l in cell.added[:NOTEBOOK_LINES]]
            lines += [f"<details><summary>cell {cell.index}: <code>{_cell(cell.source)[:80]}</code></summary>", "",
                      "```diff", *shown, "```", "", "</details>", ""]
    if report.canonical is not None:
        lines += [f"### CANONICAL-NUMBERS ({len(report.canonical)} changed)", ""]
        if report.canonical:
            rows = ["| Id | Old | New |", "|---|---:|---:|"]
            rows += [f"| `{c.id}` | {_cell(c.old) or 'added'} | {_cell(c.new) or 'removed'} |" for c in report.canonical]
            lines += [*_folded(rows, "numbers"), ""]
    else:
        lines += ["### CANONICAL-NUMBERS (unchanged)", ""]
    changed_figures = [(f, s) for f, s in report.figures if s != "unchanged"]
    lines += [f"### Figures ({len(changed_figures)} of {len(report.figures)} changed)", ""]
    lines += [f"- `{figure}`: {status}" for figure, status in changed_figures]
    return lines


def diff_lines(repo: Path, revision: str = "HEAD", tolerance: float = TOLERANCE, every: bool = False) -> list[str]:
    """The report as text lines."""
    return text_lines(build(repo, revision, tolerance), every)


def _relative_tolerance(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a relative tolerance (a number of at least 0)")
    return value


def run_command(args: argparse.Namespace) -> int:
    """Print the report; exit status 0, or 2 when git cannot answer or a file cannot be read."""
    tolerance = 0.0 if args.all else args.tolerance
    try:
        report = build(Path(args.repo), args.revision, tolerance)
    except DiffError as err:
        print(f"kvwall: diff: {err}", file=sys.stderr)
        return 2
    print("\n".join(markdown_lines(report) if args.markdown else text_lines(report, args.all)))
    return 0


def register(subparsers) -> None:
    """Add the `diff` subcommand to the kvwall command line."""
    parser = subparsers.add_parser(
        "diff", help="changed table rows, notebook outputs, canonical numbers and figures against a git revision",
        description="Compare the artifacts in the working tree with a git revision: for every table CSV under "
        "tables/ that differs, its rows aligned by the table's key columns, each changed row named by its key with "
        "every changed cell as 'column: old -> new', and the rows added and removed in full; the executed "
        "notebooks whose outputs changed; the canonical numbers that changed, by id; and for every figure under "
        "figures/, whether it changed. Numbers closer than the relative tolerance count as equal. Only what changed "
        "is listed, then the count of artifacts left out as unchanged or within the tolerance ('nothing changed' "
        "when none did). Run it after a rebuild to review what a change to config/ or src/ did; --markdown writes a "
        "pull-request comment.",
    )
    parser.add_argument("revision", nargs="?", default="HEAD", metavar="REV",
                        help="git revision to compare with (default: HEAD, the last commit)")
    parser.add_argument("--repo", default=".", metavar="DIR", help="repository root (default: .)")
    parser.add_argument("--tolerance", type=_relative_tolerance, default=TOLERANCE, metavar="REL",
                        help=f"relative difference below which two numbers are the same (default: {TOLERANCE:g}, "
                        "last-digit noise)")
    parser.add_argument("--all", action="store_true",
                        help="list every artifact compared, unchanged ones included, and every difference (tolerance 0)")
    parser.add_argument("--markdown", action="store_true", help="write Markdown for a pull-request comment")
    parser.set_defaults(func=run_command)
