"""SoK Table 8: per-layer FLOP and byte accounting of one decode step, symbolic and evaluated, and the check of its
per-layer weights against the published parameter count."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.errors import SpecError
from kvwall.model.params import architecture_params, dense_layer_params, embedding_params
from kvwall.render import Column, Table, keyed
from kvwall.inputs.specs import FullAttention, Model


def _model(catalog: Catalog, selections: dict) -> Model:
    model = catalog.models[selections["table8_model"]]
    if not isinstance(model.attention, FullAttention) or model.attention.has_window or model.moe is not None:
        raise SpecError("config/config.yaml", "tables.table8.model",
                        f"{model.id!r}: Table 8 accounts for dense MHA/GQA models without sliding windows only")
    return model


@keyed("kernel")
def accounting(catalog: Catalog, selections: dict) -> Table:
    """Each kernel's FLOPs and bytes per layer for one sequence at the W1 context, and their sum over L layers."""
    a = catalog.assumptions
    m = _model(catalog, selections)
    s = catalog.workloads["w1"].context
    d, dh, nq, nkv, ff, L = m.hidden_size, m.head_dim, m.n_q_heads, m.n_kv_heads, m.intermediate_size, m.n_layers
    wp, wkv = a.weight_bytes_per_param, a.kv_bytes_per_element
    layer = dense_layer_params(m)
    kernels = [
        ("QKV projection", "2 d d_h (n_q + 2 n_kv)", "d d_h (n_q + 2 n_kv) w_p", 2 * layer.qkv_projection, layer.qkv_projection * wp),
        ("Scores q K^T", "2 s n_q d_h", "s n_kv d_h w_kv", 2 * s * nq * dh, s * nkv * dh * wkv),
        ("Softmax", "3 n_q s", "0 (on chip)", 3 * nq * s, 0.0),
        ("Value contraction", "2 s n_q d_h", "s n_kv d_h w_kv", 2 * s * nq * dh, s * nkv * dh * wkv),
        ("Output projection", "2 d d_h n_q", "d d_h n_q w_p", 2 * layer.output_projection, layer.output_projection * wp),
        ("MLP, SwiGLU", "6 d d_ff", "3 d d_ff w_p", 2 * layer.mlp, layer.mlp * wp),
    ]
    rows = [{"kernel": k, "flops_formula": f, "bytes_formula": b, "flops": fl, "bytes": by} for k, f, b, fl, by in kernels]
    rows.append({
        "kernel": f"Sum over L = {L} layers",
        "flops_formula": "2 P_layers + 4 L n_q d_h s + 3 L n_q s",
        "bytes_formula": "P_layers w_p + 2 L n_kv d_h s w_kv",
        "flops": L * sum(r["flops"] for r in rows),
        "bytes": L * sum(r["bytes"] for r in rows),
    })
    return Table(
        id="table8_accounting",
        title=f"Table 8. Per-layer FLOP and byte accounting for one decode step, {m.name}, s = {s / a.tokens_per_k:g}k",
        caption=f"One sequence, context s; d = {d}, d_h = {dh}, n_q = {nq}, n_kv = {nkv}, d_ff = {ff}, w_p = {wp:g} B, "
        f"w_kv = {wkv:g} B. KV bytes assume a single cache read. P_layers is the weights of the L decoder layers; the "
        "paper's P adds embeddings (see table8_parameter_check).",
        columns=(
            Column("kernel", "Kernel"),
            Column("flops_formula", "FLOPs"),
            Column("bytes_formula", "Bytes moved"),
            Column("flops", "FLOPs (evaluated)", "derived", "sci3", "FLOP"),
            Column("bytes", "Bytes (evaluated)", "derived", "sci3", "B"),
        ),
        rows=tuple(rows),
    )


@keyed("model_id")
def parameter_check(catalog: Catalog, selections: dict) -> Table:
    """Table 8's per-layer weights summed over L layers, plus embeddings, against the nominal parameter count P."""
    rows = []
    for model_id in selections["table1_models"]:
        m = catalog.models[model_id]
        implied = architecture_params(m)
        if implied is None:
            continue
        layers = implied - embedding_params(m)
        rows.append({"model_id": m.id, "model": m.name, "layer_params": layers, "embedding_params": embedding_params(m),
                     "architecture_params": implied, "relative_difference": implied / m.params_nominal - 1.0})
    return Table(
        id="table8_parameter_check",
        title="Table 8 check: parameters implied by the architecture against the nominal count",
        caption="Sum over L layers of d d_h (n_q + 2 n_kv) + d d_h n_q + 3 d d_ff (routed experts for MoE), plus 2 V d "
        "for untied embeddings (V d tied), against the nominal P the step model uses (config/models.yaml params_nominal). "
        "Norms and biases are omitted (under 0.01%).",
        columns=(
            Column("model_id", "id", printed=False),
            Column("model", "Model"),
            Column("layer_params", "Layers (B params)", "derived", "giga2", "count"),
            Column("embedding_params", "Embeddings (B params)", "derived", "giga2", "count"),
            Column("architecture_params", "Implied P (B)", "derived", "giga2", "count"),
            Column("relative_difference", "vs nominal P", "derived", "percent_signed1", "ratio"),
        ),
        rows=tuple(rows),
    )
