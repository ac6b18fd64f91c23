"""The calibrated estimate `kvwall plan --engine` prices layouts with: derived from reported data.

The engine's constants are fitted on every understood point of the engine in the shared serving measurements
(kvwall.validation.estimate_error.engine_calibrations: the constants of tables/derived/serving_engine_constants).
Their error band is that of the grouped 5-fold cross-validation of tables/derived/serving_estimate_error, on the
engine's agg points (and its disagg points, for a disaggregated plan): each point predicted by constants fitted
without its concurrency group; the median of |estimate / measured - 1| and the 10th to 90th percentile of measured
/ estimate, for TPOT and for TTFT. A planned
layout at batch b is priced as a measured agg point at b running sequences (kvwall.model.decode_inputs): TPOT is
kvwall.model.decode_costs's decode step over the tokens a step emits, TTFT kvwall.model.first_token_estimate's (the
fixed cost and half the wave of b prefills); a disaggregated plan's decode instances as disagg points (no prefill
interference) and its prefill instances' TTFT as a disagg point's (the fixed cost and one prompt on a replica). The
KV a plan asks for (--kv-dtype) is the KV the engine stores, so
the stored over counted KV bytes is 1. The fitted numbers price estimates only; no bound reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, ServingInputs
from kvwall.inputs.serving import SERVING_MEASUREMENTS
from kvwall.inputs.specs import Device, Model
from kvwall.inputs.validation_map import VALIDATION_FILE
from kvwall.model.decode_costs import decode_step
from kvwall.model.decode_inputs import decode_inputs
from kvwall.model.engine_constants import EngineConstants
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.validation.estimate_error import engine_calibrations, grouped_folds, held_out, measured_times
from kvwall.validation.run import validate_file

#: The share of held-out points the band spans: from its low to its high quantile of measured / estimate.
BAND = (0.1, 0.9)


@dataclass(frozen=True)
class ErrorBand:
    """How far the estimate missed the agg points it was not fitted on: their count, the median |estimate / measured
    - 1|, and the BAND quantiles of measured / estimate."""

    points: int
    median_error: float
    low: float
    high: float


@dataclass(frozen=True)
class EngineFit:
    """An engine's fitted constants, the tokens a decode step emits, the points they were fitted on, and the held-out
    error bands of TPOT and TTFT on its agg points and on its disagg points (None where it has none)."""

    engine: str
    constants: EngineConstants
    tokens_per_step: float
    points: int
    tpot: ErrorBand
    ttft: ErrorBand
    disagg_tpot: ErrorBand | None = None
    disagg_ttft: ErrorBand | None = None

    def bands(self, mode: str) -> tuple[ErrorBand | None, ErrorBand | None]:
        """The TPOT and TTFT bands of ``mode``'s points."""
        return (self.tpot, self.ttft) if mode == "agg" else (self.disagg_tpot, self.disagg_ttft)


class FitError(ValueError):
    """An engine the measurements cannot calibrate: no file, or no point of it."""


def _band(estimate: pd.Series, measured: pd.Series) -> ErrorBand | None:
    chosen = estimate.notna() & (estimate > 0)
    if not chosen.any():
        return None
    ratio = (measured[chosen] / estimate[chosen]).to_numpy(dtype=float)
    low, high = np.quantile(ratio, BAND)
    return ErrorBand(int(ratio.size), float(np.median(np.abs(1.0 / ratio - 1.0))), float(low), float(high))


def fit_engine(understood: pd.DataFrame, rows: pd.DataFrame, tokens: float, engine: str) -> EngineFit:
    """The fit of ``engine`` on the understood points of a validation (``rows``: its rows as read)."""
    if engine not in set(understood["backend"]):
        raise FitError(f"no understood measured point of engine {engine}")
    measured = measured_times(understood, rows)
    mine = understood[understood["backend"] == engine]
    calibration = engine_calibrations(mine, measured, tokens)[engine]
    # the folds of the whole file, as tables/derived/serving_estimate_error draws them; only this engine's are fitted
    predicted = held_out(mine, measured, tokens, grouped_folds(understood).loc[mine.index])
    bands = {}
    for mode in ("agg", "disagg"):
        chosen = mine.index[mine["mode"] == mode]
        bands[mode] = tuple(_band(predicted.loc[chosen, q], measured.loc[chosen, q]) for q in ("tpot", "ttft"))
    if bands["agg"][0] is None:
        raise FitError(f"no agg point of engine {engine} predicted held out")
    return EngineFit(engine, calibration.constants, float(tokens), calibration.points, *bands["agg"], *bands["disagg"])


def shared_fit(catalog: Catalog, engine: str, measurements: str | Path = SERVING_MEASUREMENTS) -> EngineFit:
    """The fit of ``engine`` on the shared serving measurements (or ``measurements``), mapped by the validation map
    beside the catalogue's spec files."""
    if not Path(measurements).is_file():
        raise FitError(f"{measurements}: no such file; the calibrated estimate fits its constants on the serving "
                       "measurements (run from a checkout, or give --measurements)")
    validation_map = Path(catalog.files["devices"]).parent / VALIDATION_FILE
    rows, vmap, validation = validate_file(measurements, validation_map, catalog, strict=False)
    return fit_engine(validation.understood, rows, vmap.tokens_per_step, engine)


def planned_points(model: Model, d: Deployment, device: Device, peak: float, serving: ServingInputs, context: float,
                   batches: np.ndarray, isl: float, osl: float, mode: str = "agg") -> pd.DataFrame:
    """The layout at every batch as points of ``mode`` (agg; disagg: a decode instance without prefills, or a
    prefill instance) in the columns decode_costs and first_token_estimate read."""
    inputs = decode_inputs(model, d, context, batches, isl, device.hbm_bandwidth, peak, serving.link_for(device, d),
                           serving.collective_latency, serving.activation_bytes, serving.hbm_bandwidth_efficiency)
    return pd.DataFrame({
        "mode": mode, "osl": float(osl), "running_batch": batches, "hbm_bandwidth": device.hbm_bandwidth,
        "weight_read_per_device": inputs.step.weight_bytes, "kv_read_per_device": inputs.step.kv_bytes,
        "stored_kv_ratio": 1.0, **inputs.costs})


def calibrated_tpot(points: pd.DataFrame, fit: EngineFit) -> np.ndarray:
    """Seconds per output token of planned points with the fitted constants."""
    return decode_step(points, fit.constants) / fit.tokens_per_step


def calibrated_ttft(points: pd.DataFrame, fit: EngineFit) -> np.ndarray:
    """Seconds to the first token of planned points with the fitted constants."""
    return first_token_estimate(points, fit.constants)


def calibrated_prefill(points: pd.DataFrame, fit: EngineFit) -> np.ndarray:
    """Seconds a replica of a prefill instance computes one prompt: its FLOPs per GPU over the realized peak (the
    TTFT of a disagg point without its fixed cost)."""
    return points["replica_prefill_flops"].to_numpy(dtype=float) / (fit.constants.flop_fraction
                                                                    * points["peak_flops"].to_numpy(dtype=float))
