"""A table artifact as the report shows it: its Markdown rendered, and a long table cut to its first rows with a
summary of every column read from its CSV, the full CSV a link.

Rows beyond the preview stay in the page (hidden, found by the table's filter) up to EMBEDDED_ROWS; a longer table
keeps only its preview, and its CSV holds the rest.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kvwall.inputs.reader import read_text
from kvwall.report.pieces import markdown

#: Tables with more rows than this are shown as a preview and a summary.
LONG_TABLE = 50
#: Rows a long table shows before its filter or 'show all'.
PREVIEW_ROWS = 20
#: The most rows a long table keeps in the page; past it only the preview is kept.
EMBEDDED_ROWS = 500
#: Most frequent values a text column's summary names.
COMMON_VALUES = 4

_ROW = re.compile(r"<tr>.*?</tr>\s*", re.S)


@dataclass(frozen=True)
class ColumnSummary:
    """What a column of a long table holds: its range (numbers) or its distinct values (text)."""

    name: str
    text: str


@dataclass(frozen=True)
class ShownTable:
    """The HTML of one table artifact with how many of its rows the page holds and shows."""

    html: str
    rows: int
    embedded: int
    shown: int
    summary: tuple[ColumnSummary, ...]

    @property
    def long(self) -> bool:
        return self.rows > LONG_TABLE


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def column_summaries(csv_text: str) -> tuple[ColumnSummary, ...]:
    """Per column of a CSV: 'min to max' of a numeric column (its blanks counted), else its distinct values with the
    most frequent named."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    header, body = rows[0], rows[1:]
    found = []
    for i, name in enumerate(header):
        cells = [row[i] for row in body if i < len(row)]
        filled = [c for c in cells if c != ""]
        blanks = len(cells) - len(filled)
        blank_note = f"; {blanks:,} blank" if blanks else ""
        numbers = [_number(c) for c in filled]
        if filled and all(n is not None for n in numbers):
            found.append(ColumnSummary(name, f"{min(numbers):.4g} to {max(numbers):.4g}{blank_note}"))
            continue
        common = Counter(filled).most_common(COMMON_VALUES)
        named = ", ".join(f"{value} ({count:,})" for value, count in common)
        more = ", ..." if len(set(filled)) > COMMON_VALUES else ""
        found.append(ColumnSummary(name, f"{len(set(filled)):,} distinct: {named}{more}{blank_note}"))
    return tuple(found)


def shown_table(markdown_path: Path, csv_path: Path) -> ShownTable:
    """The table artifact at ``markdown_path`` as HTML; long, its rows past PREVIEW_ROWS hidden (or, past
    EMBEDDED_ROWS, left out) and its columns summarized from ``csv_path``."""
    html = markdown(markdown_path)
    head, _, rest = html.partition("<tbody>")
    body, _, tail = rest.partition("</tbody>")
    rows = _ROW.findall(body)
    if len(rows) <= LONG_TABLE:
        table_html = html.replace("<table>", '<table class="data">', 1)
        return ShownTable(table_html, len(rows), len(rows), len(rows), ())
    embedded = rows if len(rows) <= EMBEDDED_ROWS else rows[:PREVIEW_ROWS]
    kept = embedded[:PREVIEW_ROWS] + [row.replace("<tr>", "<tr hidden>", 1) for row in embedded[PREVIEW_ROWS:]]
    head = head.replace("<table>", f'<table class="data" data-preview="{PREVIEW_ROWS}" data-rows="{len(rows)}">', 1)
    table_html = f"{head}<tbody>\n{''.join(kept)}</tbody>{tail}"
    return ShownTable(table_html, len(rows), len(embedded), PREVIEW_ROWS, column_summaries(read_text(csv_path)))
