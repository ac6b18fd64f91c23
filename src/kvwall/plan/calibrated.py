"""The calibrated estimate `kvwall plan --engine` prices layouts with: derived from reported data.

The engine's constants, offsets and their held-out error are read from the tables by kvwall.validation.calibrated,
never refitted: the constants of tables/derived/serving_engine_constants, times the offsets of
tables/derived/serving_estimate_offsets for the planned engine, mode, model, device, layout and weight format
(kvwall.validation.offsets: a factor per level the measurements hold at the planned sequences per attention-DP
rank and the prefill stretch of the planned step, none where they hold nothing of the model), and the error band of tables/derived/serving_estimate_error on
the engine's agg (or disagg) points, grouped 5-fold with offsets where they hold the model, else leaving one model
out (the error on a model no fit saw, kvwall.validation.calibrated.band_of): the median |estimate / measured - 1| and the 10th to 90th percentile
of measured / estimate, for TPOT and for TTFT. A planned layout at batch b is priced as a measured agg point at b
running sequences (kvwall.model.decode_inputs): TPOT is kvwall.model.decode_costs's decode step over the tokens a step emits, TTFT
kvwall.model.first_token_estimate's (the fixed cost, its own prefill and a share of the others' wave of b, each with
the decode steps its chunks ride in the engine, kvwall.model.prompt_steps; a plan holds every request it runs, so none
waits for a slot); a disaggregated plan's decode instances as disagg points (no prefill interference) and its prefill instances' TTFT as a disagg point's (the fixed
cost and one prompt on a replica, its busy time scaled with its TTFT's factor at one sequence). The KV a plan asks
for (--kv-dtype) is the KV the engine stores, so the stored over counted KV bytes is 1. The fitted numbers price estimates only; no bound reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, ServingInputs
from kvwall.inputs.specs import Device, Model
from kvwall.inputs.validation_map import VALIDATION_FILE, load_validation_map
from kvwall.model.decode_costs import decode_costs, prefill_stretch, step_of
from kvwall.model.decode_inputs import decode_inputs
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.model.prompt_steps import prompt_steps, scheduled_sequences
from kvwall.validation.calibrated import (HELD_OUT_WITH_OFFSETS, NEW_MODEL, Calibrated, HeldOutError, band_of,
                                          calibrated_engines, read_calibrated, read_offsets, tables_beside)
from kvwall.validation.offsets import Offsets, deployment_key


@dataclass(frozen=True)
class PlanCalibration:
    """An engine's calibration as the tables hold it, the tokens a decode step emits (config/validation.yaml), the
    engine's offsets (None: the constants alone), the held-out error of the estimate with them, and its error on a
    model left out of every fit (None: the constants' own)."""

    calibrated: Calibrated
    tokens_per_step: float
    offsets: Offsets | None = None
    with_offsets: Calibrated | None = None
    new_model: Calibrated | None = None

    def bands(self, mode: str, model: Model | None = None) -> tuple[HeldOutError | None, HeldOutError | None]:
        """The held-out error of TPOT and TTFT on ``mode``'s points (None where none was held out): of the estimate
        with offsets where they hold ``model`` in ``mode``, else of a model left out of every fit (a model the
        measurements do not hold gets no offset of its own); without ``model``, of the constants alone."""
        held = self.calibrated
        if model is not None and self.with_offsets is not None and self.offsets is not None:
            held = band_of(self.with_offsets, self.new_model or self.calibrated, self.offsets, mode, model.id)
        return held.tpot_error.get(mode), held.ttft_error.get(mode)

    def factor(self, quantity: str, model: Model, device: Device, d: Deployment, mode: str, batches, stretch):
        """The offsets' factor of ``quantity`` (TPOT, TTFT) for the layout ``d`` of ``model`` on ``device`` in
        ``mode`` at ``batches`` sequences in flight and the prefill ``stretch`` of its step there (numbers or arrays,
        calibrated_stretch): 1 without offsets or where they hold none of it."""
        if self.offsets is None:
            return np.ones_like(np.asarray(batches, dtype=float)) if np.ndim(batches) else 1.0
        return self.offsets.factor(quantity, offset_key(self, model, device, d, mode),
                                   np.asarray(batches, dtype=float) / d.data_parallel, stretch)

    def levels(self, quantity: str, model: Model, device: Device, d: Deployment, mode: str, batch: float,
               stretch: float) -> dict[str, float]:
        """The factor of each level of the offsets that holds the layout at ``batch`` and ``stretch``, coarse to
        fine."""
        return {} if self.offsets is None else self.offsets.levels_of(
            quantity, offset_key(self, model, device, d, mode), batch / d.data_parallel, stretch)


def offset_key(fit: PlanCalibration, model: Model, device: Device, d: Deployment, mode: str) -> tuple[str, ...]:
    """The layout's key in the offsets (kvwall.validation.offsets.deployment_key)."""
    return deployment_key(fit.calibrated.engine, mode, model, device, d)


def read_plan_calibration(catalog: Catalog, engine: str) -> PlanCalibration:
    """``engine``'s calibration and offsets from the tables beside the catalogue's config/, with the held-out bands
    of the estimate without and with offsets; NotCalibrated where they are not built or hold no row of it."""
    tables = tables_beside(catalog)
    vmap = load_validation_map(Path(catalog.files["devices"]).parent / VALIDATION_FILE, catalog)
    return PlanCalibration(read_calibrated(tables, engine), float(vmap.tokens_per_step), read_offsets(tables, engine),
                           read_calibrated(tables, engine, HELD_OUT_WITH_OFFSETS), read_calibrated(tables, engine, NEW_MODEL))


def plan_calibrations(catalog: Catalog, engines) -> dict[str, PlanCalibration]:
    """read_plan_calibration of each of ``engines`` whose constants the tables beside the catalogue's config/ hold."""
    fitted = set(calibrated_engines(tables_beside(catalog)))
    return {engine: read_plan_calibration(catalog, engine) for engine in sorted(engines) if engine in fitted}


def planned_points(model: Model, d: Deployment, device: Device, precision: str, serving: ServingInputs, engine: str,
                   context: float, batches: np.ndarray, isl: float, osl: float, mode: str = "agg") -> pd.DataFrame:
    """The layout at every batch as points of ``mode`` (agg; disagg: a decode instance without prefills, or a
    prefill instance) on ``engine``, its GEMMs in ``precision``, in the columns decode_costs and first_token_estimate
    read."""
    inputs = decode_inputs(model, d, context, batches, isl, device.hbm_bandwidth, device.dense_flops[precision],
                           precision, serving.link_for(device, d),
                           serving.collective_latency, serving.activation_bytes, serving.hbm_bandwidth_efficiency)
    rides = (prompt_steps(serving.prompt_budgets[engine], device.hbm_capacity, isl, scheduled_sequences(d, batches))
             if mode == "agg" else np.zeros(np.shape(batches)))
    return pd.DataFrame({
        "mode": mode, "osl": float(osl), "running_batch": batches, "hbm_bandwidth": device.hbm_bandwidth,
        "weight_read_per_device": inputs.step.weight_bytes, "kv_read_per_device": inputs.step.kv_bytes,
        "stored_kv_ratio": 1.0, **inputs.costs, "prompt_steps": rides})


def calibrated_tpot_and_stretch(points: pd.DataFrame, fit: PlanCalibration) -> tuple[np.ndarray, np.ndarray]:
    """Seconds per output token of planned points with the engine's constants, and their prefill stretch
    (calibrated_stretch), from one pricing of their named costs."""
    costs = decode_costs(points, fit.calibrated.constants)
    return step_of(costs) / fit.tokens_per_step, prefill_stretch(costs)


def calibrated_stretch(points: pd.DataFrame, fit: PlanCalibration) -> np.ndarray:
    """The prefill stretch of planned points' decode steps with the engine's constants
    (kvwall.model.decode_costs.prefill_stretch): what the offsets' prefill slopes read."""
    return prefill_stretch(decode_costs(points, fit.calibrated.constants))


def planned_stretch(fit: PlanCalibration, model: Model, d: Deployment, device: Device, precision: str,
                    serving: ServingInputs, context: float, batch: float, isl: float, osl: float, mode: str) -> float:
    """The prefill stretch of the layout's step at one ``batch`` (planned_points, calibrated_stretch)."""
    return float(calibrated_stretch(planned_points(model, d, device, precision, serving, fit.calibrated.engine, context,
                                                   np.array([float(batch)]), isl, osl, mode), fit)[0])


def calibrated_ttft(points: pd.DataFrame, fit: PlanCalibration) -> np.ndarray:
    """Seconds to the first token of planned points with the engine's constants."""
    return first_token_estimate(points, fit.calibrated.constants, fit.tokens_per_step)


def calibrated_prefill(points: pd.DataFrame, fit: PlanCalibration) -> np.ndarray:
    """Seconds a replica of a prefill instance computes one prompt: its FLOPs per GPU over the realized peak (the
    TTFT of a disagg point without its fixed cost)."""
    return points["replica_prefill_flops"].to_numpy(dtype=float) / (fit.calibrated.constants.flop_fraction
                                                                    * points["peak_flops"].to_numpy(dtype=float))
