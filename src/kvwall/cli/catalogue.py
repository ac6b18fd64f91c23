"""`kvwall import` and `kvwall list`, and the model a `--hf-config` file describes."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from kvwall.cli.models_file import add_entry
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.hf_import import ImportRefused, document_text, load_imported, read_config
from kvwall.inputs.loader import SpecError
from kvwall.inputs.plausibility import model_findings
from kvwall.model.footprint import kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.units import DTYPE_BYTES, GB

#: A catalogue id (the safe-name pattern of common.schema.yaml).
SAFE_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def _utf8(text: str) -> bool:
    """Whether ``text`` is text: Python keeps a command-line byte that is not UTF-8 as a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def import_configs(catalog: Catalog, paths, into: str | None, params_nominal: float | None, nominal_source: str | None,
                   hf_id: str | None, model_id: str | None) -> int:
    """Write each config's models.yaml entry to stdout, or append it to ``into``; 2 on the first refusal."""
    if params_nominal is not None and not nominal_source:
        print("kvwall: --params-nominal: give its source with --params-source (the model card's address)", file=sys.stderr)
        return 2
    if len(paths) > 1 and (params_nominal is not None or hf_id or model_id):
        print("kvwall: --params-nominal, --hf-id and --id name one model: import one config at a time", file=sys.stderr)
        return 2
    for option, text in (("--params-source", nominal_source), ("--hf-id", hf_id)):
        if text is not None and not _utf8(text):
            print(f"kvwall: {option}: not UTF-8 text (a byte the command line could not decode)", file=sys.stderr)
            return 2
    if model_id is not None and not SAFE_ID.fullmatch(model_id):
        print(f"kvwall: --id {model_id!r}: not a catalogue id (lowercase letters, digits, '.', '_' and '-', "
              "at most 64)", file=sys.stderr)
        return 2
    if into is not None and params_nominal is None:
        print(f"kvwall: {paths[0]}: params_nominal: a catalogue entry needs the published count: give --params-nominal "
              "and --params-source", file=sys.stderr)
        return 2
    written = []
    for path in paths:
        try:
            imported = read_config(path, hf_id=hf_id, model_id=model_id)
        except ImportRefused as err:
            print(f"kvwall: {err}", file=sys.stderr)
            return 2
        _warn(path, imported)
        model = load_imported(catalog, imported, params_nominal, nominal_source, path)
        for finding in model_findings(model, str(path), lambda m: imported.params_derived):
            print(f"kvwall: {finding}", file=sys.stderr)
        written.append((imported, params_nominal, nominal_source))
    if into is None:
        sys.stdout.write(document_text(written))
    else:
        add_entry(Path(into), *written[0], catalog)
    return 0


def _warn(path, imported) -> None:
    """The one warning of a config whose architecture kvwall does not name, read by convention."""
    for warning in imported.warnings:
        print(f"kvwall: warning: {path}: {warning}", file=sys.stderr)


def with_hf_config(catalog: Catalog, path: str) -> tuple[Catalog, str]:
    """The catalogue with the model of one config.json, its parameter count derived (no nominal count given)."""
    try:
        imported = read_config(path)
    except ImportRefused as err:
        raise SpecError(err.file, err.key, err.reason) from None
    _warn(path, imported)
    model = load_imported(catalog, imported, None, None, path)
    for finding in model_findings(model, path, lambda m: imported.params_derived):
        print(f"kvwall: {finding}", file=sys.stderr)
    return replace(catalog, models=MappingProxyType({**catalog.models, model.id: model})), model.id


def list_catalogue(catalog: Catalog, what: str) -> int:
    """Ids with names and key numbers: models (layer kinds, KV bytes per token), devices (HBM), formats (bytes)."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    if what == "models":
        print(f"{'id':<22} {'name':<28} {'attention':<14} {'KV B/token':>11} {'beyond W':>9} {'params':>8}  hf_id")
        for m in catalog.models.values():
            print(f"{m.id:<22} {m.name:<28} {m.attention.label:<14} {kv_bytes_per_token(m, w_kv):>11,.0f} "
                  f"{kv_bytes_per_token_beyond_window(m, w_kv):>9,.0f} {m.params_nominal / 1e9:>7.1f}B  {m.hf_id or '-'}")
    elif what == "devices":
        print(f"{'id':<14} {'name':<30} {'HBM GB':>7} {'TB/s':>6}")
        for d in catalog.devices.values():
            print(f"{d.id:<14} {d.name:<30} {d.hbm_capacity / GB:>7.0f} {d.hbm_bandwidth / 1e12:>6.2f}")
    else:
        for name, size in DTYPE_BYTES.items():
            print(f"{name:<6} {size:g} B/element")
    return 0
