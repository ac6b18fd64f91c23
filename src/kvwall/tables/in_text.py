"""Numbers the paper states in its text, derived here: one long table per section, one row per number.

Each row names the quantity, its value in base units, the unit, the format the text prints it with and the equation.
"""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import capacity_compression, kv_bytes, kv_bytes_per_token, traffic_compression
from kvwall.model.regimes import speedup
from kvwall.render import Column, Table, keyed
from kvwall.model.roofline import (
    intensity_long_context_limit,
    intensity_short_context_limit,
    partition_bandwidth,
    resident_weight_bytes,
    ridge_point,
    step_kv_bytes,
    step_weight_bytes,
    striped_bandwidth,
)
from kvwall.model.workloads import fetch_time, recompute_time, sharing_factor, stored_tokens, warm_ttft_ratio

_COLUMNS = (
    Column("id", "id", printed=False),
    Column("quantity", "Quantity"),
    Column("value", "Value", "derived", "row"),
    Column("unit", "Unit", printed=False),
    Column("format", "format", printed=False),
    Column("equation", "Equation"),
)


def _row(id_: str, quantity: str, value: float, unit: str, fmt: str, equation: str) -> dict:
    return {"id": id_, "quantity": quantity, "value": float(value), "unit": unit, "format": fmt, "equation": equation}


def _table(id_: str, title: str, caption: str, rows: list[dict]) -> Table:
    return Table(id=id_, title=title, caption=caption, columns=_COLUMNS, rows=tuple(rows))


@keyed("id")
def footprint_examples(catalog: Catalog, selections: dict) -> Table:
    """SoK sections 1.2 and 2.1: bytes per token, weights, and one sequence's KV at 128k and 1M tokens."""
    a, m = catalog.assumptions, catalog.model
    k = a.tokens_per_k
    per_token = [kv_bytes_per_token(catalog.models[i], a.kv_bytes_per_element) for i in selections["spread_models"]]
    h100 = catalog.devices[selections["reference_device"]]
    million = kv_bytes(m, k * k, a.kv_bytes_per_element)
    rows = [
        _row("kv_bytes_per_token", f"{m.name} KV bytes per token", kv_bytes_per_token(m, a.kv_bytes_per_element), "B", "thousands", "2 L n_kv d_h w_kv (Eq. 1)"),
        _row("kv_mb_per_token", f"{m.name} KV per token (MB)", kv_bytes_per_token(m, a.kv_bytes_per_element), "B", "mb_per_token", "2 L n_kv d_h w_kv (Eq. 1)"),
        _row("weight_bytes", f"{m.name} weights (GB)", resident_weight_bytes(m, a.weight_bytes_per_param), "B", "gb0", "P w_p"),
        _row("kv_128k", f"KV of one {128:g}k-token sequence (GB)", kv_bytes(m, 128 * k, a.kv_bytes_per_element), "B", "gb0", "Eq. 1 × s"),
        _row("kv_1m", "KV of one 10^6-token sequence (GB)", million, "B", "gb0", "Eq. 1 × s"),
        _row("kv_1m_in_h100s", f"10^6-token KV over one {h100.name}'s HBM", million / h100.hbm_capacity, "ratio", "fixed1", "B_kv / HBM"),
        _row("table1_spread", "Largest over smallest KV bytes per token across Table 1's architectures", max(per_token) / min(per_token), "ratio", "times0", "max / min of Table 1"),
    ]
    return _table("footprint_examples", "In-text footprint numbers (SoK sections 1.2, 2.1)",
                  f"{m.name} in {a.kv_dtype.upper()}; 128k = {128 * k:,.0f} tokens.", rows)


