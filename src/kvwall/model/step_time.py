"""Decode step time of a deployment per device, as two numbers never mixed (SoK section 3.3 per device):

- the lower bound, max(memory time, compute time) with the datasheet bandwidth and no collectives (SoK section 3.3's
  T_step = max(B / beta, F / F_peak) on the device's shares);
- the estimate, the memory time at a stated bandwidth efficiency, the busiest expert-parallel rank's expert reads
  included (kvwall.model.expert_imbalance; the bound keeps the average rank), max'ed with the compute time, plus
  every collective with no overlap.

Under PP the engines (vLLM, SGLang, TensorRT-LLM) keep microbatches in flight, one per stage: each stage reads its
weights once per microbatch and every sequence gets one token per round of all microbatches. With m = min(PP, b)
microbatches of b / m sequences, the busiest stage works m stage times per round and a round takes at least PP
stage times of one microbatch, so the time per output token is at least PP x max(memory, compute time) of one
microbatch on it: the memory and compute time of the step (every microbatch) over the stages' occupancy m / PP.
Fewer or more microbatches only lengthen it, so the bound holds under any such schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import CollectiveLink, Deployment
from kvwall.inputs.specs import Model
from kvwall.model.collectives import collective_bytes, collectives_time
from kvwall.model.sharding import (imbalance_bytes_per_step, kv_bytes_per_device, pipeline_microbatches,
                                   step_flops_per_device, weight_bytes_per_step)


@dataclass(frozen=True)
class DeviceStep:
    """One device's decode step (every microbatch once): bytes, FLOPs, the two step times, the collectives and the
    pipeline's microbatches, arrays over (s, b)."""

    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    imbalance_bytes: np.ndarray  # routed-expert bytes the busiest EP rank reads beyond the average rank's
    flops: np.ndarray
    memory_time: np.ndarray
    compute_time: np.ndarray
    collectives_time: np.ndarray
    microbatches: np.ndarray
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
    b = np.asarray(batch, dtype=float)
    microbatches = pipeline_microbatches(d, b)
    weights = weight_bytes_per_step(model, d, b)
    kv = kv_bytes_per_device(model, d, context, b)
    flops = step_flops_per_device(model, d, context, b)
    imbalance = imbalance_bytes_per_step(model, d, b)
    memory_time = (weights + kv) / bandwidth
    busiest_time = (weights + kv + imbalance) / bandwidth
    compute_time = np.asarray(flops) / peak_flops
    idle = d.pipeline_parallel / microbatches  # stages over microbatches: 1 with a microbatch per stage or without PP
    one_forward = b if d.pipeline_parallel == 1 else b / microbatches
    collectives = collectives_time(model, d, one_forward, link, latency, activation_bytes)
    return DeviceStep(
        weight_bytes=weights,
        kv_bytes=kv,
        imbalance_bytes=imbalance,
        flops=flops,
        memory_time=memory_time,
        compute_time=compute_time,
        collectives_time=collectives,
        microbatches=microbatches,
        bound=np.maximum(memory_time, compute_time) if d.pipeline_parallel == 1 else idle * np.maximum(memory_time, compute_time),
        estimate=(np.maximum(busiest_time / efficiency, compute_time) if d.pipeline_parallel == 1 else
                  idle * np.maximum(busiest_time / efficiency, compute_time)) + collectives,
    )


def step_time_bound(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike, bandwidth: float,
                    peak_flops: float) -> np.ndarray:
    """The lower bound of device_step alone, without the collectives the estimate adds."""
    b = np.asarray(batch, dtype=float)
    memory_time = (weight_bytes_per_step(model, d, b) + kv_bytes_per_device(model, d, context, b)) / bandwidth
    compute_time = np.asarray(step_flops_per_device(model, d, context, b)) / peak_flops
    return d.pipeline_parallel / pipeline_microbatches(d, b) * np.maximum(memory_time, compute_time)


def collective_bytes_per_step(model: Model, d: Deployment, batch: ArrayLike, activation_bytes: float) -> dict[str, np.ndarray]:
    """Bytes one device sends per decode step, by collective (TP, EP, PP): those of one forward
    (kvwall.model.collectives.collective_bytes) for every microbatch."""
    b = np.asarray(batch, dtype=float)
    microbatches = pipeline_microbatches(d, b)
    return {name: microbatches * sent for name, sent in collective_bytes(model, d, b / microbatches, activation_bytes).items()}


def token_rate(batch: ArrayLike, step_seconds: ArrayLike) -> np.ndarray:
    """Tokens per second of the deployment: one token per running sequence per step."""
    return np.asarray(batch, dtype=float) / np.asarray(step_seconds, dtype=float)


def format_speedup(step_now: ArrayLike, step_narrower: ArrayLike) -> np.ndarray:
    """The speedup of a narrower KV or weight format: the ratio of step times under the same deployment, so 1 where
    compute binds both (unlike the bytes-only S(c) of SoK section 3.5)."""
    return np.asarray(step_now, dtype=float) / np.asarray(step_narrower, dtype=float)
