"""The calibrated estimate where a user asks for it (`kvwall regime|fit|plan --engine`, `kvwall validate`): derived
from reported data.

An engine's constants are read back from tables/derived/serving_engine_constants (fitted by
kvwall.validation.calibration on every understood measured point of the engine) and its held-out error from
tables/derived/serving_estimate_error (grouped 5-fold cross-validation, or leaving one model out for a model the
measurements do not hold, kvwall.validation.estimate_error: the median and mean |estimate / measured - 1| and the
10th to 90th percentile of measured / estimate), so that an answer prints
the same constants and error the tables show, never a fit of its own; where the tables are not built, there is no
calibrated estimate (NotCalibrated). A deployment's decode step and first token are priced by
kvwall.model.decode_costs and kvwall.model.first_token_estimate with those constants, beside the same sums at
datasheet rates (kvwall.model.engine_constants.datasheet_constants), and times the engine's offsets as `kvwall plan
--engine` prices it (planned_columns, naming the layer that priced each point). No bound reads any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, ServingInputs
from kvwall.inputs.validation_map import ValidationMap
from kvwall.model.decode_costs import COSTS, decode_costs, decode_step, prefill_stretch, step_of
from kvwall.model.engine_constants import PRINTED_UNITS, EngineConstants, datasheet_constants, rounded
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.units import MS
from kvwall.validation.estimate_error import SCHEMES
from kvwall.validation.offsets import Offsets, offsets_from, point_keys, sequences_per_rank
from kvwall.validation.points import COST_INPUTS, derive

#: The tables the constants and their error are read from, under a checkout's tables/ (beside its config/).
TABLES, CONSTANTS_TABLE, ERROR_TABLE = "tables", "derived/serving_engine_constants", "derived/serving_estimate_error"
#: The error band an estimate is printed with: points held out by grouped K-fold cross-validation, the same with
#: the offsets of OFFSETS_TABLE (fitted on the other folds), the band of an estimate with offsets, and leaving one
#: model out with the other models' offsets, the band of a model the measurements do not hold.
HELD_OUT, HELD_OUT_WITH_OFFSETS, NEW_MODEL = SCHEMES[2], SCHEMES[6], SCHEMES[7]
#: The table of the calibrated estimate's offsets (kvwall.validation.offsets), fitted on every understood point.
OFFSETS_TABLE = "derived/serving_estimate_offsets"


class NotCalibrated(ValueError):
    """No calibration for an engine: its tables are not built, or they hold no row of it."""


@dataclass(frozen=True)
class HeldOutError:
    """The estimate's error on held-out points of one engine, mode and quantity: the median and mean of |estimate /
    measured - 1|, and the 10th (low) and 90th (high) percentiles of measured / estimate."""

    scheme: str
    points: int
    median: float
    mean: float
    low: float
    high: float


@dataclass(frozen=True)
class ConstantAtBound:
    """A fitted constant held at a bound of its fit (kvwall.validation.calibration.settled): its value in base units
    and which bound, "lower" or "upper"."""

    name: str
    value: float
    bound: str


@dataclass(frozen=True)
class Calibrated:
    """One engine's fitted constants, the points its decode step was fitted on, and the held-out error of its TPOT
    and TTFT, by mode; and the constants its fit held at a bound (the measurements would take them past it)."""

    engine: str
    constants: EngineConstants
    points: int
    tpot_error: dict[str, HeldOutError]
    ttft_error: dict[str, HeldOutError]
    at_bound: tuple[ConstantAtBound, ...] = ()


@dataclass(frozen=True)
class Estimate:
    """TPOT and TTFT (s) with the engine's constants and at datasheet rates, and the named costs of the step (s per
    output token)."""

    tpot: float
    ttft: float
    tpot_datasheet: float
    ttft_datasheet: float
    costs: dict[str, float]


def _table(tables: Path, artifact: str) -> pd.DataFrame:
    path = tables / f"{artifact}.csv"
    if not path.is_file():
        raise NotCalibrated(f"{path} not found: build the validation tables (snakemake) for a calibrated estimate")
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def tables_beside(catalog: Catalog) -> Path:
    """The tables/ of the checkout whose config/ holds the catalogue's spec files."""
    return Path(catalog.files["devices"]).parent.parent / TABLES


def calibrated_engines(tables: str | Path) -> list[str]:
    """The engines the constants table under ``tables`` holds (an engine with too few points for a fit has none)."""
    return sorted(_table(Path(tables), CONSTANTS_TABLE)["backend"].unique())


