"""The model a published config.json describes, added to the catalogue for `--hf-config PATH`: its entry read as
`kvwall import` reads it (kvwall.inputs.hf_import), its parameter count derived (no nominal count given)."""

from __future__ import annotations

import sys
from dataclasses import replace
from types import MappingProxyType

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.errors import ImportRefused, SpecError
from kvwall.inputs.hf_import import load_imported, read_config
from kvwall.inputs.plausibility import model_findings


def warn_convention(path, imported) -> None:
    """The one warning of a config whose architecture kvwall does not name, read by convention."""
    for warning in imported.warnings:
        print(f"kvwall: warning: {path}: {warning}", file=sys.stderr)


def with_hf_config(catalog: Catalog, path: str) -> tuple[Catalog, str]:
    """The catalogue with the model of one config.json, its parameter count derived (no nominal count given)."""
    try:
        imported = read_config(path)
    except ImportRefused as err:
        raise SpecError(err.file, err.key, err.reason) from None
    warn_convention(path, imported)
    model = load_imported(catalog, imported, None, None, path)
    for finding in model_findings(model, path, lambda m: imported.params_derived):
        print(f"kvwall: {finding}", file=sys.stderr)
    return replace(catalog, models=MappingProxyType({**catalog.models, model.id: model})), model.id
