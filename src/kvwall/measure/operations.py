"""The operations of one decode step of a model on one device, by shape: what `kvwall measure --profile` times.

A step of ``batch`` sequences, each one new token over ``context`` cached tokens, is per layer the attention's
projections (a GEMM of M = batch tokens: QKV, then O), the attention over the cache (the engines' decode layout:
one query per head, the KV heads grouped under it), and the MLP: a dense layer's gate-up and down GEMMs, or an MoE
layer's router, shared experts and routed experts (grouped GEMMs of the experts a step touches, at the tokens each
receives: kvwall.model.roofline.experts_touched_fraction, uniform routing); then the LM head once. Each operation
carries the bytes it must move (weights read once, activations in and out, the KV it reads) and its FLOPs (2 M N K a
GEMM; 4 n_q d_h s per sequence of attention, SoK section 3.2), so a timing of it reads as a realized bandwidth and a
realized FLOP rate. Attention of a cache kind other than full or window GQA (an MLA latent, a constant state) is
listed as not covered, never priced as GQA.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.inputs.specs import FullAttention, Model, SlidingWindowAttention
from kvwall.model.roofline import experts_touched_fraction
from kvwall.units import dtype_bytes

#: The kinds of operation a profile times: dense GEMMs, grouped expert GEMMs and decode attention.
GEMM, EXPERTS, ATTENTION = "gemm", "experts", "attention"
#: Activations move in bf16 between the operations, as the engines run them.
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class Operation:
    """One operation of a decode step, ``count`` times per step (once per layer that runs it).

    GEMM: [m, k] x [k, n], ``groups`` independent problems of that shape (routed experts), weights in ``weight_format``.
    Attention: ``m`` sequences, ``n`` query heads over ``k`` KV heads of ``head_dim``, ``context`` tokens each.
    """

    name: str
    kind: str
    m: int
    n: int
    k: int
    count: int
    weight_format: str = "bf16"
    groups: int = 1
    context: int = 0
    head_dim: int = 0

    @property
    def moved_bytes(self) -> float:
        """Bytes one call must move at least: a GEMM's weights once and its activations in and out; attention's K
        and V of every sequence (SoK Eq. 1 for one layer) and its queries and outputs."""
        if self.kind == ATTENTION:
            kv = 2 * self.m * self.context * self.k * self.head_dim * ACTIVATION_BYTES
            return kv + 2 * self.m * self.n * self.head_dim * ACTIVATION_BYTES
        weights = self.groups * self.k * self.n * dtype_bytes(self.weight_format)
        return weights + self.groups * self.m * (self.k + self.n) * ACTIVATION_BYTES

    @property
    def flops(self) -> float:
        """FLOPs of one call: 2 m n k per GEMM problem; attention 4 n_q d_h s per sequence (scores, then values)."""
        if self.kind == ATTENTION:
            return 4.0 * self.m * self.n * self.head_dim * self.context
        return 2.0 * self.groups * self.m * self.n * self.k


def attention_layers(model: Model, context: int) -> list[tuple[str, int, int]] | None:
    """(name, layers, tokens each reads) per kind of attention layer of a model whose every layer is full or window
    GQA (a window layer reads at most its window); None for another cache kind."""
    attention = model.attention
    if isinstance(attention, SlidingWindowAttention):
        groups = [("attention", attention.full_layers, context),
                  ("attention_window", attention.window_layers, min(context, int(attention.window)))]
        return [group for group in groups if group[1]]
    if isinstance(attention, FullAttention):
        return [("attention", model.n_layers, context)]
    return None


def not_covered(model: Model) -> list[str]:
    """What of the model's step a profile cannot time as one of its operations, in words (empty: all of it)."""
    missing = []
    if attention_layers(model, 1) is None:
        missing.append(f"attention of {model.attention.label}: only full and window GQA layers are timed")
    if model.moe is not None and model.moe.latent_size:
        missing.append("experts working in a latent width (moe.latent_size)")
    return missing


def decode_operations(model: Model, batch: int, context: int, weight_format: str = "bf16") -> list[Operation]:
    """The operations of one decode step on one device (every degree 1), in the order a layer runs them."""
    if not_covered(model):
        raise ValueError(f"{model.id}: {'; '.join(not_covered(model))}")
    q, kv, d, hidden, layers = model.n_q_heads, model.n_kv_heads, model.head_dim, model.hidden_size, model.n_layers
    ops = [Operation("qkv", GEMM, batch, (q + 2 * kv) * d, hidden, layers, weight_format),
           *(Operation(name, ATTENTION, batch, q, kv, count, context=tokens, head_dim=d)
             for name, count, tokens in attention_layers(model, context)),
           Operation("o", GEMM, batch, hidden, q * d, layers, weight_format)]
    moe, dense_layers = model.moe, model.dense_mlp_layers
    if dense_layers:
        ops += [Operation("gate_up", GEMM, batch, 2 * model.intermediate_size, hidden, dense_layers, weight_format),
                Operation("down", GEMM, batch, hidden, model.intermediate_size, dense_layers, weight_format)]
    if moe is not None:
        moe_layers = model.n_layers - moe.dense_layers
        touched = max(1, round(float(experts_touched_fraction(model, batch)) * moe.routed_experts))
        per_expert = max(1, round(batch * moe.experts_per_token / touched))
        width = moe.expert_intermediate_size
        ops += [Operation("router", GEMM, batch, moe.routed_experts, hidden, moe_layers, "bf16")]
        if moe.shared_experts:
            shared = moe.shared_experts * width
            ops += [Operation("shared_gate_up", GEMM, batch, 2 * shared, hidden, moe_layers, weight_format),
                    Operation("shared_down", GEMM, batch, hidden, shared, moe_layers, weight_format)]
        up = (moe.expert_matrices - 1) * width  # gate and up (SwiGLU), or up alone (relu2)
        ops += [Operation("experts_gate_up", EXPERTS, per_expert, up, hidden, moe_layers, weight_format, touched),
                Operation("experts_down", EXPERTS, per_expert, hidden, width, moe_layers, weight_format, touched)]
    ops.append(Operation("lm_head", GEMM, batch, model.vocab_size, hidden, 1, weight_format))
    return ops