@keyed("id")
def intensity_limits(catalog: Catalog, selections: dict) -> Table:
    """SoK sections 1.1 and 3.2: the short- and long-context limits of AI against the ridge points."""
    a, m = catalog.assumptions, catalog.model
    h100 = catalog.devices[selections["reference_device"]]
    ridge = ridge_point(h100, a.compute_precision)
    short = float(intensity_short_context_limit(1, a.weight_bytes_per_param))
    rows = [
        _row("ai_short_b1", "AI at batch 1, s → 0 (FLOP/B)", short, "FLOP/B", "int", "2b / w_p"),
        _row("ai_short_b1_over_h100_ridge", f"That AI over the {h100.name} ridge point", short / ridge, "ratio", "reciprocal", "(2b / w_p) / I*"),
        _row("h100_ridge", f"{h100.name} ridge point (FLOP/B)", ridge, "FLOP/B", "int", "F / β_agg"),
    ]
    for bits in (16, 8, 4, 2):
        floor = float(intensity_long_context_limit(m, bits / 8.0))
        rows.append(_row(f"ai_floor_{bits}bit", f"Long-context AI floor, {bits}-bit KV, g = {m.gqa_group:g} (FLOP/B)", floor, "FLOP/B", "int", "2g / w_kv"))
    floor_2bit = float(intensity_long_context_limit(m, 2 / 8.0))
    rows.append(_row("h100_ridge_over_2bit_floor", f"{h100.name} ridge over the 2-bit floor", ridge / floor_2bit, "ratio", "times1", "I* / (2g / w_kv)"))
    return _table("intensity_limits", "Arithmetic-intensity limits (SoK sections 1.1, 3.2)",
                  f"{m.name}; lim s→0 AI = 2b/w_p and lim s→∞ AI = 2g/w_kv, independent of batch.", rows)


@keyed("id")
def placement_gaps(catalog: Catalog, selections: dict) -> Table:
    """SoK section 3.3: striped over pinned bandwidth per multi-partition device, and link rates against HBM (section 2.5)."""
    rows = []
    for d in (catalog.devices[i] for i in selections["table3_devices"]):
        if d.partitions > 1:
            rows.append(_row(f"placement_gap_{d.id}", f"{d.name}: striped over pinned bandwidth", striped_bandwidth(d) / partition_bandwidth(d), "ratio", "times0", "β_striped / β_part"))
    h100 = catalog.devices[selections["reference_device"]]
    for link in catalog.links.values():
        rows.append(_row(f"hbm_over_{link.id}", f"{h100.name} HBM over {link.name}", h100.hbm_bandwidth / link.bandwidth, "ratio", "times1", "β_HBM / β_link"))
    return _table("placement_gaps", "Placement and link gaps (SoK sections 2.5, 3.3)",
                  "Bandwidth ratios that bound what placement and remote tiers can deliver.", rows)


@keyed("id")
def prefix_sharing(catalog: Catalog, selections: dict) -> Table:
    """SoK W3 and App. A: sharing factor, stored bytes and the warm-TTFT ratio from causal prefill FLOPs."""
    a, m, w = catalog.assumptions, catalog.model, catalog.workloads["w3"]
    unique = w.context - w.shared_prefix
    per_token = kv_bytes_per_token(m, a.kv_bytes_per_element)
    rows = [
        _row("sigma", "Sharing factor σ", sharing_factor(w.batch, w.shared_prefix, unique), "ratio", "fixed2", "n (p + u) / (p + n u)"),
        _row("stored_bytes", "KV stored with sharing (GB)", stored_tokens(w.batch, w.shared_prefix, unique) * per_token, "B", "gb1", "(p + n u) · Eq. 1"),
        _row("unshared_bytes", "KV stored without sharing (GB)", w.batch * w.context * per_token, "B", "gb1", "n (p + u) · Eq. 1"),
        _row("warm_ttft_ratio", "Cold over warm TTFT on a prefix hit", warm_ttft_ratio(m, w.shared_prefix, unique), "ratio", "times1", "prefill FLOPs(p + u) / prefill FLOPs(u | p cached)"),
    ]
    return _table("prefix_sharing_w3", f"W3 prefix sharing, {m.name}",
                  f"{w.batch} requests, {w.shared_prefix / a.tokens_per_k:g}k shared prefix p plus {unique / a.tokens_per_k:g}k unique u each.", rows)


