"""Tables as data, and deterministic writers: CSV at full precision, Markdown and LaTeX as the paper prints them.

A Table holds key columns (what a row is about: a model id, a batch) and value columns, each value column tagged
with exactly one evidence class. A table written under ``tables/<class>/`` has value columns of that class only;
a side-by-side view (``tables/paper/``) marks every column's class in its header. Its ``key`` names the columns that
tell one row from another, declared where the table is built (``keyed``); a table is written only with a key that
holds, and ``kvwall diff`` aligns and names rows by it.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import math
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from kvwall.formats import format_value
from kvwall.inputs.errors import SpecError
from kvwall.inputs.specs import EVIDENCE_CLASSES

#: Folders of side-by-side views, whose columns each carry their evidence class in the header.
SIDE_BY_SIDE = ("paper", "audit")


@dataclass(frozen=True)
class Column:
    """One column: CSV name, printed label, evidence class (None for a key column) and printed format."""

    name: str
    label: str
    evidence: str | None = None
    fmt: str = "text"
    unit: str = ""
    printed: bool = True  # False: kept in the CSV (an id for joins and diffs), left out of Markdown and LaTeX

    def format(self, row: dict) -> str:
        """This column's cell of ``row`` as printed; fmt ``row`` takes the format named in the row's ``format``."""
        fmt = row["format"] if self.fmt == "row" else self.fmt
        return format_value(_plain(row.get(self.name)), fmt)

    def __post_init__(self):
        if self.evidence is not None and self.evidence not in EVIDENCE_CLASSES:
            raise ValueError(f"column {self.name!r}: unknown evidence class {self.evidence!r}")


@dataclass(frozen=True)
class Table:
    """A table artifact: its id (file stem), title, caption, columns and rows (dicts keyed by column name)."""

    id: str
    title: str
    caption: str
    columns: tuple[Column, ...]
    rows: tuple[dict, ...]
    sources: tuple[str, ...] = field(default_factory=tuple)
    key: tuple[str, ...] = ()  # the columns that tell one row from another (set by ``keyed``)

    def __post_init__(self):
        names = {c.name for c in self.columns}
        unknown = [name for name in self.key if name not in names]
        if unknown:
            raise ValueError(f"table {self.id!r}: key columns {unknown} are not columns of the table")

    def check_key(self) -> None:
        """ValueError unless a key is declared and no two rows share its values."""
        if not self.key:
            raise ValueError(f"table {self.id!r} declares no key columns (kvwall.render.keyed)")
        seen: dict[tuple, int] = {}
        for i, row in enumerate(self.rows):
            values = tuple(_csv_cell(_plain(row.get(name))) for name in self.key)
            if values in seen:
                raise ValueError(f"table {self.id!r}: rows {seen[values]} and {i} share the key "
                                 f"{dict(zip(self.key, values))}")
            seen[values] = i

    @property
    def evidence(self) -> str:
        """The single evidence class of the value columns; ValueError if they mix classes."""
        classes = {c.evidence for c in self.columns if c.evidence is not None}
        if len(classes) != 1:
            raise ValueError(f"table {self.id!r} mixes evidence classes {sorted(classes)} or has none")
        return classes.pop()

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


def keyed(*key: str) -> Callable[[Callable[..., Table]], Callable[..., Table]]:
    """Declare the key columns of the Table a builder returns; the builder's ``key`` attribute names them without
    building anything (what ``kvwall diff`` reads)."""

    def declare(build: Callable[..., Table]) -> Callable[..., Table]:
        @functools.wraps(build)
        def build_keyed(*args, **kwargs) -> Table:
            return dataclasses.replace(build(*args, **kwargs), key=key)

        build_keyed.key = key
        return build_keyed

    return declare


def _csv_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if not value.is_integer() or abs(value) >= 1e16 else str(int(value))
    return str(value)


def to_csv(table: Table) -> str:
    """CSV with full-precision numbers (shortest round-trip repr), one header row of column names."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    for row in table.rows:
        writer.writerow([_csv_cell(_plain(row.get(c.name))) for c in table.columns])
    return out.getvalue()


def _plain(value: Any) -> Any:
    """numpy scalars to Python scalars."""
    return value.item() if hasattr(value, "item") else value


def _header(column: Column, mark_classes: bool) -> str:
    label = column.label
    if mark_classes and column.evidence is not None:
        label = f"{label} [{column.evidence}]"
    return label


_HTML_OPENINGS = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)")


def markdown_escape(text: str) -> str:
    """Text safe in a Markdown table cell: no cell break (``|``), no line break, and nothing a renderer takes for
    raw HTML (a ``<`` that opens a tag, comment or declaration; an ``&`` that opens an entity), as latex_escape does
    for LaTeX. A ``<`` before a digit or a space (``<0.1``, ``w_q < w``) stays as written."""
    text = " ".join(text.splitlines()).replace("|", "\\|")
    return _HTML_OPENINGS.sub(lambda m: "&lt;" if m.group() == "<" else "&amp;", text)


def printed_cells(table: Table) -> list[list[str]]:
    """Each row's printed cells (Column.format), in the order of the printed columns: what Markdown and LaTeX show."""
    shown = [c for c in table.columns if c.printed]
    return [[c.format(row) for c in shown] for row in table.rows]


