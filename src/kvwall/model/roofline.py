"""Decode-step roofline: bytes and FLOPs per step, arithmetic intensity, ridge, step time (SoK sections 3.1-3.3, Table 8)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.model.footprint import kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.model.params import published_routed_params, weight_part_params
from kvwall.inputs.specs import EXPERTS, Device, Model, WeightFormats
from kvwall.units import dtype_bytes

#: The weights' storage: the paper's one width w_p in bytes, or a format per part (kvwall.inputs.specs.WeightFormats).
Weights = float | WeightFormats


def _one_width(weights: Weights) -> float | None:
    """w_p where every weight has one width (the paper's frame), else None."""
    if not isinstance(weights, WeightFormats):
        return weights
    return None if weights.single is None else dtype_bytes(weights.single)


def experts_touched_fraction(model: Model, batch: ArrayLike) -> np.ndarray:
    """Expected fraction of routed experts a batch of b tokens reads, 1 - (1 - k/E)^b, under uniform routing.

    1 for a dense model. The uniform-routing assumption is stated in config/assumptions.yaml.
    """
    b = np.asarray(batch, dtype=float)
    if model.moe is None:
        return np.ones_like(b)
    p_miss = 1.0 - model.moe.experts_per_token / model.moe.routed_experts
    return 1.0 - p_miss**b


def resident_weight_bytes(model: Model, weight_bytes_per_param: Weights) -> float:
    """P w_p: the bytes every weight occupies in memory, all MoE experts included (SoK section 1.2: 140 GB); with a
    format per part, each part's parameters (kvwall.model.params.weight_part_params) at its own width."""
    width = _one_width(weight_bytes_per_param)
    if width is not None:
        return model.params_nominal * width
    parts = weight_part_params(model)
    return float(sum(parts[part] * dtype_bytes(f) for part, f in weight_bytes_per_param.given.items()))


def step_weight_bytes(model: Model, weight_bytes_per_param: Weights, batch: ArrayLike = 1) -> np.ndarray:
    """Weight bytes read per decode step: P w_p, read once whatever the batch (SoK section 3.1).

    For an MoE model only the experts the batch touches are read: the always-active weights plus the touched
    fraction of the routed experts. With a format per part, each part at its own width.
    """
    width = _one_width(weight_bytes_per_param)
    if width is not None:
        routed = published_routed_params(model)
        touched = routed * experts_touched_fraction(model, batch)
        return (model.params_nominal - routed + touched) * width
    parts, formats = weight_part_params(model), weight_bytes_per_param
    always = sum(parts[part] * dtype_bytes(f) for part, f in formats.given.items() if part != EXPERTS)
    experts = parts[EXPERTS] * dtype_bytes(formats.experts) if formats.experts else 0.0
    return always + experts * experts_touched_fraction(model, batch)


def active_params_per_token(model: Model) -> float:
    """Parameters one token multiplies through: P for a dense model, the always-active weights plus k of the E
    routed experts for MoE (kvwall.model.params.published_routed_params)."""
    routed = published_routed_params(model)
    if model.moe is None:
        return model.params_nominal
    return model.params_nominal - routed + routed * model.moe.experts_per_token / model.moe.routed_experts


def routed_active_params(model: Model) -> float:
    """Of active_params_per_token, the routed experts' k of E (0 for a dense model): what a token multiplies through
    on the experts' ranks rather than its own."""
    return active_params_per_token(model) - (model.params_nominal - published_routed_params(model))


def step_kv_bytes(model: Model, context: ArrayLike, batch: ArrayLike, kv_bytes_per_element: ArrayLike) -> np.ndarray:
    """KV bytes read per decode step: b * 2 L n_kv d_h s w_kv, one read of every cached byte (SoK section 3.1, Table 8)."""
    return kv_bytes(model, context, kv_bytes_per_element, batch)


def step_flops(model: Model, context: ArrayLike, batch: ArrayLike, include_softmax: bool = False) -> np.ndarray:
    """FLOPs per decode step: b (2P + 4 L n_q d_h s), plus 3 L n_q s per sequence for the softmax (SoK Table 8);
    a window layer attends to at most its window, so s counts the positions cached (kvwall.inputs.specs)."""
    s = model.attention.cached_positions(context)
    per_sequence = 2.0 * active_params_per_token(model) + model.attention.decode_attention_flops(context)
    if include_softmax:
        per_sequence = per_sequence + 3.0 * model.n_layers * model.n_q_heads * s
    return np.asarray(batch, dtype=float) * per_sequence


def arithmetic_intensity(
    model: Model,
    context: ArrayLike,
    batch: ArrayLike,
    weight_bytes_per_param: Weights,
    kv_bytes_per_element: ArrayLike,
) -> np.ndarray:
    """AI(s, b) = b (2P + 4 L n_q d_h s) / (P w_p + 2 b L n_kv d_h s w_kv) in FLOP/B (SoK section 3.1)."""
    flops = step_flops(model, context, batch)
    moved = step_weight_bytes(model, weight_bytes_per_param, batch) + step_kv_bytes(
        model, context, batch, kv_bytes_per_element
    )
    return flops / moved


def intensity_short_context_limit(batch: ArrayLike, weight_bytes_per_param: float) -> np.ndarray:
    """lim_{s->0} AI(s, b) = 2b / w_p (SoK section 3.2); for a dense model."""
    return 2.0 * np.asarray(batch, dtype=float) / weight_bytes_per_param


def intensity_long_context_limit(model: Model, kv_bytes_per_element: ArrayLike) -> np.ndarray:
    """lim_{s->inf} AI(s, b) = 2 n_q / (n_kv w_kv) = 2g / w_kv, independent of batch (SoK section 3.2)."""
    per_position_flops = model.attention.attention_flops_per_position
    per_position_bytes = kv_bytes_per_token(model, np.asarray(kv_bytes_per_element, dtype=float))
    return per_position_flops / per_position_bytes


def ridge_point(device: Device, precision: str) -> float:
    """I* = F / beta_agg in FLOP/B, against dense compute at ``precision`` (SoK Table 3)."""
    return device.dense_flops[precision] / device.hbm_bandwidth


def step_time(flops: ArrayLike, moved_bytes: ArrayLike, peak_flops: float, bandwidth: ArrayLike) -> np.ndarray:
    """Roofline step time max(B / beta, F / F_peak) (SoK section 3.3: T_step >= B / beta)."""
    return np.maximum(np.asarray(moved_bytes, dtype=float) / np.asarray(bandwidth, dtype=float), np.asarray(flops) / peak_flops)


def partition_bandwidth(device: Device) -> float:
    """beta_part = beta_agg / (dies or stacks): the rate one partition's memory serves (SoK Table 3)."""
    return device.hbm_bandwidth / device.partitions


def striped_bandwidth(device: Device) -> float:
    """Effective bandwidth with pages striped over every partition (SoK section 3.3).

    A fraction (n - 1) / n of all reads crosses the package fabric; the fabric caps the aggregate at
    fabric * n / (n - 1). Where the fabric rate is undisclosed (MI300X) the aggregate is an upper bound.
    """
    n = device.partitions
    if n == 1 or device.die_to_die_bandwidth is None:
        return device.hbm_bandwidth
    return min(device.hbm_bandwidth, device.die_to_die_bandwidth * n / (n - 1))


def pinned_bandwidth(device: Device) -> float:
    """Effective bandwidth with a sequence's pages pinned to one partition: beta_part (SoK section 3.3)."""
    return partition_bandwidth(device)


def placement_bandwidth(device: Device, placement: str) -> float:
    """Effective bandwidth of a placement policy, ``striped`` or ``pinned`` (SoK section 3.3)."""
    policies = {"striped": striped_bandwidth, "pinned": pinned_bandwidth}
    return policies[placement](device)


def token_rate_ceiling(model: Model, bandwidth: ArrayLike, kv_bytes_per_element: float) -> np.ndarray:
    """R_inf = beta_eff / (2 L n_kv d_h w_kv), long-context tokens per second (SoK section 3.3, Corollary 1); the
    per-token bytes are those that keep growing past any sliding window."""
    return np.asarray(bandwidth, dtype=float) / kv_bytes_per_token_beyond_window(model, kv_bytes_per_element)
