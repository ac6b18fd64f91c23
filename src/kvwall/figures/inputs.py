"""What a figure is drawn from: the catalogue, the workflow's selections and the reported values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Reported
from kvwall.inputs.views import View


@dataclass(frozen=True)
class FigureInputs:
    """The typed inputs of every figure; reported values are quoted beside derived ones, never fed into them."""

    catalog: Catalog
    selections: Mapping
    reported: Mapping[str, Reported]

    @classmethod
    def load(cls, config: Mapping) -> "FigureInputs":
        """Read the catalogue of ``config["config_dir"]``, resolve the selections of ``config`` and the reported values."""
        from kvwall.inputs.loader import load_catalog, load_workflow_config
        from kvwall.inputs.reported import load_reported

        catalog = load_catalog(config["config_dir"])
        return cls(catalog, load_workflow_config(config, catalog), load_reported(catalog.files["reported"]))

    @classmethod
    def from_view(cls, view: View) -> "FigureInputs":
        """The inputs a workflow view holds (kvwall.inputs.views)."""
        return cls(view.catalog, view.selections, view.reported)
