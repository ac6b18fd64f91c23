"""The printed form of the paper's equations for a given model: SoK Eq. 1, the crossovers of section 3.4, the step
sums of section 3.1 and the token-rate ceiling of section 3.3, written in the model's terms.

The paper writes every equation for dense GQA. A model with multi-head latent attention caches L (d_c + d_r) w_kv per
token (Table 1), window layers hold min(s, W) positions, a layer stack sums its groups, and a mixture-of-experts step
reads W(b), the always-active weights plus the experts a batch of b touches, and computes 2 P_active per token. The
functions below rewrite each equation accordingly, so the command line, CANONICAL-NUMBERS and the audit notebooks
print one text for one model.
"""

from __future__ import annotations

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import LatentAttention, LayerStack, Model
from kvwall.model.sharding import kv_heads_per_device

KV_EQUATION = "SoK Eq. 1: 2 L n_kv d_h w_kv"
MLA_EQUATION = "SoK Eq. 1, Table 1 (MLA): L (d_c + d_r) w_kv"
WINDOW_EQUATION = "SoK Eq. 1 over every layer: 2 L n_kv d_h w_kv, the rate below the window"
BEYOND_WINDOW_EQUATION = "SoK Eq. 1 over the full layers: 2 L_full n_kv d_h w_kv"
STACK_EQUATION = ("SoK Eq. 1 per layer group: sum of 2 L_g n_kv,g d_h,g w_kv (key-value layers; 1 x where keys are "
                  "values) and L_g (d_c + d_r) w_kv (latent layers), plus L_g d_I w_kv of index keys and a compressed "
                  "layer's pooled entries per ratio of tokens, every caching layer counted")
STACK_STEP_KV_FORMULA = ("b (sum over groups of per-token bytes x positions held, s, min(s, W) or min(s, W) + s / ratio, "
                         "+ constant state)")
STEP_KV_FORMULA = "b s 2 L n_kv d_h w_kv"  # for_model rewrites it for MLA
WINDOW_STEP_KV_FORMULA = "b 2 n_kv d_h w_kv (L_full s + L_window min(s, W))"
TRAFFIC_EQUATION = "SoK section 3.4, Table 4: s*(b) = P w_p / (b 2 L n_kv d_h w_kv)"
CAPACITY_EQUATION = "SoK section 3.4: s_cap(b) = (HBM - P w_p) / (b 2 L n_kv d_h w_kv)"
#: Both crossovers with window layers: where the capped footprint reaches the bytes (kvwall.model.footprint.context_holding).
WINDOW_CROSSOVER = f"solved on {WINDOW_STEP_KV_FORMULA}"
INTENSITY_EQUATION = "SoK section 3.1: b (2P + 4 L n_q d_h s) / (P w_p + 2 b L n_kv d_h s w_kv)"
SPEEDUP_EQUATION = "SoK section 3.5: S = (W + K) / (W + K / c)"


def kv_equation(model: Model) -> str:
    """The form of SoK Eq. 1 that applies to the model's attention."""
    if isinstance(model.attention, LayerStack):
        return STACK_EQUATION
    if isinstance(model.attention, LatentAttention):
        return _with_index_keys(model, MLA_EQUATION)
    return WINDOW_EQUATION if model.attention.has_window else KV_EQUATION


def _with_index_keys(model: Model, equation: str) -> str:
    """An MLA equation with a sparse-attention indexer's keys d_I beside the latent, where the model caches them, at
    w_I = 1 + 4/128 B per value whatever w_kv (fp8 values, an fp32 scale per 128: kvwall.inputs.index_storage)."""
    if not model.attention.index_head_dim:
        return equation
    equation = equation.replace("(d_c + d_r) s w_kv", "((d_c + d_r) w_kv + d_I w_I) s")
    return equation.replace("(d_c + d_r) w_kv", "((d_c + d_r) w_kv + d_I w_I)")


def for_model(model: Model, equation: str) -> str:
    """An equation written for dense GQA, in the terms of the model: MLA caches L (d_c + d_r) w_kv per token, and an
    MoE step reads W(b), the always-active weights plus the routed experts a batch of b touches."""
    if isinstance(model.attention, LatentAttention):
        equation = equation.replace("2 b L n_kv d_h s w_kv", "b L (d_c + d_r) s w_kv")
        equation = _with_index_keys(model, equation.replace("2 L n_kv d_h w_kv", "L (d_c + d_r) w_kv"))
    if model.moe is not None:
        equation = equation.replace("s*(b) = P w_p", "s*(b) = W(b)").replace("(P w_p + ", "(W(b) + ")
        equation = equation.replace("b (2P + ", "b (2P_active + ")
    return equation


def weights_read(model: Model) -> str:
    """The weight bytes one decode step reads (SoK section 3.1): P w_p, or W(b) for a mixture of experts."""
    return "W(b)" if model.moe is not None else "P w_p"