def to_markdown(table: Table, mark_classes: bool = False, cells: list[list[str]] | None = None) -> str:
    """Markdown table formatted as the paper prints it, under a heading, caption and evidence line; ``cells``: its
    printed_cells, where already worked out."""
    lines = [f"# {table.title}", "", table.caption, ""]
    if mark_classes:
        classes = sorted({c.evidence for c in table.columns if c.evidence})
        lines += [f"Side-by-side view: each column is marked with its evidence class ({', '.join(classes)}).", ""]
    else:
        lines += [f"Evidence class: **{table.evidence}**.", ""]
    if table.sources:
        lines += ["Sources: " + "; ".join(map(markdown_escape, table.sources)) + ".", ""]
    shown = [c for c in table.columns if c.printed]
    lines.append("| " + " | ".join(markdown_escape(_header(c, mark_classes)) for c in shown) + " |")
    lines.append("|" + "|".join("---" if c.evidence is None else "---:" for c in shown) + "|")
    for row in printed_cells(table) if cells is None else cells:
        lines.append("| " + " | ".join(map(markdown_escape, row)) + " |")
    return "\n".join(lines) + "\n"


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "×": r"$\times$",
    "σ": r"$\sigma$",
    "≈": r"$\approx$",
    "≤": r"$\le$",
    "—": "---",
    "→": r"$\rightarrow$",
}


_LATEX_TRANSLATION = str.maketrans(_LATEX_ESCAPES)


def latex_escape(text: str) -> str:
    return text.translate(_LATEX_TRANSLATION)


def to_latex(table: Table, mark_classes: bool = False, cells: list[list[str]] | None = None) -> str:
    """A booktabs table: caption, label tab:<id>, right-aligned value columns; ``cells``: its printed_cells, where
    already worked out."""
    shown = [c for c in table.columns if c.printed]
    spec = "".join("l" if c.evidence is None else "r" for c in shown)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(table.title)}. {latex_escape(table.caption)}}}",
        rf"\label{{tab:{table.id}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(_header(c, mark_classes)) for c in shown) + r" \\",
        r"\midrule",
    ]
    for row in printed_cells(table) if cells is None else cells:
        lines.append(" & ".join(map(latex_escape, row)) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def replace_atomically(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then move it into place: an interrupted or failed write
    leaves ``path`` as it was, never half written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text(path: Path, content: str) -> None:
    """Write text with Unix newlines, creating parent folders, atomically."""
    replace_atomically(path, lambda temporary: temporary.write_text(content, encoding="utf-8", newline="\n"))


def write_table(table: Table, outputs: Sequence[str | Path], folder_class: str) -> None:
    """Write a table to each output path by suffix (.csv, .md, .tex) under the folder of its evidence class.

    ``folder_class`` is the class the destination folder holds; ``paper`` and ``audit`` (SIDE_BY_SIDE) are
    side-by-side views, whose columns each carry their class in the header.
    """
    mark_classes = folder_class in SIDE_BY_SIDE
    table.check_key()
    if not mark_classes and table.evidence != folder_class:
        raise ValueError(f"table {table.id!r} holds {table.evidence} values and cannot be written under tables/{folder_class}/")
    cells = printed_cells(table)
    writers = {".csv": lambda t: to_csv(t), ".md": lambda t: to_markdown(t, mark_classes, cells),
               ".tex": lambda t: to_latex(t, mark_classes, cells)}
    for output in outputs:
        path = Path(output)
        write_text(path, writers[path.suffix](table))


# ---- the file a command was asked to write: never an input or a tracked file, written whole or not at all -------

def tracked(path: Path) -> bool:
    """Whether git tracks ``path`` in the repository that holds it (False outside one, or without git)."""
    try:
        done = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def checked_output(path: str | Path, option: str, inputs: Iterable[str | Path] = ()) -> Path:
    """``path`` as an output of ``option``: a file in an existing folder, none of ``inputs``, not tracked by git."""
    path = Path(path)
    try:
        return _checked(path, option, inputs)
    except OSError as err:  # a name longer than the file system takes, a folder that cannot be searched
        raise SpecError(path, option, f"cannot be written ({err.strerror})") from None


def _checked(path: Path, option: str, inputs: Iterable[str | Path]) -> Path:
    if path.is_dir():
        raise SpecError(path, option, "is a folder: name a file to write")
    if path.exists() and not path.is_file():
        raise SpecError(path, option, "is not a regular file (a device, FIFO or socket is never replaced)")
    if not path.parent.is_dir():
        raise SpecError(path, option, f"folder {str(path.parent)!r} does not exist")
    for given in inputs:
        if path.resolve() == Path(given).resolve():
            raise SpecError(path, option, "is an input of this command: name another file to write")
    if path.exists() and tracked(path):
        raise SpecError(path, option, "is a file under version control: name a file outside the project's own")
    return path


def write_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it: never half written."""
    try:
        replace_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8", newline="\n"))
    except OSError as err:
        raise SpecError(path, "", f"cannot be written ({err.strerror})") from None