def read_calibrated(tables: str | Path, engine: str, scheme: str = HELD_OUT) -> Calibrated:
    """``engine``'s constants (in base units) and the held-out errors of ``scheme`` from the tables under
    ``tables``."""
    constants = _table(Path(tables), CONSTANTS_TABLE)
    rows = constants[constants["backend"] == engine].set_index("constant")
    if rows.empty:
        raise NotCalibrated(f"{engine}: no fitted constants in {Path(tables) / CONSTANTS_TABLE}.csv")
    missing = [name for name in EngineConstants.NAMES if name not in rows.index]
    if missing:
        raise NotCalibrated(f"{engine}: {Path(tables) / CONSTANTS_TABLE}.csv holds no {', '.join(missing)}: rebuild "
                            "the validation tables (snakemake) with this checkout")
    # the table prints each constant in its unit; back in base units, its three significant digits are the fit's own
    values = {name: rounded(float(rows.loc[name, "value"]) * PRINTED_UNITS[name][1]) for name in EngineConstants.NAMES}
    errors = _table(Path(tables), ERROR_TABLE)
    held = errors[(errors["scheme"] == scheme) & (errors["backend"] == engine)]

    def by_mode(quantity: str) -> dict[str, HeldOutError]:
        chosen = held[held["quantity"] == quantity]
        return {r["mode"]: HeldOutError(scheme, int(r["points"]), float(r["median_error"]), float(r["mean_error"]),
                                        float(r["measured_over_estimate_p10"]), float(r["measured_over_estimate_p90"]))
                for r in chosen.to_dict("records")}

    at_bound = tuple(ConstantAtBound(name, values[name], "lower" if float(rows.loc[name, "value"]) == float(
        rows.loc[name, "lower"]) else "upper") for name in EngineConstants.NAMES if rows.loc[name, "at_bound"] == "yes")
    return Calibrated(engine, EngineConstants(**values), int(rows.loc["fixed_step", "points"]), by_mode("TPOT"),
                      by_mode("TTFT"), at_bound)


def read_offsets(tables: str | Path, engine: str) -> Offsets:
    """``engine``'s offsets (kvwall.validation.offsets) from OFFSETS_TABLE under ``tables``: none where it holds no
    row of the engine."""
    offsets = _table(Path(tables), OFFSETS_TABLE).fillna("")
    return offsets_from(offsets[offsets["backend"] == engine])


def band_of(with_offsets: Calibrated, new_model: Calibrated, offsets: Offsets, mode: str, model_id: str) -> Calibrated:
    """The calibration whose held-out error an estimate of ``model_id`` in ``mode`` is printed with: the estimate's
    with offsets where they hold the engine, mode and model, else its error on a model left out of every fit
    (NEW_MODEL: a model the measurements do not hold gets no offset of its own)."""
    return with_offsets if offsets.holds("TPOT", (with_offsets.engine, mode, model_id)) else new_model


def cost_points(model, device, deployment: Deployment, engine: str, mode: str, in_flight: float, isl: float,
                osl: float, vmap: ValidationMap, serving: ServingInputs, precision: str) -> pd.DataFrame:
    """One point in the columns of kvwall.validation.points (COST_INPUTS among them): ``in_flight`` requests of
    ``isl`` tokens in and ``osl`` out on ``deployment``, at the mean decode context isl + osl / 2. Its GEMMs run at
    the precision the validation map names for its weight format, else at ``precision`` (a checkpoint's per-part
    formats, which no measured row names)."""
    if deployment.weight_format not in vmap.compute_precision:
        vmap = replace(vmap, compute_precision={**vmap.compute_precision, deployment.weight_format: precision})
    points = pd.DataFrame({"backend": [engine], "mode": [mode], "isl": [float(isl)], "osl": [float(osl)],
                           "in_flight": [float(in_flight)], "decode_context": [isl + osl / 2.0], "reason": [None]})
    for name in ("fitting", "running_batch", "kv_read_per_device", "weight_read_per_device", "hbm_bandwidth",
                 *COST_INPUTS):
        points[name] = np.nan
    derive(points, points.index, model, device, deployment, vmap, serving)
    return points


def estimate(points: pd.DataFrame, constants: EngineConstants, latency: float, tokens: float) -> list[Estimate]:
    """The estimate of every point of ``points`` (kvwall.validation.points' columns) with ``constants``, beside the
    datasheet's (``latency``: the stated latency per collective message); ``tokens`` per decode step."""
    tpot = decode_step(points, constants) / tokens
    ttft = first_token_estimate(points, constants, tokens)
    datasheet = datasheet_constants(latency)
    tpot_datasheet = decode_step(points, datasheet) / tokens
    ttft_datasheet = first_token_estimate(points, datasheet, tokens)
    costs = {name: values / tokens for name, values in decode_costs(points, constants).items()}
    return [Estimate(float(tpot[i]), float(ttft[i]), float(tpot_datasheet[i]), float(ttft_datasheet[i]),
                     {name: float(values[i]) for name, values in costs.items()}) for i in range(len(points))]


