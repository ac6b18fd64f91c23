"""SoK Table 6: the benchmark workloads, with the binding constraint derived from the regimes (sections 3.4-3.5, 5.1)."""

from __future__ import annotations

import math

from kvwall.inputs.catalog import Catalog
from kvwall.model.regimes import capacity_crossover, regime, traffic_crossover
from kvwall.render import Column, Table, keyed
from kvwall.model.roofline import resident_weight_bytes, step_weight_bytes
from kvwall.model.workloads import stored_kv_bytes


def _traffic_side(context: float, s_star: float) -> str:
    """Which bytes dominate a decode step: weight-dominated below s*(b), KV-dominated above (SoK section 3.4)."""
    return "weight-dominated" if context < s_star else "KV-dominated"


@keyed("workload_id")
def workloads(catalog: Catalog, selections: dict) -> Table:
    """Each workload's s*(b) and s_cap on the evaluation device, its regime, and the devices its bytes need."""
    a, model, device = catalog.assumptions, catalog.model, catalog.device
    resident = resident_weight_bytes(model, a.weight_bytes_per_param)
    rows = []
    for w in catalog.workloads.values():
        s_star = float(traffic_crossover(model, step_weight_bytes(model, a.weight_bytes_per_param, w.batch), a.kv_bytes_per_element, w.batch))
        s_cap = float(capacity_crossover(model, device.hbm_capacity, resident, a.kv_bytes_per_element))
        stored = float(stored_kv_bytes(model, w.batch, w.context, w.shared_prefix, a.kv_bytes_per_element))
        devices = math.ceil((resident + stored) / device.hbm_capacity)
        side = _traffic_side(w.context, s_star)
        binding = f"{w.objective[0].upper()}{w.objective[1:]}, {side}"
        if devices > 1:
            binding += f"; the batch outgrows one {device.name} ({devices} needed)"
        rows.append({
            "workload_id": w.id.upper(), "pattern": w.pattern, "batch": w.batch, "context": w.context,
            "traffic_crossover": s_star, "traffic_side": side, "capacity_crossover": s_cap,
            "batch_capacity_crossover": float(capacity_crossover(model, device.hbm_capacity, resident, a.kv_bytes_per_element, w.batch)),
            "regime": str(regime(w.context, s_star, s_cap)), "devices_needed": devices, "binding_constraint": binding,
        })
    return Table(
        id="table6_workloads",
        title=f"Table 6. Benchmark workloads and their binding constraint, {model.name} on {device.name}",
        caption="W1 and W2 isolate the batch-size lever, W3 prefix sharing, W4 reuse across sessions. Traffic: "
        "weight-dominated below s*(b), KV-dominated above. Regime: weight-bound below s*(b), kv-bound between s*(b) and "
        "s_cap, capacity-bound above s_cap, the context at which one sequence no longer fits beside the weights (SoK "
        "sections 3.5, 5.1). Above s_cap(b) = s_cap / b a batch outgrows one device and is sharded (Table 5 "
        "caption); devices needed: weights plus stored KV (prefix stored once in W3) over one device's HBM.",
        columns=(
            Column("workload_id", "ID"),
            Column("pattern", "Pattern"),
            Column("batch", "b", fmt="int"),
            Column("context", "s", fmt="context"),
            Column("traffic_crossover", "s*(b)", "derived", "tokens", "tokens"),
            Column("traffic_side", "Traffic", "derived"),
            Column("capacity_crossover", "s_cap", "derived", "capacity_tokens", "tokens"),
            Column("batch_capacity_crossover", "s_cap(b)", "derived", "capacity_tokens", "tokens"),
            Column("regime", "Regime", "derived"),
            Column("devices_needed", "Devices needed", "derived", "int", "count"),
            Column("binding_constraint", "Binding constraint", "derived"),
        ),
        rows=tuple(rows),
        sources=(catalog.files["workloads"],),
    )
