"""Reported values: other work's published results, each with its citation (config/reported/*.yaml).

They are quoted beside derived numbers, never used as inputs to a derivation. A number computed from reported
values (a ratio of two published slopes) is derived, and names the reported values it used.
"""

from __future__ import annotations

from pathlib import Path

from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import checked_base, read_yaml, validate
from kvwall.inputs.specs import Reported


def load_reported(folder: str | Path = "config/reported") -> dict[str, Reported]:
    """Every reported value of every file in ``folder``, keyed by id; an id given in two files is an error."""
    values: dict[str, Reported] = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        document = read_yaml(path)
        validate(document, "reported", path)
        for value_id, entry in document["values"].items():
            key = f"values.{value_id}"
            if value_id in values:
                raise SpecError(path, key, f"id already defined in {values[value_id].file}")
            if entry["source"] not in document["sources"]:
                raise SpecError(path, f"{key}.source", f"source {entry['source']!r} is not listed under 'sources'")
            number = entry.get("value")
            values[value_id] = Reported(
                id=value_id,
                value=None if number is None else checked_base(number, entry["unit"], None, path, key),
                given=number,
                unit=entry.get("unit", ""),
                text=entry.get("text"),
                source=document["sources"][entry["source"]],
                note=entry.get("note", ""),
                file=str(path),
            )
    return values
