"""What a planned layout at its batch holds per device and what its time per output token is made of.

Memory per device: the resident weights (kvwall.model.sharding.resident_weight_bytes_per_device) and the KV of the
batch at the longest context of a request, isl + osl (kvwall.model.sharding.kv_bytes_per_device, the bytes
kvwall.model.capacity.sequences_that_fit divides the engine's KV memory by), against the device's HBM.

Costs per output token: with an engine's calibration, the named costs of kvwall.model.decode_costs for the layout
priced as kvwall.plan.calibrated prices it, over the tokens a step emits, and what its offsets add to them as a cost
of their own; without, the parts of the datasheet
step-time estimate (kvwall.model.step_time.device_step): the weight, KV and busiest-rank bytes at the stated
bandwidth efficiency, the compute time past them, the collectives. Either way the costs sum to the plan's TPOT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvwall.inputs.deployment import Deployment, ServingInputs
from kvwall.inputs.specs import Device, Model
from kvwall.model.decode_costs import COSTS, decode_costs, prefill_stretch
from kvwall.model.sharding import kv_bytes_per_device, resident_weight_bytes_per_device
from kvwall.model.step_time import device_step
from kvwall.plan.calibrated import PlanCalibration, planned_points
from kvwall.validation.offsets import OFFSET_COST
from kvwall.plan.search import Workload

#: The parts of the datasheet step-time estimate, in the order they are summed.
DATASHEET_COSTS = ("weights", "kv", "compute", "collectives", "imbalance")


@dataclass(frozen=True)
class DeviceMemory:
    """Bytes one device of a layout holds at a batch: weights, KV at the longest context, their sum, its HBM."""

    weights: float
    kv: float
    hbm: float

    @property
    def total(self) -> float:
        return self.weights + self.kv


@dataclass(frozen=True)
class LayoutCosts:
    """The named costs of a layout's time per output token (s), in summing order, and the estimate they are of."""

    estimate: str  # "calibrated" or "datasheet"
    costs: dict[str, float]

    @property
    def tpot(self) -> float:
        return sum(self.costs.values())


def device_memory(model: Model, d: Deployment, batch: int, workload: Workload, device: Device) -> DeviceMemory:
    """Weights and the KV of ``batch`` sequences at isl + osl on one device of the layout, and its HBM."""
    kv = float(kv_bytes_per_device(model, d, workload.longest_context, float(batch)))
    return DeviceMemory(resident_weight_bytes_per_device(model, d), kv, device.hbm_capacity)


def layout_costs(model: Model, d: Deployment, batch: int, workload: Workload, device: Device, precision: str,
                 serving: ServingInputs, fit: PlanCalibration | None = None, mode: str = "agg") -> LayoutCosts:
    """The costs per output token of the layout at ``batch``, its GEMMs in ``precision``, as the plan priced it: with
    ``fit`` the calibrated estimate in ``mode`` (disagg: a decode instance), without it the datasheet step-time
    estimate."""
    one = np.array([float(batch)])
    if fit is not None:
        points = planned_points(model, d, device, precision, serving, fit.calibrated.engine, workload.decode_context,
                                one, workload.input_tokens, workload.output_tokens, mode)
        costs = decode_costs(points, fit.calibrated.constants)
        named = {name: float(costs[name][0]) / fit.tokens_per_step for name in COSTS}
        if fit.offsets is None:
            return LayoutCosts("calibrated", named)
        # the offsets' factor as a cost of its own: what the measurements add to (or take from) the named costs
        stretch = float(prefill_stretch(costs)[0])
        offset = sum(named.values()) * (fit.factor("TPOT", model, device, d, mode, float(batch), stretch) - 1.0)
        return LayoutCosts("calibrated", {**named, OFFSET_COST: offset})
    efficiency, bandwidth = serving.hbm_bandwidth_efficiency, device.hbm_bandwidth
    step = device_step(model, d, workload.decode_context, one, bandwidth, device.dense_flops[precision], serving.link_for(device, d),
                       serving.collective_latency, serving.activation_bytes, efficiency)
    idle = d.pipeline_parallel / float(np.ravel(step.microbatches)[0])
    read = {name: float(np.ravel(b)[0]) / (efficiency * bandwidth)
            for name, b in (("weights", step.weight_bytes), ("kv", step.kv_bytes), ("imbalance", step.imbalance_bytes))}
    compute = max(float(np.ravel(step.compute_time)[0]) - sum(read.values()), 0.0)  # the FLOPs' time past the bytes'
    collectives = float(np.ravel(step.collectives_time)[0])
    parts = {"weights": idle * read["weights"], "kv": idle * read["kv"], "compute": idle * compute,
             "collectives": collectives, "imbalance": idle * read["imbalance"]}
    return LayoutCosts("datasheet", {name: parts[name] for name in DATASHEET_COSTS})
