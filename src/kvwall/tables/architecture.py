"""SoK Table 1: per-token KV footprint of each architecture (Eq. 1), spec inputs apart from derived bytes."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import kv_bytes_per_token
from kvwall.render import Column, Table, keyed
from kvwall.inputs.specs import LatentAttention, Model

TITLE = "Table 1. Per-token KV-cache footprint of representative architectures"
_KEYS = (Column("model_id", "id", printed=False), Column("model", "Model"))


def _kv_columns(model: Model) -> dict:
    """n_kv and d_h as Table 1 prints them: an MLA model shows its latent width under n_kv and no d_h."""
    if isinstance(model.attention, LatentAttention):
        return {"n_kv": model.attention.latent_dim, "d_h": None}
    return {"n_kv": model.n_kv_heads, "d_h": model.head_dim}


def _window_columns(model: Model) -> dict:
    """The sliding window and the layers that use it; empty where every layer is full."""
    if not model.attention.has_window:
        return {"window": None, "window_layers": None}
    return {"window": model.attention.window, "window_layers": model.attention.window_layers}


def _spec_columns() -> tuple[Column, ...]:
    return (
        Column("attention", "Attn.", "spec"),
        Column("n_layers", "L", "spec", "int"),
        Column("n_q", "n_q", "spec", "int"),
        Column("n_kv", "n_kv (MLA: latent d_c + d_r)", "spec", "int"),
        Column("d_h", "d_h", "spec", "int"),
        Column("window", "Window (tokens)", "spec", "int", "tokens"),
        Column("window_layers", "Window layers", "spec", "int", "count"),
    )


def _spec_row(model: Model) -> dict:
    return {"model_id": model.id, "model": model.name, "attention": model.attention.label, "n_layers": model.n_layers,
            "n_q": model.n_q_heads, **_kv_columns(model), **_window_columns(model)}


@keyed("model_id")
def architectures(catalog: Catalog, selections: dict) -> Table:
    """The architecture inputs of Table 1, as published in each model's config."""
    models = [catalog.models[m] for m in selections["table1_models"]]
    return Table(
        id="table1_architectures",
        title=f"{TITLE}: architecture inputs",
        caption="Layers, query heads, KV heads and head dimension from each model's published config "
        f"({catalog.files['models']}). MLA models cache one latent of d_c + d_r dimensions per layer. Sliding-window "
        "models (SWA) cache only the last window of tokens in their window layers.",
        columns=(*_KEYS, *_spec_columns()),
        rows=tuple(_spec_row(m) for m in models),
    )


@keyed("model_id")
def kv_per_token(catalog: Catalog, selections: dict) -> Table:
    """KV bytes per token in the baseline KV precision: 2 L n_kv d_h w_kv, or L (d_c + d_r) w_kv for MLA (SoK Eq. 1)."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    models = [catalog.models[m] for m in selections["table1_models"]]
    return Table(
        id="table1_kv_per_token",
        title=f"{TITLE}: derived bytes per token",
        caption=f"KV bytes per token at w_kv = {w_kv:g} B ({catalog.assumptions.kv_dtype}), SoK Eq. 1; MB = 1e6 B. "
        "Every layer is counted, so for sliding-window models this is the rate below the window "
        "(tables/derived/sliding_window_footprint for beyond it).",
        columns=(*_KEYS, Column("kv_bytes_per_token", "MB/token", "derived", "mb_per_token", "B")),
        rows=tuple({"model_id": m.id, "model": m.name, "kv_bytes_per_token": kv_bytes_per_token(m, w_kv)} for m in models),
    )


@keyed("model_id")
def paper_view(catalog: Catalog, selections: dict) -> Table:
    """Table 1 as the paper prints it, each column marked spec or derived."""
    spec, derived = architectures(catalog, selections), kv_per_token(catalog, selections)
    return Table(
        id="table1",
        title=TITLE,
        caption="As printed in the SoK, computed from Eq. 1 in BF16. Architecture columns are spec inputs; MB/token is derived.",
        columns=spec.columns + derived.columns[len(_KEYS):],
        rows=tuple({**s, **d} for s, d in zip(spec.rows, derived.rows)),
    )
