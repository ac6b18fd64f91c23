"""Measured records on disk: JSON with sorted keys, checked against kvwall/inputs/schemas/measured_record.schema.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from kvwall.inputs.loader import validate
from kvwall.inputs.reader import read_json
from kvwall.measure.fingerprint import platform_slug

#: Where committed records live; the default build renders every record here.
RECORDS_DIR = Path("data/measured")
#: Where a --quick run writes by default: not a record to commit.
QUICK_DIR = Path("logs/measure")


def default_path(record: dict) -> Path:
    """data/measured/<platform-slug>-<date>.json (a --quick run: logs/measure/<slug>-<date>-quick.json)."""
    stem = f"{platform_slug(record['platform'])}-{record['date']}"
    return QUICK_DIR / f"{stem}-quick.json" if record["mode"] == "quick" else RECORDS_DIR / f"{stem}.json"


def profile_path(record: dict) -> Path:
    """data/measured/profiles/<platform-slug>-<date>-<model>.json (a --quick run: under logs/measure/)."""
    stem = f"{platform_slug(record['platform'])}-{record['date']}-{record['model']['id']}"
    return QUICK_DIR / f"{stem}-profile-quick.json" if record["mode"] == "quick" else RECORDS_DIR / "profiles" / f"{stem}.json"


def free_path(path: Path) -> Path:
    """``path``, or ``<stem>-2``, ``<stem>-3``, ... beside it when taken: a second run the same day keeps the first."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def to_json(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _write(record: dict, path: str | Path, schema: str) -> Path:
    validate(record, schema, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(record), encoding="utf-8", newline="\n")
    return path


def _read(path: str | Path, schema: str) -> dict:
    record = read_json(path)  # the hardened reader: regular files under its size limit, strict JSON
    validate(record, schema, str(path))
    return record


def write_record(record: dict, path: str | Path) -> Path:
    """Validate ``record`` and write it to ``path``."""
    return _write(record, path, "measured_record")


def write_profile(record: dict, path: str | Path) -> Path:
    """Validate a profile record (kvwall/inputs/schemas/profile_record.schema.yaml) and write it to ``path``."""
    return _write(record, path, "profile_record")


def read_profile(path: str | Path) -> dict:
    """One profile record, read by kvwall.inputs.reader and validated."""
    return _read(path, "profile_record")


def read_record(path: str | Path) -> dict:
    """One record, read by kvwall.inputs.reader and validated."""
    return _read(path, "measured_record")


def read_records(paths: Iterable[str | Path]) -> list[tuple[str, dict]]:
    """(file stem, record) for each path, in path order."""
    return [(Path(path).stem, read_record(path)) for path in sorted(map(str, paths))]
