"""Collectives a decode step needs under a deployment, in seconds: bytes over the per-GPU link plus a latency each.

Ring all-reduce under TP, dispatch and combine under EP, one send per stage boundary under PP. Link rates and the
per-collective latency are inputs (the scale-up link of config/devices.yaml, config/assumptions.yaml).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import Model
from kvwall.model.sharding import sequences_per_replica


def ring_all_reduce_bytes(message_bytes: ArrayLike, ranks: int) -> np.ndarray:
    """Bytes each of n ranks sends in a ring all-reduce of a message: 2 (n - 1) / n of it (reduce-scatter, all-gather)."""
    return 2.0 * (ranks - 1) / ranks * np.asarray(message_bytes, dtype=float)


def tensor_parallel_time(model: Model, d: Deployment, batch: ArrayLike, link_bandwidth: float, latency: float,
                         activation_bytes: float) -> np.ndarray:
    """Two all-reduces per layer (after attention and after the MLP) of the replica's b x hidden activations, over
    every layer of the pipeline: 2 L (2 (TP - 1) / TP x bytes / link + latency); 0 without TP."""
    b = np.asarray(batch, dtype=float)
    if d.tensor_parallel == 1:
        return np.zeros_like(b)
    message = sequences_per_replica(b, d.data_parallel) * model.hidden_size * activation_bytes
    return 2.0 * model.n_layers * (ring_all_reduce_bytes(message, d.tensor_parallel) / link_bandwidth + latency)


def expert_parallel_time(model: Model, d: Deployment, batch: ArrayLike, link_bandwidth: float, latency: float,
                         activation_bytes: float) -> np.ndarray:
    """Dispatch and combine in every MoE layer: each device sends its tokens' k expert activations, the (EP - 1) / EP
    of them whose experts live elsewhere; 0 without EP."""
    b = np.asarray(batch, dtype=float)
    if d.expert_parallel == 1 or model.moe is None:
        return np.zeros_like(b)
    tokens = sequences_per_replica(b, d.data_parallel) / d.tensor_parallel
    sent = tokens * model.moe.experts_per_token * model.hidden_size * activation_bytes * (d.expert_parallel - 1) / d.expert_parallel
    moe_layers = model.n_layers - model.moe.dense_layers
    return 2.0 * moe_layers * (sent / link_bandwidth + latency)


def pipeline_time(model: Model, d: Deployment, batch: ArrayLike, link_bandwidth: float, latency: float,
                  activation_bytes: float) -> np.ndarray:
    """One send of the replica's b x hidden activations per stage boundary: (PP - 1) (bytes / link + latency)."""
    b = np.asarray(batch, dtype=float)
    if d.pipeline_parallel == 1:
        return np.zeros_like(b)
    message = sequences_per_replica(b, d.data_parallel) * model.hidden_size * activation_bytes
    return (d.pipeline_parallel - 1) * (message / link_bandwidth + latency)


def collectives_time(model: Model, d: Deployment, batch: ArrayLike, link_bandwidth: float, latency: float,
                     activation_bytes: float) -> np.ndarray:
    """Seconds of every collective of one decode step, none overlapped with the others or with the step."""
    args = (model, d, batch, link_bandwidth, latency, activation_bytes)
    return tensor_parallel_time(*args) + expert_parallel_time(*args) + pipeline_time(*args)
