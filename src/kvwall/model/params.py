"""Parameter counts an architecture implies, layer by layer (SoK Table 8), against the published count, and the
published count split over the parts a checkpoint stores in their own formats."""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.inputs.specs import (ATTENTION, DENSE_MLP, EMBEDDING, EXPERTS, LM_HEAD, ROUTER, SHARED_EXPERTS, WEIGHT_PARTS,
                                 FullAttention, Model)


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


def published_routed_params(model: Model) -> float:
    """The routed experts' share of the published count P (weight_part_params' experts): their weights, scaled down
    with every part the fields fix where those exceed P (a count rounded down: Kimi-K2.5's 1T against the 1.03T its
    config gives), so that P less them, the always-active weights, is never negative."""
    return weight_part_params(model)[EXPERTS]


def architecture_params(model: Model) -> float | None:
    """Sum over L layers of Table 8's weights plus embeddings, for dense MHA/GQA models; None where Table 8 does not apply."""
    if not isinstance(model.attention, FullAttention):
        return None
    if model.moe is None:
        return model.n_layers * dense_layer_params(model).total + embedding_params(model)
    attention_only = dense_layer_params(model, intermediate_size=0).total
    return model.n_layers * attention_only + routed_expert_params(model) + embedding_params(model)


def weight_part_params(model: Model) -> dict[str, float]:
    """Parameters of each part of the weights (kvwall.inputs.specs.WEIGHT_PARTS), summing to the published count P.

    The parts the fields fix: embedding and LM head V d each (the head none when tied), the routed experts, the router
    (L - dense layers) E d, the shared experts (L - dense layers) n_shared m d d_ff,e and the dense MLP m d d_ff of each
    dense-MLP layer (m = 3 gated, 2 non-gated); the attention (or mixing) layers are the rest, P less those, with the
    norms, biases and the rounding of a published count. Where those parts alone exceed P (a count rounded down),
    they are scaled to it and the attention is none."""
    d, vocab, moe = model.hidden_size, model.vocab_size, model.moe
    moe_layers = model.n_layers - moe.dense_layers if moe else 0
    matrices = moe.expert_matrices if moe else 3
    parts = {
        DENSE_MLP: float(model.dense_mlp_layers * matrices * d * model.intermediate_size),
        SHARED_EXPERTS: float(moe_layers * moe.shared_experts * matrices * d * moe.expert_intermediate_size) if moe else 0.0,
        EXPERTS: routed_expert_params(model),
        ROUTER: float(moe_layers * moe.routed_experts * d) if moe else 0.0,
        EMBEDDING: float(vocab * d),
        LM_HEAD: 0.0 if model.tied_embeddings else float(vocab * d),
    }
    fixed = sum(parts.values())
    if fixed > model.params_nominal:
        parts = {part: count * model.params_nominal / fixed for part, count in parts.items()}
    parts[ATTENTION] = max(model.params_nominal - fixed, 0.0)
    return {part: parts[part] for part in WEIGHT_PARTS}
