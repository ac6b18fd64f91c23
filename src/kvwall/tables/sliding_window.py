"""KV footprint of sliding-window models (Gemma 3, gpt-oss): the per-token rate below and beyond the window, and one
sequence at long context against the same model with every layer global (SoK Eq. 1, layer by layer)."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.formats import format_value
from kvwall.render import Column, Table, keyed


@keyed("model_id")
def sliding_window_footprint(catalog: Catalog, selections: dict) -> Table:
    """Table 1's models that have window layers: KV per token below and beyond the window, and per sequence."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    contexts = catalog.evaluation.table5_contexts
    models = [catalog.models[m] for m in selections["table1_models"] if catalog.models[m].attention.has_window]
    rows = []
    for m in models:
        row = {"model_id": m.id, "model": m.name,
               "below_window": kv_bytes_per_token(m, w_kv), "beyond_window": kv_bytes_per_token_beyond_window(m, w_kv)}
        for s in contexts:
            row[f"kv_{s:.0f}"] = float(kv_bytes(m, s, w_kv))
            row[f"share_{s:.0f}"] = float(kv_bytes(m, s, w_kv)) / (s * kv_bytes_per_token(m, w_kv))
        rows.append(row)
    per_context = []
    for s in contexts:
        label = format_value(s, "context")
        per_context += [Column(f"kv_{s:.0f}", f"KV at {label} (GB)", "derived", "gb1", "B"),
                        Column(f"share_{s:.0f}", f"of all-global at {label}", "derived", "percent0", "ratio")]
    return Table(
        id="sliding_window_footprint",
        title="KV footprint of sliding-window models",
        caption=f"Per token at w_kv = {w_kv:g} B ({catalog.assumptions.kv_dtype}): below the window every layer caches "
        "the token (Table 1's 2 L n_kv d_h w_kv); beyond it only the full layers do, 2 L_full n_kv d_h w_kv. Per "
        "sequence: 2 n_kv d_h w_kv (L_full s + L_window min(s, W)), and its share of the same model with every layer "
        "global, at the evaluation contexts of SoK Table 5. GB = 1e9 B.",
        columns=(
            Column("model_id", "id", printed=False),
            Column("model", "Model"),
            Column("below_window", "B/token below the window", "derived", "thousands", "B"),
            Column("beyond_window", "B/token beyond it", "derived", "thousands", "B"),
            *per_context,
        ),
        rows=tuple(rows),
    )
