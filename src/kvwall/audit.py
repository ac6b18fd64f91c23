"""The reproduction audit: every number the paper prints that kvwall derives, printed against ours.

Ours is read from the derived table artifact and formatted with the paper's print format; a cell matches when the
two texts are equal. A printed number that does not match must be listed, with its reason, under ``mismatches``
in config/paper/printed.yaml; an unlisted mismatch, or a listed one that now matches, is an AuditFailure.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from kvwall.formats import format_value
from kvwall.render import Column, Table, keyed

MATCH, MISMATCH = "match", "mismatch"


class AuditFailure(AssertionError):
    """Printed numbers that stopped matching, or documented mismatches that no longer hold."""


@dataclass(frozen=True)
class AuditedTable:
    """A derived artifact as the audit sees it: its columns (for formats) and its rows as read back from CSV."""

    columns: Mapping[str, Column]
    rows: tuple[dict, ...]


def read_artifact(artifact: str, columns: Mapping[str, Column], tables_dir: str | Path = "tables") -> AuditedTable:
    """A derived artifact's committed CSV, with the columns (and so the print formats) of its builder."""
    with open(Path(tables_dir) / f"{artifact}.csv", newline="", encoding="utf-8") as handle:
        return AuditedTable(columns, tuple(csv.DictReader(handle)))


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _find_row(table: AuditedTable, key: list[str], key_value: str, artifact: str) -> dict:
    wanted = key_value.split("/")
    for row in table.rows:
        if [row[k] for k in key] == wanted:
            return row
    raise KeyError(f"{artifact}: no row with {dict(zip(key, wanted))}")


def _format_name(column: Column, row: dict) -> str:
    return row["format"] if column.fmt == "row" else column.fmt


def audit(printed: Mapping, load: Callable[[str], AuditedTable]) -> list[dict]:
    """One audit row per printed number: id, where, artifact, column, printed, ours, ours at printed precision, status, reason."""
    documented = dict(printed["mismatches"])
    results = []
    for group in printed["groups"]:
        table = load(group["artifact"])
        for key_value, cells in group["cells"].items():
            row = _find_row(table, group["key"], key_value, group["artifact"])
            for column_name, cell in cells.items():
                column = table.columns[column_name]
                spec = cell if isinstance(cell, dict) else {"printed": cell, "format": _format_name(column, row)}
                ours = _number(row[column_name])
                ours_text = format_value(ours, spec["format"]) + spec.get("suffix", "")
                audit_id = f"{group['where']}/{key_value}/{column_name}"
                status = MATCH if ours_text == spec["printed"] else MISMATCH
                results.append({
                    "id": audit_id, "where": group["where"], "artifact": group["artifact"], "row": key_value,
                    "column": column_name,
                    "printed": spec["printed"], "ours": ours, "ours_at_printed": ours_text, "status": status,
                    "reason": documented.pop(audit_id, "") if status == MISMATCH else "",
                })
    problems = [f"{r['id']}: printed {r['printed']!r}, ours {r['ours_at_printed']!r} ({r['ours']!r})"
                for r in results if r["status"] == MISMATCH and not r["reason"]]
    problems += [f"{audit_id}: documented as a mismatch but it matches (or no such number); remove it" for audit_id in documented]
    if problems:
        raise AuditFailure("reproduction audit failed:\n  " + "\n  ".join(problems))
    return results


@keyed("id")
def audit_table(results: list[dict]) -> Table:
    """The audit as a side-by-side table: the printed (reported) number beside ours (derived)."""
    matched = sum(r["status"] == MATCH for r in results)
    return Table(
        id="reproduction",
        title="Reproduction audit: the SoK's printed numbers against kvwall's derivations",
        caption=f"{len(results)} printed numbers: {matched} match at the paper's printed precision, "
        f"{len(results) - matched} differ for the documented reason given. Printed values are the paper's (reported); "
        "ours are read from the derived tables (full precision, then formatted as the paper prints).",
        columns=(
            Column("id", "id", printed=False),
            Column("where", "Where"),
            Column("artifact", "Artifact", printed=False),
            Column("row", "Row"),
            Column("column", "Column"),
            Column("printed", "Printed", "reported"),
            Column("ours", "Ours (full precision)", "derived", "full"),
            Column("ours_at_printed", "Ours as printed", "derived"),
            Column("status", "Status", "derived"),
            Column("reason", "Reason", "derived"),
        ),
        rows=tuple(results),
    )