@keyed("id")
def reuse(catalog: Catalog, selections: dict) -> Table:
    """SoK section 4.5, W4: recomputing a context's KV by prefill against fetching it over a link, with and without a codec."""
    a, m, d, w = catalog.assumptions, catalog.model, catalog.device, catalog.workloads["w4"]
    codec = catalog.techniques["cachegen"].codec
    kv = kv_bytes(m, w.context, a.kv_bytes_per_element)
    recompute = float(recompute_time(m, w.context, d.dense_flops[a.compute_precision], a.prefill_mfu))
    rows = [_row("recompute", f"Recompute {w.context / a.tokens_per_k:g}k KV on {d.name} (s)", recompute, "s", "fixed1", "prefill FLOPs / (F · MFU)")]
    fetches = {}
    for link in catalog.links.values():
        for factor, suffix, label in ((1.0, "", ""), (codec, "_codec", f" with {codec:g}× codec")):
            t = float(fetch_time(kv, link.bandwidth, factor))
            fetches[f"{link.id}{suffix}"] = t
            rows.append(_row(f"fetch_{link.id}{suffix}", f"Fetch over {link.name}{label} (s)", t, "s", "fixed2", "B_kv / (β_link · codec)"))
    for key, t in fetches.items():
        rows.append(_row(f"speedup_{key}", f"Recompute over fetch, {key}", recompute / t, "ratio", "two_significant", "T_recompute / T_fetch"))
    return _table("reuse_w4", f"W4 reuse economics, {m.name} on {d.name}",
                  f"Prefill model FLOP utilization {a.prefill_mfu:g} (assumption); causal attention FLOPs counted exactly.", rows)


@keyed("id")
def combinations(catalog: Catalog, selections: dict) -> Table:
    """SoK sections 2.6, 3.5 and 4.6: how byte factors combine, and the same compression on either side of s*."""
    a, m = catalog.assumptions, catalog.model
    w2, w3 = catalog.workloads["w2"], catalog.workloads["w3"]
    k = a.tokens_per_k
    sigma_w3 = float(sharing_factor(w3.batch, w3.shared_prefix, w3.context - w3.shared_prefix))
    weights_b1 = step_weight_bytes(m, a.weight_bytes_per_param, 1)
    below = float(speedup(weights_b1, step_kv_bytes(m, 128 * k, 1, a.kv_bytes_per_element), 8))
    above = float(speedup(weights_b1, step_kv_bytes(m, 512 * k, 1, a.kv_bytes_per_element), 8))
    weights_w2 = step_weight_bytes(m, a.weight_bytes_per_param, w2.batch)
    rows = [
        _row("footprint_2bit_r05_sigma4", "Footprint of 2-bit + r = 0.5 + σ = 4", 1 / float(capacity_compression(a.kv_bits, 2, 0.5, 4)), "ratio", "reciprocal", "w_q/w · r / σ (Eq. 2)"),
        _row("capacity_2bit_r05_sigma_w3", "Capacity gain of 2-bit + r = 0.5 + σ(W3)", capacity_compression(a.kv_bits, 2, 0.5, sigma_w3), "ratio", "times0", "(w/w_q) / r · σ"),
        _row("decode_2bit_r05_w2", "W2 decode speedup of 2-bit + r = 0.5", speedup(weights_w2, step_kv_bytes(m, w2.context, w2.batch, a.kv_bytes_per_element), traffic_compression(a.kv_bits, 2, 0.5)), "ratio", "times1", "S(c), c = (w/w_q)/r"),
        _row("speedup_2bit_128k_b1", "2-bit speedup at b = 1, s = 128k (below s*)", below, "ratio", "times2", "S(8)"),
        _row("speedup_2bit_512k_b1", "2-bit speedup at b = 1, s = 512k (above s*)", above, "ratio", "times2", "S(8)"),
        _row("speedup_gain_across_crossover", "Gain of the same 2-bit cache across the crossover", above / below - 1.0, "ratio", "percent0", "S(512k) / S(128k) − 1"),
    ]
    return _table("combinations", "Combining domains (SoK sections 2.6, 3.5, 4.6)",
                  f"{m.name}; byte factors multiply, quality costs do not (joint validation needed).", rows)
