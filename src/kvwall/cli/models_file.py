"""An imported model added to a block-style models file (config/models.yaml's format): its sources at the end of the
``sources:`` block, its entry at the end of the file, every text written by a YAML emitter. The new file is read
back through the loader and replaces the old one only where it holds exactly the old entries and sources plus the
new ones; otherwise the old file stays as it was."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import yaml

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.hf_import import ImportedModel, entry_lines
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import load_user_specs
from kvwall.inputs.reader import parse_yaml, read_text


def quoted(text: str) -> str:
    """``text`` as one double-quoted YAML scalar on one line (quotes, backslashes and newlines escaped)."""
    return yaml.safe_dump(text, default_style='"', width=float("inf"), allow_unicode=True).rstrip("\n")


def _key(name: str) -> str:
    """A source id as a key: plain where it is a safe name, as every id of the catalogue is, else quoted."""
    return name if re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name) else quoted(name)


def _block(document, lines: list[str], file: Path) -> None:
    if document is None:
        raise SpecError(file, "", "the file is empty: --into names a models file (format of config/models.yaml)")
    if not isinstance(document, dict) or "models" not in document:
        raise SpecError(file, "models", "missing: --into names a models file (format of config/models.yaml)")
    for section in ("sources", "models"):
        if not isinstance(document.get(section) or {}, dict):
            raise SpecError(file, section, "must be a mapping of ids (format of config/models.yaml)")
    for section in ("sources:", "models:"):
        if section not in lines:
            raise SpecError(file, section[:-1], "not in block style (the section on a line of its own): edit it by hand")


def added_text(target: Path, imported: ImportedModel, params_nominal: float, nominal_source: str) -> tuple[str, dict]:
    """The new text of ``target`` and what it must read back as."""
    text = read_text(target)
    document = parse_yaml(text, target)
    lines = text.rstrip("\n").split("\n")
    _block(document, lines, target)
    models = document["models"] or {}
    if imported.model_id in models:
        raise SpecError(target, f"models.{imported.model_id}", "already in the catalogue (give another --id)")
    sources = {**imported.sources, f"{imported.model_id}.params-nominal": nominal_source}
    clash = sorted(set(sources) & set(document.get("sources") or {}))
    if clash:
        raise SpecError(target, f"sources.{clash[0]}", "already listed (give another --id)")
    lines[lines.index("models:"):lines.index("models:")] = [f"  {_key(sid)}: {quoted(value)}" for sid, value in sources.items()]
    lines += entry_lines(imported, params_nominal)
    expected = {"sources": {**(document.get("sources") or {}), **sources}, "models": [*models, imported.model_id]}
    return "\n".join(lines) + "\n", expected


def _read_back(written: Path, target: Path, expected: dict, catalog: Catalog) -> None:
    """Refuse ``written`` unless it loads and holds exactly ``expected``'s sources and model ids."""
    try:
        document = parse_yaml(read_text(written), target)
        load_user_specs(written, replace(catalog, models=MappingProxyType({})))
    except SpecError as err:
        raise SpecError(target, err.key, f"the entry would not load ({err.reason}): the file is unchanged") from None
    if document.get("sources") != expected["sources"] or list(document["models"]) != expected["models"]:
        raise SpecError(target, "models", "the entry would not read back as written: the file is unchanged")


def add_entry(target: Path, imported: ImportedModel, params_nominal: float, nominal_source: str, catalog: Catalog) -> None:
    """Add ``imported`` to ``target``, replacing the file atomically once the new text reads back as intended."""
    text, expected = added_text(target, imported, params_nominal, nominal_source)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        temporary.write_text(text, encoding="utf-8", newline="\n")
        os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        _read_back(temporary, target, expected, catalog)
        os.replace(temporary, target)
    except OSError as err:
        raise SpecError(target, "", f"cannot be written ({err.strerror})") from None
    finally:
        temporary.unlink(missing_ok=True)
