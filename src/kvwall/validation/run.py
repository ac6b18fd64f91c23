"""One validation of a file of serving measurements: points, diagnoses and the weight-format claim."""

from __future__ import annotations

import pickle
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


@dataclass(frozen=True)
class ValidatedFile:
    """What validate_file returns, saved once by the workflow's validation job for every job that reads it."""

    rows: pd.DataFrame
    vmap: ValidationMap
    validation: Validation


def save_validation(path: str | Path, rows: pd.DataFrame, vmap: ValidationMap, validation: Validation) -> None:
    """Save one validation at ``path`` (a file of this build's own, read back by load_validation)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(pickle.dumps(ValidatedFile(rows, vmap, validation), protocol=5))


def load_validation(path: str | Path) -> tuple[pd.DataFrame, ValidationMap, Validation]:
    """The rows, the map and the result the workflow's validation job saved at ``path``."""
    saved = pickle.loads(Path(path).read_bytes())
    if not isinstance(saved, ValidatedFile):
        raise TypeError(f"{path} holds no validation")
    return saved.rows, saved.vmap, saved.validation
