"""SoK Table 4 (traffic crossover s*(b)) and the capacity crossover s_cap per device (section 3.4)."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.model.regimes import capacity_crossover as s_cap
from kvwall.model.regimes import traffic_crossover as s_star
from kvwall.render import Column, Table, keyed
from kvwall.model.roofline import resident_weight_bytes, step_weight_bytes

_KEYS = (Column("model_id", "id", printed=False), Column("model", "Model"))


@keyed("model_id")
def traffic_crossover(catalog: Catalog, selections: dict) -> Table:
    """s*(b) = P w_p / (b 2 L n_kv d_h w_kv) per model and batch (SoK Eq. for s*, Table 4)."""
    a = catalog.assumptions
    batches = selections["table4_batches"]
    rows = []
    for model_id in selections["table4_models"]:
        m = catalog.models[model_id]
        row = {"model_id": m.id, "model": m.name}
        for b in batches:
            row[f"b{b}"] = float(s_star(m, step_weight_bytes(m, a.weight_bytes_per_param, b), a.kv_bytes_per_element, b))
        rows.append(row)
    return Table(
        id="table4_traffic_crossover",
        title="Table 4. Traffic crossover context length s*(b) in tokens",
        caption=f"s*(b) = P w_p / (b · 2 L n_kv d_h w_kv), {a.weight_dtype.upper()} weights and "
        f"{a.kv_dtype.upper()} cache (SoK section 3.4). Above the tabulated value, per-step KV traffic exceeds weight traffic.",
        columns=(*_KEYS, *(Column(f"b{b}", f"b={b}", "derived", "tokens", "tokens") for b in batches)),
        rows=tuple(rows),
    )


@keyed("model_id", "device_id")
def capacity_crossover(catalog: Catalog, selections: dict) -> Table:
    """s_cap = (HBM - P w_p) / (2 L n_kv d_h w_kv) at batch 1, per model and device (SoK section 3.4).

    Negative where the weights alone exceed the device's memory: the model cannot be loaded there.
    """
    a = catalog.assumptions
    rows = []
    for model_id in selections["capacity_models"]:
        m = catalog.models[model_id]
        weights = resident_weight_bytes(m, a.weight_bytes_per_param)
        for device_id in selections["capacity_devices"]:
            d = catalog.devices[device_id]
            rows.append({
                "model_id": m.id, "model": m.name, "device_id": d.id, "device": d.name,
                "weight_bytes": weights,
                "capacity_crossover": float(s_cap(m, d.hbm_capacity, weights, a.kv_bytes_per_element)),
            })
    return Table(
        id="capacity_crossover",
        title="Capacity crossover s_cap in tokens at batch 1",
        caption="s_cap = (HBM − P w_p) / (2 L n_kv d_h w_kv) (SoK section 3.4): the longest context one sequence can "
        "hold beside the weights; s_cap(b) = s_cap / b for full attention. Negative: the weights alone exceed HBM and "
        "the model cannot be loaded on one device. Every weight is resident, MoE experts included. Sliding-window "
        "models: solved on the footprint with window layers capped at their window "
        "(tables/derived/sliding_window_footprint).",
        columns=(
            *_KEYS,
            Column("device_id", "device id", printed=False),
            Column("device", "Device"),
            Column("weight_bytes", "Weights (GB)", "derived", "gb0", "B"),
            Column("capacity_crossover", "s_cap", "derived", "capacity_tokens", "tokens"),
        ),
        rows=tuple(rows),
    )
