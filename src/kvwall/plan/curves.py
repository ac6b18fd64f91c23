"""The layouts and batches `kvwall plan` searches, priced on a catalogue device: with the datasheet step-time
estimate and the TTFT bound, or with an engine's calibrated estimate of both, times its offsets
(kvwall.plan.calibrated)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, ServingInputs, load_serving_inputs
from kvwall.inputs.specs import Device, Model
from kvwall.model.first_token import first_token_bound
from kvwall.model.step_time import device_step
from kvwall.plan.disagg import PrefillLayout
from kvwall.plan.search import LayoutCurve, Workload, layout_curves

if TYPE_CHECKING:
    from kvwall.plan.calibrated import PlanCalibration


def plan_curves(catalog: Catalog, model: Model, device: Device, precision: str, gpus: int, workload: Workload,
                engine: str | None = None, serving: ServingInputs | None = None,
                fit: PlanCalibration | None = None, mode: str = "agg") -> list[LayoutCurve]:
    """Every layout of ``model`` on up to ``gpus`` devices at every batch it holds, in the catalogue's formats, at
    the device's dense rate at ``precision``: without ``fit``, the step-time estimate and the TTFT bound; with it,
    the engine's calibrated TPOT and TTFT times the offsets' factors, in ``mode`` (disagg: decode instances, no
    prefill interference).
    ``serving``: the catalogue's serving assumptions where the caller holds them already."""
    serving = serving or load_serving_inputs(catalog)
    a, peak, bandwidth = catalog.assumptions, device.dense_flops[precision], device.hbm_bandwidth

    if fit is None:
        def step_seconds(d: Deployment, context: float, batches: np.ndarray) -> np.ndarray:
            return device_step(model, d, context, batches, bandwidth, peak, serving.link_for(device, d),
                               serving.collective_latency, serving.activation_bytes,
                               serving.hbm_bandwidth_efficiency).estimate

        def first_token_seconds(d: Deployment, prompt: float, batches: np.ndarray) -> np.ndarray:
            return np.full(batches.shape, float(first_token_bound(model, d, prompt, bandwidth, peak)))
    else:
        # pandas and the fitted constants' tables: only where an engine's calibration prices the plan
        from kvwall.plan.calibrated import calibrated_tpot_and_stretch, calibrated_ttft, planned_points

        # the TPOT and the TTFT of a layout price the same points, and the TTFT's offsets read the TPOT's stretch:
        # the last layout's, priced once and kept until another is asked for
        last: dict = {}

        def priced(d: Deployment, batches: np.ndarray) -> dict:
            if last.get("layout") != d or not np.array_equal(last["batches"], batches):
                points = planned_points(model, d, device, precision, serving, fit.calibrated.engine,
                                        workload.decode_context, batches, workload.input_tokens,
                                        workload.output_tokens, mode)
                tpot, stretch = calibrated_tpot_and_stretch(points, fit)
                last.update(layout=d, batches=batches.copy(), points=points, tpot=tpot, stretch=stretch)
            return last

        def step_seconds(d: Deployment, context: float, batches: np.ndarray) -> np.ndarray:
            p = priced(d, batches)
            return p["tpot"] * fit.factor("TPOT", model, device, d, mode, batches, p["stretch"])

        def first_token_seconds(d: Deployment, prompt: float, batches: np.ndarray) -> np.ndarray:
            p = priced(d, batches)
            return calibrated_ttft(p["points"], fit) * fit.factor("TTFT", model, device, d, mode, batches, p["stretch"])

    return layout_curves(model, a.weight_dtype, a.kv_dtype, gpus, workload, device.hbm_capacity, serving.memory(engine),
                         device.scale_up is not None, step_seconds, first_token_seconds)


def prefill_layouts(catalog: Catalog, model: Model, device: Device, precision: str, gpus: int, workload: Workload,
                    engine: str | None = None, serving: ServingInputs | None = None,
                    fit: PlanCalibration | None = None) -> list[PrefillLayout]:
    """Every layout of plan_curves as a prefill instance of one prompt of isl tokens per replica: without ``fit``,
    TTFT and busy time both the TTFT bound; with it, the calibrated TTFT of a disagg point and its prefill alone,
    both times the offsets' TTFT factor."""
    serving = serving or load_serving_inputs(catalog)
    peak, bandwidth = device.dense_flops[precision], device.hbm_bandwidth
    one = np.ones(1)
    if fit is not None:
        from kvwall.plan.calibrated import calibrated_prefill, calibrated_ttft, planned_points
    found = []
    for curve in plan_curves(catalog, model, device, precision, gpus, workload, engine, serving, None):
        d = curve.deployment
        if fit is None:
            bound = float(first_token_bound(model, d, float(workload.input_tokens), bandwidth, peak))
            found.append(PrefillLayout(d, bound, bound))
            continue
        points = planned_points(model, d, device, precision, serving, fit.calibrated.engine, workload.decode_context,
                                one, workload.input_tokens, workload.output_tokens, "disagg")
        factor = fit.factor("TTFT", model, device, d, "disagg", 1.0, 1.0)  # a disagg step: no prefill stalls it
        found.append(PrefillLayout(d, float(calibrated_ttft(points, fit)[0]) * factor,
                                   float(calibrated_prefill(points, fit)[0]) * factor))
    return found
