"""Parameter counts an architecture implies, layer by layer (SoK Table 8), against the published count."""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.inputs.specs import FullAttention, Model


@dataclass(frozen=True)
class LayerParams:
    """Weights of one decoder layer by kernel (SoK Table 8 rows), for a dense MHA/GQA layer."""

    qkv_projection: float
    output_projection: float
    mlp: float

    @property
    def total(self) -> float:
        return self.qkv_projection + self.output_projection + self.mlp


def dense_layer_params(model: Model, intermediate_size: int | None = None) -> LayerParams:
    """d d_h (n_q + 2 n_kv), d d_h n_q and 3 d d_ff weights (SoK Table 8, bytes column over w_p)."""
    d, dh = model.hidden_size, model.head_dim
    ff = model.intermediate_size if intermediate_size is None else intermediate_size
    return LayerParams(
        qkv_projection=float(d * dh * (model.n_q_heads + 2 * model.n_kv_heads)),
        output_projection=float(d * dh * model.n_q_heads),
        mlp=float(3 * d * ff),
    )


def embedding_params(model: Model) -> float:
    """Input embedding plus an untied output head, 2 V d; V d when the head is tied to the embedding."""
    return (1.0 if model.tied_embeddings else 2.0) * model.vocab_size * model.hidden_size


def routed_expert_params(model: Model) -> float:
    """Weights of all routed experts of an MoE model, (L - dense layers) E m d d_ff with m = 3 gated or 2 non-gated
    matrices per expert (0 for a dense model); d is the experts' latent width where they work in one (Nemotron 3's
    moe_latent_size: the projections to and from it are always-active weights)."""
    if model.moe is None:
        return 0.0
    moe = model.moe
    width = moe.latent_size or model.hidden_size
    return float((model.n_layers - moe.dense_layers) * moe.routed_experts * moe.expert_matrices * width
                 * moe.expert_intermediate_size)


def architecture_params(model: Model) -> float | None:
    """Sum over L layers of Table 8's weights plus embeddings, for dense MHA/GQA models; None where Table 8 does not apply."""
    if not isinstance(model.attention, FullAttention):
        return None
    if model.moe is None:
        return model.n_layers * dense_layer_params(model).total + embedding_params(model)
    attention_only = dense_layer_params(model, intermediate_size=0).total
    return model.n_layers * attention_only + routed_expert_params(model) + embedding_params(model)
