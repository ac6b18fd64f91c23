"""Stamps of checks already passed: an empty file in a stamp folder, named by a digest of everything the check read,
so that a check whose inputs did not change is not run again and the workflow's check before every build stays quick
(the serving measurements against their schema, kvwall.inputs.serving; the points below their bound,
kvwall.cli.front_door). A stamp folder of None checks every time."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable


def stamp_name(parts: Iterable[bytes], prefix: str = "") -> str:
    """The name of the stamp of a check that read ``parts``, in order."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return prefix + digest.hexdigest()


def passed(stamp_dir: str | Path | None, name: str) -> bool:
    """Whether ``stamp_dir`` holds the stamp ``name``."""
    return stamp_dir is not None and (Path(stamp_dir) / name).is_file()


def mark_passed(stamp_dir: str | Path | None, name: str) -> None:
    """Leave the stamp ``name`` in ``stamp_dir`` (nothing without one)."""
    if stamp_dir is not None:
        Path(stamp_dir).mkdir(parents=True, exist_ok=True)
        (Path(stamp_dir) / name).touch()