#: The columns estimate_columns writes, in order.
ESTIMATE_COLUMNS = ("tpot_estimate_ms", "tpot_datasheet_ms", "ttft_estimate_ms", *(f"cost_{name}_ms" for name in COSTS))


def estimate_columns(points: pd.DataFrame, calibrated: dict[str, EngineConstants], latency: float,
                     tokens: float) -> pd.DataFrame:
    """Per understood point (others NaN): tpot_estimate_ms with its engine's constants (NaN for an engine not in
    ``calibrated``), tpot_datasheet_ms at datasheet rates, ttft_estimate_ms with the engine's constants and, per named
    cost, cost_<name>_ms, its share of tpot_estimate_ms."""
    out = pd.DataFrame(np.nan, index=points.index, columns=list(ESTIMATE_COLUMNS))
    understood = points[points["reason"].isna()]
    if understood.empty:
        return out
    out.loc[understood.index, "tpot_datasheet_ms"] = decode_step(understood, datasheet_constants(latency)) / tokens / MS
    for engine, group in understood.groupby("backend", sort=True):
        if engine in calibrated:
            out.loc[group.index, "tpot_estimate_ms"] = decode_step(group, calibrated[engine]) / tokens / MS
            out.loc[group.index, "ttft_estimate_ms"] = first_token_estimate(group, calibrated[engine], tokens) / MS
            for name, seconds in decode_costs(group, calibrated[engine]).items():
                out.loc[group.index, f"cost_{name}_ms"] = seconds / tokens / MS
    return out


#: The columns planned_columns writes, in order, and the layer a row priced with no offset names.
PLANNED_COLUMNS, CONSTANTS_LAYER = ("tpot_planned_ms", "ttft_planned_ms", "planned_layer"), "constants"


def planned_columns(points: pd.DataFrame, calibrated: dict[str, EngineConstants], offsets: dict[str, Offsets],
                    tokens: float) -> pd.DataFrame:
    """Per understood point of an engine in ``calibrated`` (others NaN and no layer): the TPOT and TTFT (ms) that
    `kvwall plan --engine` prices it with, its engine's constants times the offsets (kvwall.validation.offsets) of
    its key at its sequences per attention-DP rank and the prefill stretch of its step, and planned_layer, the layer
    that priced it: "offsets to <level>", the finest level of the offsets that holds it, or CONSTANTS_LAYER where
    they hold nothing of its engine, mode and model (a model never measured)."""
    out = pd.DataFrame({"tpot_planned_ms": np.nan, "ttft_planned_ms": np.nan, "planned_layer": None},
                       index=points.index, columns=list(PLANNED_COLUMNS))
    understood = points[points["reason"].isna()]
    for engine, group in understood.groupby("backend", sort=True):
        if engine not in calibrated:
            continue
        costs = decode_costs(group, calibrated[engine])
        lookup = offsets.get(engine, Offsets({}))
        keys, sequences = point_keys(group), sequences_per_rank(group)
        stretch = pd.Series(prefill_stretch(costs), index=group.index)
        for column, quantity, seconds in (("tpot_planned_ms", "TPOT", step_of(costs) / tokens),
                                          ("ttft_planned_ms", "TTFT", first_token_estimate(group, calibrated[engine], tokens))):
            factor = np.exp(lookup.log_factors_of(quantity, keys, sequences, stretch))
            out.loc[group.index, column] = seconds * factor / MS
        levels = lookup.finest_levels("TPOT", keys)
        out.loc[group.index, "planned_layer"] = ("offsets to " + levels).where(levels.notna(), CONSTANTS_LAYER)
    return out


def engine_offsets(tables: str | Path, engines) -> dict[str, Offsets]:
    """The offsets of each of ``engines`` that the tables under ``tables`` hold (none where not built)."""
    found = {}
    for engine in engines:
        try:
            found[engine] = read_offsets(tables, engine)
        except NotCalibrated:
            continue
    return found


def engine_constants(tables: str | Path, engines) -> dict[str, EngineConstants]:
    """The fitted constants of each of ``engines`` that the tables under ``tables`` hold (none where not built)."""
    found = {}
    for engine in engines:
        try:
            found[engine] = read_calibrated(tables, engine).constants
        except NotCalibrated:
            continue
    return found


#: The table whose understood rows (no refusal reason) are the points every engine's constants were fitted on.
FITTED_ON_TABLE = "derived/serving_bounds"


def fitted_ids(tables: str | Path) -> set[str]:
    """The ids of the measured points the committed constants were fitted on (empty where the tables are not built)."""
    path = Path(tables) / f"{FITTED_ON_TABLE}.csv"
    if not path.is_file():
        return set()
    bounds = pd.read_csv(path, usecols=["id", "reason"], keep_default_na=False, na_values=[""])
    return set(bounds.loc[bounds["reason"].isna(), "id"])
