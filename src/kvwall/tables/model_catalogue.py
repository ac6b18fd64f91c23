"""Every catalogue model with its per-layer cache kinds and per-token KV bytes (SoK Eq. 1, layer by layer)."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Model
from kvwall.model.footprint import kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.render import Column, Table, keyed


def _layer_kinds(model: Model) -> str:
    """Each group as layers x kind, with its span or latent width: 18 x window 128 + 18 x full."""
    parts = []
    for g in model.attention.groups:
        detail = f" {g.span:g}" if g.span else f" {g.latent_dim}" if g.kind == "latent" else ""
        parts.append(f"{g.layers} x {g.kind}{detail}")
    return " + ".join(parts)


@keyed("model_id")
def model_catalogue(catalog: Catalog, selections: dict) -> Table:
    """All models of the catalogue, whatever the paper's tables select."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    rows = tuple(
        {"model_id": m.id, "model": m.name, "hf_id": m.hf_id or "", "layers": _layer_kinds(m),
         "below_window": kv_bytes_per_token(m, w_kv), "beyond_window": kv_bytes_per_token_beyond_window(m, w_kv),
         "state": m.attention.state_bytes}
        for m in catalog.models.values()
    )
    return Table(
        id="model_catalogue",
        title="The model catalogue: cache kinds per layer and KV bytes per token",
        caption=f"Every model of {catalog.files['models']}. KV bytes per token at w_kv = {w_kv:g} B "
        f"({catalog.assumptions.kv_dtype}): with every layer counted (the rate below any window) and the rate that keeps "
        f"growing beyond it; constant state per sequence in {catalog.assumptions.state_dtype} (assumption state_dtype).",
        columns=(Column("model_id", "id", printed=False), Column("model", "Model"), Column("hf_id", "Hugging Face id"),
                 Column("layers", "Layers by cache kind"),
                 Column("below_window", "KV B/token", "derived", "int", "B"),
                 Column("beyond_window", "KV B/token beyond window", "derived", "int", "B"),
                 Column("state", "State B/sequence", "derived", "int", "B")),
        rows=rows,
    )
