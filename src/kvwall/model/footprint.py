"""KV-cache footprint: bytes per token (SoK Eq. 1, Table 1) and the unified footprint B_kv^eff (SoK Eq. 2).

All functions broadcast over numpy arrays of context length, batch and byte factors.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.specs import Model


def kv_bytes_per_token(model: Model, kv_bytes_per_element: ArrayLike) -> float | np.ndarray:
    """2 L n_kv d_h w_kv for MHA/GQA, L (d_c + d_r) w_kv for MLA (SoK Eq. 1, Table 1), plus an MLA indexer's keys in
    their own format; with sliding-window layers, every layer counted: the rate below the window."""
    return model.attention.kv_elements_per_token * kv_bytes_per_element + model.attention.index_bytes_per_token


def kv_bytes_per_token_beyond_window(model: Model, kv_bytes_per_element: float) -> float:
    """The rate at which the cache grows per token beyond every window: the growing layers' share of Eq. 1."""
    return model.attention.growing_part(kv_bytes_per_token(model, kv_bytes_per_element))


def kv_bytes(model: Model, context: ArrayLike, kv_bytes_per_element: ArrayLike, batch: ArrayLike = 1) -> np.ndarray:
    """KV bytes held by ``batch`` sequences of ``context`` tokens each (SoK Eq. 1 times b; a window layer holds at
    most its window), plus each sequence's constant state where state layers hold one."""
    per_token = kv_bytes_per_token(model, np.asarray(kv_bytes_per_element, dtype=float))
    b = np.asarray(batch, dtype=float)
    return b * (model.attention.cached_positions(context) * per_token + model.attention.state_bytes)


def context_holding(model: Model, kv_bytes_held: ArrayLike, kv_bytes_per_element: ArrayLike, batch: ArrayLike = 1) -> np.ndarray:
    """The context at which ``batch`` sequences hold ``kv_bytes_held`` of KV: the inverse of kv_bytes.

    B / (b 2 L n_kv d_h w_kv) for full attention, the form of both crossovers (SoK section 3.4); infinite where
    window layers alone can never hold that much. Constant state is held first. Negative bytes give a negative
    context (nothing fits).
    """
    per_token = kv_bytes_per_token(model, np.asarray(kv_bytes_per_element, dtype=float))
    b = np.asarray(batch, dtype=float)
    positions = (np.asarray(kv_bytes_held, dtype=float) - b * model.attention.state_bytes) / (b * per_token)
    return model.attention.context_caching(positions)


def effective_kv_bytes(
    model: Model,
    context: ArrayLike,
    kv_bytes_per_element: ArrayLike,
    retention: ArrayLike = 1.0,
    sharing: ArrayLike = 1.0,
    fragmentation: ArrayLike = 0.0,
) -> np.ndarray:
    """B_kv^eff(s) = 2 L n_kv d_h * w_q * r * s * sigma^-1 * (1 + phi) (SoK Eq. 2, section 2.2)."""
    return (
        kv_bytes_per_token(model, np.asarray(kv_bytes_per_element, dtype=float))
        * np.asarray(retention, dtype=float)
        * model.attention.cached_positions(context)
        / np.asarray(sharing, dtype=float)
        * (1.0 + np.asarray(fragmentation, dtype=float))
    )


def traffic_compression(baseline_bits: ArrayLike, kv_bits: ArrayLike, retention: ArrayLike = 1.0) -> np.ndarray:
    """c: the factor by which a technique cuts per-step KV reads, (w / w_q) / r (SoK section 3.5).

    Prefix sharing and paging change what is stored, not what one sequence reads per step, so they do not enter c.
    """
    return np.asarray(baseline_bits, dtype=float) / np.asarray(kv_bits, dtype=float) / np.asarray(retention, dtype=float)


def capacity_compression(
    baseline_bits: ArrayLike, kv_bits: ArrayLike, retention: ArrayLike = 1.0, sharing: ArrayLike = 1.0
) -> np.ndarray:
    """Factor by which stored KV bytes shrink: (w / w_q) / r * sigma (SoK section 2.6: 2-bit, r = 0.5, sigma = 4 gives 64)."""
    return traffic_compression(baseline_bits, kv_bits, retention) * np.asarray(sharing, dtype=float)
