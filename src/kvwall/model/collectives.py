"""Collectives a decode step needs under a deployment: the bytes one device sends, and the seconds they take over the
per-device link plus a latency each.

Ring all-reduce under TP, dispatch and combine under EP with attention DP, one send per stage boundary under PP; each
for one forward of ``batch`` tokens (under PP a microbatch, kvwall.model.step_time). Without attention DP every rank
of the TP group holds every token after attention's all-reduce, computes its own experts' share of them, and the MLP's
all-reduce sums the experts' outputs: no dispatch (vLLM's FusedMoE runs its all-to-all kernels only where DP > 1,
TensorRT-LLM's fused MoE its all-to-all only under attention DP). EP sends the average rank's share of the
activations: the all-to-all waits for the busiest rank, which this time does not price. Devices are numbered
TP fastest, then DP, then PP, and fill one scale-up domain after another; what a collective sends inside its
domain goes at the scale-up rate, what it sends past it at the scale-out rate (kvwall.inputs.deployment
CollectiveLink: the scale-up link of config/devices.yaml, the fabric of config/device_assumptions.yaml, the
latency of config/assumptions.yaml).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import CollectiveLink, Deployment
from kvwall.inputs.specs import Model
from kvwall.model.sharding import sequences_per_replica


class DomainError(ValueError):
    """A collective leaves the scale-up domain of a device whose fabric states no scale-out link."""


def _scale_out(link: CollectiveLink, group: int, what: str) -> float:
    """The scale-out rate of a collective of ``group`` devices that leaves its domain; DomainError where none is stated."""
    if link.fabric.scale_out is None:
        raise DomainError(f"{what} spans {group} devices, past the {link.fabric.domain} that {link.name} connects, and "
                          "no scale-out link is stated for them (config/device_assumptions.yaml fabric.scale_out)")
    return link.fabric.scale_out


def ring_all_reduce_bytes(message_bytes: ArrayLike, ranks: int) -> np.ndarray:
    """Bytes each of n ranks sends in a ring all-reduce of a message: 2 (n - 1) / n of it (reduce-scatter, all-gather)."""
    return 2.0 * (ranks - 1) / ranks * np.asarray(message_bytes, dtype=float)


def tensor_parallel_time(model: Model, d: Deployment, batch: ArrayLike, link: CollectiveLink, latency: float,
                         activation_bytes: float) -> np.ndarray:
    """Two all-reduces per layer (after attention and after the MLP) of the replica's b x hidden activations, over
    every layer of the pipeline: 2 L (2 (TP - 1) / TP x bytes / link + latency); 0 without TP. A ring that leaves
    its scale-up domain runs at the scale-out rate, its slowest hop."""
    b = np.asarray(batch, dtype=float)
    if d.tensor_parallel == 1:
        return np.zeros_like(b)
    tp = d.tensor_parallel
    rate = link.bandwidth if link.within_domain(tp) else _scale_out(link, tp, f"TP {tp}")
    message = sequences_per_replica(b, d.data_parallel) * model.hidden_size * activation_bytes
    return 2.0 * model.n_layers * (ring_all_reduce_bytes(message, tp) / rate + latency)


def expert_parallel_time(model: Model, d: Deployment, batch: ArrayLike, link: CollectiveLink, latency: float,
                         activation_bytes: float) -> np.ndarray:
    """Dispatch and combine in every MoE layer: each device sends its tokens' k expert activations, the (EP - 1) / EP
    of them whose experts live elsewhere; 0 without EP or without attention DP (the TP all-reduce combines). Where EP leaves the scale-up domain of D devices, the
    (EP - D) / EP bound for other domains go at the scale-out rate while the (D - 1) / EP stay on the scale-up link,
    and the slower of the two sets the time."""
    b = np.asarray(batch, dtype=float)
    ep = d.expert_parallel
    if ep == 1 or model.moe is None or d.data_parallel == 1:
        return np.zeros_like(b)
    tokens = sequences_per_replica(b, d.data_parallel) / d.tensor_parallel
    activations = tokens * model.moe.experts_per_token * model.hidden_size * activation_bytes
    moe_layers = model.n_layers - model.moe.dense_layers
    if link.within_domain(ep):
        return 2.0 * moe_layers * (activations * (ep - 1) / ep / link.bandwidth + latency)
    domain = link.fabric.domain
    inside = activations * (domain - 1) / ep / link.bandwidth
    outside = activations * (ep - domain) / ep / _scale_out(link, ep, f"EP {ep}")
    return 2.0 * moe_layers * (np.maximum(inside, outside) + latency)


def stage_boundaries_past_domain(d: Deployment, link: CollectiveLink) -> int:
    """How many of the PP - 1 stage boundaries fall between two scale-up domains: the boundary before stage s, at
    device s x TP x DP, where that device opens a new domain."""
    if link.fabric is None:
        return 0
    stage = d.tensor_parallel * d.data_parallel
    return sum(1 for s in range(1, d.pipeline_parallel) if (s * stage) % link.fabric.domain == 0)


def leaves_domain(model: Model, d: Deployment, link: CollectiveLink) -> bool:
    """Whether any collective of the deployment sends past a scale-up domain: a TP ring or an EP group larger than
    one, or a stage boundary between two."""
    experts = model.moe is not None and d.expert_parallel > 1
    return (not link.within_domain(d.tensor_parallel) or (experts and not link.within_domain(d.expert_parallel))
            or stage_boundaries_past_domain(d, link) > 0)


def pipeline_time(model: Model, d: Deployment, batch: ArrayLike, link: CollectiveLink, latency: float,
                  activation_bytes: float) -> np.ndarray:
    """One send of the replica's b x hidden activations per stage boundary: (PP - 1) (bytes / link + latency), the
    boundaries between domains over the scale-out link."""
    b = np.asarray(batch, dtype=float)
    if d.pipeline_parallel == 1:
        return np.zeros_like(b)
    message = sequences_per_replica(b, d.data_parallel) * model.hidden_size * activation_bytes
    past = stage_boundaries_past_domain(d, link)
    inside = (d.pipeline_parallel - 1 - past) * (message / link.bandwidth + latency)
    if past == 0:
        return inside
    return inside + past * (message / _scale_out(link, d.devices, f"PP {d.pipeline_parallel}") + latency)


def collectives_time(model: Model, d: Deployment, batch: ArrayLike, link: CollectiveLink, latency: float,
                     activation_bytes: float) -> np.ndarray:
    """Seconds of every collective of one forward through the pipeline, none overlapped with the others or with the
    step."""
    args = (model, d, batch, link, latency, activation_bytes)
    return tensor_parallel_time(*args) + expert_parallel_time(*args) + pipeline_time(*args)


def collective_bytes(model: Model, d: Deployment, batch: ArrayLike, activation_bytes: float) -> dict[str, np.ndarray]:
    """Bytes one device of the busiest stage sends in one forward of ``batch`` tokens, by collective: its layers' TP
    all-reduces, 2 ceil(L / PP) x 2 (TP - 1) / TP of ceil(b / DP) x hidden activations; EP dispatch and combine of
    its MoE layers under attention DP, 2 x k activations of its tokens, the (EP - 1) / EP bound elsewhere; one send of the replica's
    activations to the next stage."""
    b = np.asarray(batch, dtype=float)
    stage = math.ceil(model.n_layers / d.pipeline_parallel) / model.n_layers
    message = sequences_per_replica(b, d.data_parallel) * model.hidden_size * activation_bytes
    tp = 2.0 * model.n_layers * stage * ring_all_reduce_bytes(message, d.tensor_parallel)
    ep = np.zeros_like(b)
    if model.moe is not None and d.expert_parallel > 1 and d.data_parallel > 1:
        tokens = sequences_per_replica(b, d.data_parallel) / d.tensor_parallel
        moe_layers = (model.n_layers - model.moe.dense_layers) * stage
        ep = 2.0 * moe_layers * tokens * model.moe.experts_per_token * model.hidden_size * activation_bytes * (
            (d.expert_parallel - 1) / d.expert_parallel)
    pp = message if d.pipeline_parallel > 1 else np.zeros_like(b)
    return {"TP": tp, "EP": ep, "PP": pp}
