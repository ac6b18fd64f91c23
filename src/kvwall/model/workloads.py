"""Workload economics: prefix sharing (W3) and reuse by fetch versus recompute (W4) (SoK sections 4.4-4.5, App. A)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.model.footprint import kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.model.roofline import active_params_per_token
from kvwall.inputs.specs import Model


def sharing_factor(requests: ArrayLike, shared_tokens: ArrayLike, unique_tokens: ArrayLike) -> np.ndarray:
    """sigma = logical tokens / stored tokens = n (p + u) / (p + n u) for n requests sharing a prefix p (SoK W3)."""
    n = np.asarray(requests, dtype=float)
    p = np.asarray(shared_tokens, dtype=float)
    u = np.asarray(unique_tokens, dtype=float)
    return n * (p + u) / (p + n * u)


def stored_tokens(requests: ArrayLike, shared_tokens: ArrayLike, unique_tokens: ArrayLike) -> np.ndarray:
    """Tokens stored with prefix deduplication: the prefix once, each unique suffix once (SoK W3)."""
    return np.asarray(shared_tokens, dtype=float) + np.asarray(requests, dtype=float) * np.asarray(unique_tokens, dtype=float)


def stored_kv_bytes(model: Model, requests: ArrayLike, context: ArrayLike, shared_tokens: ArrayLike,
                    kv_bytes_per_element: float) -> np.ndarray:
    """KV bytes ``requests`` sequences of ``context`` tokens store when their first ``shared_tokens`` are stored once
    (SoK W3). Full layers store the prefix once and every suffix; a window layer stores each sequence's own last
    min(s, W) tokens, so only full layers gain from sharing; constant state is held per sequence."""
    full_rate = kv_bytes_per_token_beyond_window(model, kv_bytes_per_element)
    window_rate = kv_bytes_per_token(model, kv_bytes_per_element) - full_rate
    s = np.asarray(context, dtype=float)
    tokens = stored_tokens(requests, shared_tokens, s - np.asarray(shared_tokens, dtype=float))
    window = model.attention.window if model.attention.has_window else 0.0
    n = np.asarray(requests, dtype=float)
    return tokens * full_rate + n * np.minimum(s, window) * window_rate + n * model.attention.state_bytes


def prefill_flops(model: Model, new_tokens: ArrayLike, cached_tokens: ArrayLike = 0.0) -> np.ndarray:
    """Causal prefill FLOPs for ``new_tokens`` appended after ``cached_tokens`` already in the cache (SoK App. A).

    Linear term 2P per new token; attention term sum_i 4 L n_q d_h i over positions i = cached .. cached + new,
    that is 2 L n_q d_h ((cached + new)^2 - cached^2) for full attention (a window layer attends to min(i, W)).
    """
    n = np.asarray(new_tokens, dtype=float)
    attention = model.attention.prefill_attention_flops(cached_tokens, n)
    return 2.0 * active_params_per_token(model) * n + attention


def warm_ttft_ratio(model: Model, shared_tokens: ArrayLike, unique_tokens: ArrayLike) -> np.ndarray:
    """Cold over warm time to first token when the shared prefix is cached: prefill FLOPs ratio (SoK App. A, W3)."""
    total = np.asarray(shared_tokens, dtype=float) + np.asarray(unique_tokens, dtype=float)
    return prefill_flops(model, total) / prefill_flops(model, unique_tokens, shared_tokens)


def recompute_time(model: Model, context: ArrayLike, peak_flops: float, utilization: float) -> np.ndarray:
    """Seconds to regenerate a context's KV by prefill at a model FLOP utilization (SoK section 4.5, W4)."""
    return prefill_flops(model, context) / (peak_flops * utilization)


def fetch_time(kv_bytes: ArrayLike, link_bandwidth: ArrayLike, codec: ArrayLike = 1.0) -> np.ndarray:
    """Seconds to fetch stored KV over a link, optionally through a codec of ratio ``codec`` (SoK section 4.5, W4)."""
    return np.asarray(kv_bytes, dtype=float) / (np.asarray(link_bandwidth, dtype=float) * np.asarray(codec, dtype=float))
