"""Capacity of a deployment: the KV memory each device has, the sequences it holds, s_cap, and the batch that runs.

The memory a device gives to KV is its HBM minus its weights, times a stated usable fraction (config/assumptions.yaml
usable_memory_fraction); with the fraction 1 at one device this is the paper's HBM - P w_p (SoK section 3.4).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import Model
from kvwall.model.footprint import context_holding
from kvwall.model.regimes import regime
from kvwall.model.sharding import (kv_bytes_per_device, kv_on_tensor_rank, layer_share, resident_weight_bytes_per_device,
                                   sequences_per_replica, step_weight_bytes_per_device)


def kv_memory_per_device(model: Model, d: Deployment, hbm_capacity: float, usable_fraction: float) -> float:
    """(HBM - the device's weights) x usable fraction: the bytes left for KV; negative where the weights do not fit."""
    return (hbm_capacity - resident_weight_bytes_per_device(model, d)) * usable_fraction


def sequences_that_fit(model: Model, d: Deployment, context: ArrayLike, hbm_capacity: float,
                       usable_fraction: float) -> np.ndarray:
    """Sequences of ``context`` tokens the deployment holds at once: per replica floor(KV memory / one sequence's
    KV on a device), times DP replicas; 0 where the weights do not fit."""
    free = kv_memory_per_device(model, d, hbm_capacity, usable_fraction)
    one = kv_bytes_per_device(model, d, context, 1.0)
    return np.maximum(np.floor(free / one), 0.0) * d.data_parallel


def running_batch(batch: ArrayLike, fitting: ArrayLike) -> np.ndarray:
    """The batch that actually runs: min(b, sequences that fit); the rest wait."""
    return np.minimum(np.asarray(batch, dtype=float), np.asarray(fitting, dtype=float))


def deployment_capacity_crossover(model: Model, d: Deployment, hbm_capacity: float, usable_fraction: float) -> np.ndarray:
    """s_cap of a deployment: the context at which one sequence's KV share fills a device's KV memory (SoK section
    3.4 per device); negative where the weights alone exceed the HBM."""
    on_rank, share = kv_on_tensor_rank(model, d.tensor_parallel)
    share = share * layer_share(model, d.pipeline_parallel)
    free = kv_memory_per_device(model, d, hbm_capacity, usable_fraction)
    return context_holding(on_rank, free / share, d.kv_bytes_per_element, 1.0)


def device_traffic_crossover(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """s*(b) per device: the context where a device's KV bytes per step equal its weight bytes per step (SoK
    section 3.4, Table 4, on the device's shares)."""
    on_rank, share = kv_on_tensor_rank(model, d.tensor_parallel)
    share = share * layer_share(model, d.pipeline_parallel)
    weights = step_weight_bytes_per_device(model, d, batch)
    sequences = sequences_per_replica(batch, d.data_parallel)
    return context_holding(on_rank, weights / share, d.kv_bytes_per_element, sequences)


def device_regime(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike, hbm_capacity: float,
                  usable_fraction: float) -> np.ndarray:
    """The regime of one device of the deployment (SoK sections 3.5, 5.1 on its shares): capacity-bound above its
    s_cap, else weight-bound below its s*(b) and kv-bound above."""
    s_star = device_traffic_crossover(model, d, batch)
    return regime(context, s_star, deployment_capacity_crossover(model, d, hbm_capacity, usable_fraction))
