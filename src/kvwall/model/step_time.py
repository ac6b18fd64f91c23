"""Decode step time of a deployment per device, as two numbers never mixed (SoK section 3.3 per device):

- the lower bound, max(memory time, compute time) with the datasheet bandwidth and no collectives (SoK section 3.3's
  T_step = max(B / beta, F / F_peak) on the device's shares);
- the estimate, the memory time at a stated bandwidth efficiency, max'ed with the compute time, plus every
  collective with no overlap.

Under PP the stages run one after the other for a batch, so both take PP stage times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import CollectiveLink, Deployment
from kvwall.inputs.specs import Model
from kvwall.model.collectives import collectives_time
from kvwall.model.sharding import kv_bytes_per_device, step_flops_per_device, step_weight_bytes_per_device


@dataclass(frozen=True)
class DeviceStep:
    """One device's decode step: bytes, FLOPs, the two step times and the collectives, arrays over (s, b)."""

    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    flops: np.ndarray
    memory_time: np.ndarray
    compute_time: np.ndarray
    collectives_time: np.ndarray
    bound: np.ndarray
    estimate: np.ndarray

    @property
    def compute_bound(self) -> np.ndarray:
        """Where the FLOPs over the dense peak take longer than the bytes over the datasheet bandwidth."""
        return self.compute_time > self.memory_time


def device_step(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike, bandwidth: float, peak_flops: float,
                link: CollectiveLink, latency: float, activation_bytes: float, efficiency: float) -> DeviceStep:
    """The decode step of ``batch`` sequences of ``context`` tokens on one device of the deployment; ``link`` carries
    its collectives (kvwall.inputs.deployment.NO_LINK for one device)."""
    weights = step_weight_bytes_per_device(model, d, batch)
    kv = kv_bytes_per_device(model, d, context, batch)
    flops = step_flops_per_device(model, d, context, batch)
    memory_time = (weights + kv) / bandwidth
    compute_time = np.asarray(flops) / peak_flops
    collectives = collectives_time(model, d, batch, link, latency, activation_bytes)
    stages = d.pipeline_parallel
    return DeviceStep(
        weight_bytes=weights,
        kv_bytes=kv,
        flops=flops,
        memory_time=memory_time,
        compute_time=compute_time,
        collectives_time=collectives,
        bound=stages * np.maximum(memory_time, compute_time),
        estimate=stages * np.maximum(memory_time / efficiency, compute_time) + collectives,
    )


def token_rate(batch: ArrayLike, step_seconds: ArrayLike) -> np.ndarray:
    """Tokens per second of the deployment: one token per running sequence per step."""
    return np.asarray(batch, dtype=float) / np.asarray(step_seconds, dtype=float)


def format_speedup(step_now: ArrayLike, step_narrower: ArrayLike) -> np.ndarray:
    """The speedup of a narrower KV or weight format: the ratio of step times under the same deployment, so 1 where
    compute binds both (unlike the bytes-only S(c) of SoK section 3.5)."""
    return np.asarray(step_now, dtype=float) / np.asarray(step_narrower, dtype=float)
