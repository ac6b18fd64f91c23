"""`kvwall import` and `kvwall list`: their parsers and what they print."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kvwall.cli import request
from kvwall.cli.hf_config import warn_convention
from kvwall.cli.models_file import add_entry
from kvwall.cli.options import catalogue_options, parameter_count
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.errors import ImportRefused
from kvwall.inputs.hf_import import document_text, load_imported, read_config
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
        warn_convention(path, imported)
        model = load_imported(catalog, imported, params_nominal, nominal_source, path)
        for finding in model_findings(model, str(path), lambda m: imported.params_derived):
            print(f"kvwall: {finding}", file=sys.stderr)
        written.append((imported, params_nominal, nominal_source))
    if into is None:
        sys.stdout.write(document_text(written))
    else:
        add_entry(Path(into), *written[0], catalog)
    return 0


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


def register(subparsers) -> None:
    """Add `kvwall import` and `kvwall list` to the command's subparsers."""
    p = subparsers.add_parser(
        "import", parents=[catalogue_options()], help="a published config.json as a config/models.yaml entry (stdout, or --into)",
        description="Read a Hugging Face config.json (and a quantized checkpoint's hf_quant_config.json) and write "
        "the model entry in config/models.yaml's format, every value with the config key it came from as its "
        "source; a config kvwall cannot model is refused with the file, the key and the reason (exit status 2).")
    p.add_argument("paths", nargs="+", metavar="PATH", help="config.json file(s), named org--model_config.json or with --hf-id")
    p.add_argument("--into", metavar="FILE", help="append the entry to this models file (config/models.yaml) instead")
    p.add_argument("--params-nominal", type=parameter_count, metavar="COUNT",
                   help="the parameter count the model card publishes (checked against the derived count)")
    p.add_argument("--params-source", metavar="TEXT", help="where --params-nominal is published (model card address)")
    p.add_argument("--hf-id", help="Hugging Face id org/model when the file name does not carry it")
    p.add_argument("--id", dest="model_id", help="catalogue id (default: the model name lowercased)")
    p.set_defaults(func=lambda a: import_configs(request.catalog_of(a), a.paths, a.into, a.params_nominal,
                                                 a.params_source, a.hf_id, a.model_id))

    p = subparsers.add_parser(
        "list", parents=[catalogue_options()], help="catalogue ids with names and key numbers",
        description="The ids of the catalogue's models, devices or storage formats, with their names and key numbers "
        "(the checkout's config/ when present, else the catalogue shipped with kvwall).")
    p.add_argument("what", choices=("models", "devices", "formats"), help="what to list")
    p.set_defaults(func=lambda a: list_catalogue(request.catalog_of(a), a.what))
