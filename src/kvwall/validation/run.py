"""One validation of a file of serving measurements: points, diagnoses, gap fits and the weight-format claim."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import ServingInputs
from kvwall.inputs.validation_map import ValidationMap
from kvwall.units import DTYPE_BYTES
from kvwall.validation.below_bound import diagnose
from kvwall.validation.claim import format_pairs
from kvwall.validation.gap import group_fits
from kvwall.validation.points import evaluate


@dataclass(frozen=True)
class Validation:
    """The derived results of one file: per point, per group fit, per pair of weight formats."""

    points: pd.DataFrame
    fits: pd.DataFrame
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
    return Validation(points, group_fits(understood), format_pairs(understood, DTYPE_BYTES))
