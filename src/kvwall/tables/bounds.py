"""SoK Table 5: worked roofline bounds of the evaluation model and device at batch one (Eqs. for B_kv^eff, AI, S)."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import effective_kv_bytes
from kvwall.render import Column, Table, keyed
from kvwall.model.roofline import placement_bandwidth, resident_weight_bytes, step_flops, step_time, step_weight_bytes


@keyed("context", "config_id")
def roofline_bounds(catalog: Catalog, selections: dict) -> Table:
    """Per context and KV configuration: KV bytes, step bytes, T_step = B / beta, tokens/s, speedup, AI."""
    a, ev = catalog.assumptions, catalog.evaluation
    model, device = catalog.model, catalog.device
    b = ev.table5_batch
    bandwidth = placement_bandwidth(device, ev.placement)
    peak = device.dense_flops[a.compute_precision]
    weights = float(step_weight_bytes(model, a.weight_bytes_per_param, b))
    rows = []
    for context in ev.table5_contexts:
        baseline_time = None
        for config in ev.table5_rows:
            kv = b * float(effective_kv_bytes(model, context, config.kv_bits / 8.0, config.retention))
            flops_context = context if a.attention_flops_at_full_context else context * config.retention
            flops = float(step_flops(model, flops_context, b))
            t = float(step_time(flops, weights + kv, peak, bandwidth))
            baseline_time = t if baseline_time is None else baseline_time
            rows.append({
                "context": context, "config_id": config.id, "configuration": config.name, "kv_bits": config.kv_bits,
                "kv_bytes": kv, "step_bytes": weights + kv, "step_time": t, "token_rate": b / t,
                "speedup": baseline_time / t, "arithmetic_intensity": flops / (weights + kv),
                "fits_one_device": "yes" if resident_weight_bytes(model, a.weight_bytes_per_param) + kv <= device.hbm_capacity else "no",
            })
    return Table(
        id="table5_roofline_bounds",
        title=f"Table 5. Worked roofline bounds for {model.name} on {device.name} at batch {b} with {ev.placement} pages",
        caption=f"Derived quantities, not measurements. T_step = B / β with β = {bandwidth / 1e12:g} TB/s; absolute "
        "times scale with realized bandwidth and ratios do not. Speedup relative to the first (baseline) configuration "
        "at the same context. AI counts attention FLOPs over "
        + ("all s positions." if a.attention_flops_at_full_context else "the r·s retained positions."),
        columns=(
            Column("context", "Context", fmt="context"),
            Column("config_id", "id", printed=False),
            Column("configuration", "Configuration"),
            Column("kv_bits", "w_kv", fmt="bits"),
            Column("kv_bytes", "KV (GB)", "derived", "gb1", "B"),
            Column("step_bytes", "Step bytes (GB)", "derived", "gb1", "B"),
            Column("step_time", "T_step (ms)", "derived", "ms1", "s"),
            Column("token_rate", "tok/s", "derived", "fixed1", "tokens/s"),
            Column("speedup", "Speedup", "derived", "times2", "ratio"),
            Column("arithmetic_intensity", "AI", "derived", "fixed1", "FLOP/B"),
            Column("fits_one_device", f"Fits one {device.name}", "derived"),
        ),
        rows=tuple(rows),
    )
