"""Traffic and capacity crossovers, the three regimes and the speedup law (SoK sections 3.4-3.5, 5.1)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.model.footprint import context_holding
from kvwall.inputs.specs import Model

WEIGHT_BOUND = "weight-bound"
KV_BOUND = "kv-bound"
CAPACITY_BOUND = "capacity-bound"
REGIMES = (WEIGHT_BOUND, KV_BOUND, CAPACITY_BOUND)
_REGIME_NAMES = np.array(REGIMES)


def traffic_crossover(model: Model, weight_bytes: ArrayLike, kv_bytes_per_element: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """s*(b) = P w_p / (b 2 L n_kv d_h w_kv): the context where per-step KV bytes equal weight bytes (SoK section 3.4,
    Table 4); past a sliding window, where the piecewise footprint reaches them (kvwall.model.footprint.context_holding)."""
    return context_holding(model, weight_bytes, kv_bytes_per_element, batch)


def capacity_crossover(
    model: Model, memory_bytes: ArrayLike, weight_bytes: ArrayLike, kv_bytes_per_element: ArrayLike, batch: ArrayLike = 1
) -> np.ndarray:
    """s_cap(b) = (HBM - P w_p) / (b 2 L n_kv d_h w_kv) (SoK section 3.4), solved on the footprint as s*(b) is.

    Negative where the weights alone exceed the memory: the model cannot be loaded on that device.
    """
    free = np.asarray(memory_bytes, dtype=float) - np.asarray(weight_bytes, dtype=float)
    return context_holding(model, free, kv_bytes_per_element, batch)


def regime_index(context: ArrayLike, traffic_crossover_tokens: ArrayLike, capacity_crossover_tokens: ArrayLike) -> np.ndarray:
    """The regime of each point as its index in REGIMES (0 weight-, 1 KV-, 2 capacity-bound): the rule of ``regime``,
    one byte per point for grids too large for names."""
    s = np.asarray(context, dtype=float)
    above_capacity = s > np.asarray(capacity_crossover_tokens, dtype=float)
    below_traffic = s < np.asarray(traffic_crossover_tokens, dtype=float)
    return np.where(above_capacity, np.int8(2), np.int8(1) - below_traffic.view(np.int8))


def regime(context: ArrayLike, traffic_crossover_tokens: ArrayLike, capacity_crossover_tokens: ArrayLike) -> np.ndarray:
    """Weight-bound below s*(b), KV-bound between s*(b) and s_cap, capacity-bound above s_cap (SoK sections 3.5, 5.1).

    ``capacity_crossover_tokens`` is s_cap of one sequence (b = 1): above it not even one sequence fits beside the
    weights and "batching itself is impossible" (section 3.5). A batch that outgrows one device below s_cap is
    realized by sharding (Table 5 caption) and stays in its traffic regime. Capacity binds first: a context above
    s_cap (or any context where s_cap < 0) is capacity-bound whatever s* is.
    """
    return _REGIME_NAMES[regime_index(context, traffic_crossover_tokens, capacity_crossover_tokens)]


def speedup(weight_bytes: ArrayLike, kv_bytes: ArrayLike, compression: ArrayLike) -> np.ndarray:
    """S(c) = (W + K) / (W + K / c): decode speedup from cutting KV reads by c, memory-bound (SoK section 3.5).

    Tends to 1 when W >> K (below the crossover) and to c when K >> W (above it); 1 <= S <= c for c >= 1.
    """
    w = np.asarray(weight_bytes, dtype=float)
    k = np.asarray(kv_bytes, dtype=float)
    return (w + k) / (w + k / np.asarray(compression, dtype=float))
