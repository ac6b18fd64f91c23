"""The layouts and batches `kvwall plan` searches, priced with the step-time estimate of a catalogue device."""

from __future__ import annotations

import numpy as np

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, ServingInputs, load_serving_inputs
from kvwall.inputs.specs import Device, Model
from kvwall.model.first_token import first_token_bound
from kvwall.model.step_time import device_step
from kvwall.plan.search import LayoutCurve, Workload, layout_curves


def plan_curves(catalog: Catalog, model: Model, device: Device, precision: str, gpus: int, workload: Workload,
                engine: str | None = None, serving: ServingInputs | None = None) -> list[LayoutCurve]:
    """Every layout of ``model`` on up to ``gpus`` devices at every batch it holds, in the catalogue's formats, with
    the step-time estimate and the TTFT bound of the device at ``precision``; ``serving``: the catalogue's serving
    assumptions where the caller holds them already."""
    serving = serving or load_serving_inputs(catalog)
    a, peak, bandwidth = catalog.assumptions, device.dense_flops[precision], device.hbm_bandwidth

    def step_seconds(d: Deployment, context: float, batches: np.ndarray) -> np.ndarray:
        return device_step(model, d, context, batches, bandwidth, peak, serving.link_for(device, d),
                           serving.collective_latency, serving.activation_bytes,
                           serving.hbm_bandwidth_efficiency).estimate

    return layout_curves(model, a.weight_dtype, a.kv_dtype, gpus, workload, device.hbm_capacity, serving.memory(engine),
                         device.scale_up is not None, step_seconds,
                         lambda d, prompt: float(first_token_bound(model, d, prompt, bandwidth, peak)))
