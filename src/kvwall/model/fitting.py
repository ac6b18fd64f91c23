"""Which deployments of a model hold a batch at a context on a device, and the smallest of them.

A candidate is any layout of N devices, N = TP x PP x DP up to MAX_DEVICES, that the engines can run
(kvwall.inputs.deployment.checked_deployment): TP divides the query heads and divides or is a multiple of the KV
heads (replicated then), PP at most the layers, and for an MoE model the experts over 1 or all TP x DP devices of a
stage, dividing the routed experts (all of them under attention DP). It holds the batch when every sequence asked
for is resident at once (kvwall.model.capacity.sequences_that_fit). The smallest is the one with the fewest
devices, then the lowest step-time bound. Device counts below the weights and KV of the batch over the HBM of N
devices cannot hold it and are not tried.
"""

from __future__ import annotations

import math
from typing import Iterator

from kvwall.inputs.deployment import MAX_DEVICES, Deployment, checked_deployment
from kvwall.inputs.errors import DeploymentError
from kvwall.inputs.engines import EngineMemory
from kvwall.inputs.specs import Model, WeightFormats
from kvwall.model.capacity import sequences_that_fit
from kvwall.model.footprint import kv_bytes
from kvwall.model.roofline import resident_weight_bytes
from kvwall.model.step_time import step_time_bound
from kvwall.units import dtype_bytes


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def candidate_deployments(model: Model, weight_format: str | WeightFormats, kv_format: str,
                          devices: int) -> list[Deployment]:
    """Every valid layout of ``model`` on exactly ``devices`` devices, lowest TP, then PP, first."""
    found = []
    for tp in _divisors(devices):
        for pp in _divisors(devices // tp):
            dp = devices // (tp * pp)
            for ep in sorted({1, tp * dp} if model.moe else {1}):
                try:
                    found.append(checked_deployment(model, Deployment(devices, tp, pp, ep, dp, weight_format, kv_format)))
                except DeploymentError:
                    continue
    return found


def fewest_devices_possible(model: Model, weight_format: str | WeightFormats, kv_format: str, batch: float,
                            context: float, hbm_capacity: float) -> int:
    """A lower bound on the devices that hold the batch: its weights and KV, each held once, over one device's HBM."""
    needed = resident_weight_bytes(model, weight_format if isinstance(weight_format, WeightFormats)
                                   else dtype_bytes(weight_format))
    needed += float(kv_bytes(model, context, dtype_bytes(kv_format), batch))
    return max(1, math.ceil(needed / hbm_capacity))


def holds_batch(model: Model, d: Deployment, batch: float, context: float, hbm_capacity: float,
                memory: EngineMemory) -> bool:
    """Whether the deployment keeps all ``batch`` sequences of ``context`` tokens resident at once."""
    return bool(sequences_that_fit(model, d, context, hbm_capacity, memory) >= batch)


def holding_deployments(model: Model, weight_format: str | WeightFormats, kv_format: str, batch: float, context: float,
                        hbm_capacity: float, memory: EngineMemory, linked: bool) -> Iterator[list[Deployment]]:
    """For each device count from the fewest possible up to MAX_DEVICES (only one device where the device has no
    scale-up link: ``linked`` False), the layouts that hold the batch; counts where none does are skipped."""
    first = fewest_devices_possible(model, weight_format, kv_format, batch, context, hbm_capacity)
    for n in range(first, (MAX_DEVICES if linked else 1) + 1):
        found = [d for d in candidate_deployments(model, weight_format, kv_format, n)
                 if holds_batch(model, d, batch, context, hbm_capacity, memory)]
        if found:
            yield found


def smallest_deployment(model: Model, weight_format: str | WeightFormats, kv_format: str, batch: float, context: float,
                        hbm_capacity: float, memory: EngineMemory, linked: bool, bandwidth: float,
                        peak_flops: float) -> Deployment | None:
    """The layout with the fewest devices that holds the batch, the lowest step-time bound among them; None where
    none of up to MAX_DEVICES does."""
    for found in holding_deployments(model, weight_format, kv_format, batch, context, hbm_capacity, memory, linked):
        return min(found, key=lambda d: float(step_time_bound(model, d, context, batch, bandwidth, peak_flops)))
    return None
