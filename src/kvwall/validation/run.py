"""One validation of a file of serving measurements: points, diagnoses and the weight-format claim."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import ServingInputs, load_serving_inputs
from kvwall.inputs.serving import read_serving_measurements
from kvwall.inputs.validation_map import ValidationMap, load_validation_map
from kvwall.units import DTYPE_BYTES
from kvwall.validation.below_bound import diagnose
from kvwall.validation.claim import format_pairs
from kvwall.validation.points import evaluate


@dataclass(frozen=True)
class Validation:
    """The derived results of one file: per point and per pair of weight formats."""

    points: pd.DataFrame
    pairs: pd.DataFrame

    @property
    def understood(self) -> pd.DataFrame:
        return self.points[self.points["reason"].isna()]


def validate(rows: pd.DataFrame, catalog: Catalog, vmap: ValidationMap, serving: ServingInputs, strict: bool = True) -> Validation:
    """Evaluate ``rows``; with ``strict``, every point below its bound must have a documented diagnosis.

    A user's own file (``kvwall validate``) is run with ``strict=False``: a point below its bound that no documented
    entry explains is listed without a diagnosis instead of stopping the run.
    """
    points = evaluate(rows, catalog, vmap, serving)
    points["diagnosis"] = diagnose(points, vmap, strict)
    understood = points[points["reason"].isna()].assign(tpot_ms=rows["silicon_tpot_ms"])
    return Validation(points, format_pairs(understood, DTYPE_BYTES))


def validate_file(measurements: str | Path, validation_map: str | Path, catalog: Catalog, stamp_dir: str | Path | None = None,
                  strict: bool = True) -> tuple[pd.DataFrame, ValidationMap, Validation]:
    """Read ``measurements`` (kvwall.inputs.serving) and the map, then validate: the rows as read, the map, the result."""
    rows = read_serving_measurements(measurements, stamp_dir)
    vmap = load_validation_map(validation_map, catalog)
    return rows, vmap, validate(rows, catalog, vmap, load_serving_inputs(catalog), strict)
