"""Tier economics: moving stored KV over a link against regenerating it by prefill (CANONICAL-NUMBERS §4).

A block is a run of tokens of one sequence across all layers (16 tokens of Llama-3-70B: 16 x 327,680 B). Moving
it costs bytes / link bandwidth; regenerating it costs a forward pass over its tokens at a model FLOP utilization.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.model.footprint import kv_bytes
from kvwall.model.roofline import step_flops
from kvwall.inputs.specs import Model
from kvwall.model.workloads import fetch_time, prefill_flops


def block_bytes(model: Model, tokens: float, kv_bytes_per_element: float) -> float:
    """KV bytes of ``tokens`` tokens of one sequence (SoK Eq. 1 times the block's tokens)."""
    return float(kv_bytes(model, tokens, kv_bytes_per_element))


def move_time(stored_bytes: ArrayLike, link_bandwidth: ArrayLike) -> np.ndarray:
    """Seconds to move stored KV over a link, no codec (SoK section 4.5, W4)."""
    return fetch_time(stored_bytes, link_bandwidth)


def linear_regenerate_time(model: Model, tokens: float, peak_flops: float, mfu: ArrayLike) -> np.ndarray:
    """Forward pass over ``tokens`` tokens, linear term only: 2 P per token (the attention term left out)."""
    return step_flops(model, context=0.0, batch=tokens) / (peak_flops * np.asarray(mfu, dtype=float))


def regenerate_time(model: Model, tokens: float, cached_tokens: float, peak_flops: float, mfu: ArrayLike) -> np.ndarray:
    """Causal prefill of ``tokens`` tokens after ``cached_tokens`` already cached, attention term included (SoK App. A)."""
    return prefill_flops(model, tokens, cached_tokens) / (peak_flops * np.asarray(mfu, dtype=float))
