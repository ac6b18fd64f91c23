"""Capacity of a deployment: the KV memory each device has, the sequences it holds, s_cap, and the batch that runs.

The memory a device gives to KV is what its serving engine's rule leaves beside the weights (kvwall.inputs.engines,
kvwall.model.engine_memory): f x HBM - weights for vLLM and SGLang, f x (HBM - weights) for TensorRT-LLM. The
paper's frame is HBM - P w_p at one device (SoK section 3.4), kvwall.model.regimes.capacity_crossover.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.engines import EngineMemory
from kvwall.inputs.specs import Model
from kvwall.model.engine_memory import kv_memory
from kvwall.model.regimes import regime
from kvwall.model.sharding import (context_holding_per_device, kv_bytes_per_device, resident_weight_bytes_per_device,
                                   weight_bytes_per_step)


def kv_memory_per_device(model: Model, d: Deployment, hbm_capacity: float, memory: EngineMemory) -> float:
    """The bytes the engine's rule leaves for KV on a device of the deployment; negative where the weights do not fit."""
    return float(kv_memory(memory, hbm_capacity, resident_weight_bytes_per_device(model, d), d))


def weights_fit(model: Model, d: Deployment, hbm_capacity: float, memory: EngineMemory) -> bool:
    """Whether the engine's rule leaves any KV memory beside a device's weights."""
    return kv_memory_per_device(model, d, hbm_capacity, memory) > 0.0


def sequences_that_fit(model: Model, d: Deployment, context: ArrayLike, hbm_capacity: float,
                       memory: EngineMemory) -> np.ndarray:
    """Sequences of ``context`` tokens the deployment holds at once: per replica floor(KV memory / one sequence's
    KV on a device), times DP replicas; 0 where the weights do not fit."""
    free = kv_memory_per_device(model, d, hbm_capacity, memory)
    one = kv_bytes_per_device(model, d, context, 1.0)
    return np.maximum(np.floor(free / one), 0.0) * d.data_parallel


def running_batch(batch: ArrayLike, fitting: ArrayLike) -> np.ndarray:
    """The batch that actually runs: min(b, sequences that fit); the rest wait."""
    return np.minimum(np.asarray(batch, dtype=float), np.asarray(fitting, dtype=float))


def deployment_capacity_crossover(model: Model, d: Deployment, hbm_capacity: float, memory: EngineMemory,
                                  batch: ArrayLike = 1.0) -> np.ndarray:
    """s_cap(b) of a deployment: the context at which b sequences' KV (ceil(b / DP) per replica) fills a device's
    KV memory (SoK section 3.4 per device); negative where the weights alone exceed it."""
    free = kv_memory_per_device(model, d, hbm_capacity, memory)
    return context_holding_per_device(model, d, free, batch)


def device_traffic_crossover(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """s*(b) per device: the context where a device's KV bytes per step equal its weight bytes per step (SoK
    section 3.4, Table 4, on the device's shares; under PP the weights once per microbatch)."""
    return context_holding_per_device(model, d, weight_bytes_per_step(model, d, batch), batch)


def device_regime(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike, hbm_capacity: float,
                  memory: EngineMemory) -> np.ndarray:
    """The bytes regime of one device of the deployment (SoK sections 3.5, 5.1 on its shares): capacity-bound above
    its s_cap, else weight-bound below its s*(b) and kv-bound above."""
    s_star = device_traffic_crossover(model, d, batch)
    return regime(context, s_star, deployment_capacity_crossover(model, d, hbm_capacity, memory))