def step_kv_formula(model: Model) -> str:
    """The KV bytes one decode step reads for b sequences of s tokens (SoK section 3.1), before for_model."""
    if isinstance(model.attention, LayerStack):
        return STACK_STEP_KV_FORMULA
    return WINDOW_STEP_KV_FORMULA if model.attention.has_window else STEP_KV_FORMULA


def kv_bytes_formula(model: Model) -> str:
    """How the bytes of b sequences of s tokens are summed for the model's layers."""
    if isinstance(model.attention, LayerStack):
        return STACK_STEP_KV_FORMULA
    return WINDOW_STEP_KV_FORMULA if model.attention.has_window else f"b s x ({kv_equation(model)})"


def crossover_equation(model: Model, equation: str) -> str:
    """A crossover's equation in the model's terms (for_model), and how it is solved where window layers cap the
    footprint or layers differ."""
    equation = for_model(model, equation)
    if isinstance(model.attention, LayerStack):
        return f"{equation}, solved on {STACK_STEP_KV_FORMULA}"
    return f"{equation}, {WINDOW_CROSSOVER}" if model.attention.has_window else equation


def intensity_equation(model: Model) -> str:
    """AI(s, b) of SoK section 3.1 in the model's terms: absorbed MLA attends over the latent, 2 L n_q (2 d_c + d_r)
    FLOPs per position (kvwall.inputs.specs.LatentAttention), as the value is computed."""
    window = ", s the positions a layer caches on average (window layers capped)" if model.attention.has_window else ""
    equation = INTENSITY_EQUATION
    if isinstance(model.attention, LatentAttention):
        equation = equation.replace("4 L n_q d_h s", "2 L n_q (2 d_c + d_r) s")
    return for_model(model, equation) + window


def ceiling_equation(model: Model, equation: str) -> str:
    """The token-rate ceiling R_inf (SoK section 3.3, Corollary 1) in the model's terms: at long context only the
    layers that keep growing count, the full layers L_full of a window model."""
    if isinstance(model.attention, LayerStack):
        return equation.replace("2 L n_kv d_h w_kv", "the per-token bytes of the growing layer groups")
    if model.attention.has_window:
        return equation.replace("2 L n_kv d_h w_kv", "2 L_full n_kv d_h w_kv")
    return for_model(model, equation)


def kv_share_equation(model: Model, d: Deployment) -> str:
    """The per-device KV of the model's attention kind under the deployment, as an equation; b is the batch that
    runs."""
    a = model.attention
    if isinstance(a, LayerStack):
        return ("ceil(b / DP) x each group's bytes at s on one TP rank (KV heads max(n_kv,g / TP, 1), a latent and "
                "index keys whole, a state over its heads / TP), x ceil(L / PP) / L")
    if isinstance(a, LatentAttention):
        per_token = _with_index_keys(model, "L (d_c + d_r) w_kv, the whole latent on every TP rank")
    elif isinstance(a, LayerStack):
        per_token = ("the per-token bytes of each caching group at n_kv' heads x the positions it holds"
                     + (", + the constant state split over its heads or TP" if a.state_elements else ""))
    elif a.has_window:
        per_token = "2 n_kv' d_h w_kv (L_full s + L_window min(s, W)) / s"
    else:
        per_token = "2 L n_kv' d_h w_kv"
    heads = kv_heads_per_device(model, d.tensor_parallel)
    head_note = "" if heads is None else f", n_kv' = max(n_kv / TP, 1) = {heads} heads per device"
    replicas = "ceil(b / DP)" if d.data_parallel > 1 else "b"
    return f"{replicas} s x {per_token}{head_note}, x ceil(L / PP) / L; b the batch that runs"


def weight_equation(model: Model, d: Deployment, read: bool = True) -> str:
    """The per-device weight bytes under the deployment, as an equation: each part at its own width w (one w_p where
    every part shares it); ``read``: those a step reads (the experts touched, the embedding rows gathered), else those
    held."""
    experts = (" + P_experts f_touched(b) / (TP DP)" if read else " + P_experts / (TP DP)") if model.moe else ""
    router = " + P_router" if model.moe else ""
    replicated = " + replicated k/v or MLA down-projections" if d.tensor_parallel > 1 else ""
    head = "P_head / TP" if not model.tied_embeddings else "P_emb / TP (tied: read by the head)"
    gathered = "" if model.tied_embeddings else (" + the embedding rows of the batch's tokens" if read else " + P_emb / TP")
    if d.pipeline_parallel > 1:  # the busiest stage, the last, holds the head, not the embedding
        head, gathered = f"{head} (the last stage)", ""
    layers = "P_attention + P_mlp" + (" + P_shared" if model.moe and model.moe.shared_experts else "")
    return f"(({layers}) / TP{replicated}{router}) ceil(L / PP) / L + {head}{experts}{gathered}, each part x its w"
