"""Per-device shares of a deployment: the weights, KV and FLOPs one device holds or runs per decode step.

TP splits each layer's heads and matrices, PP the layers, attention DP the sequences; the routed experts of a stage
are spread over all its TP x DP devices (kvwall.inputs.deployment). Each part of the weights is priced in its own
storage format (kvwall.inputs.specs.WeightFormats, kvwall.model.params.weight_part_params). The conventions of a
serving engine that the paper's one-device frame does not make, each stated where it is used:
- the input embedding is gathered, the rows of the batch's tokens, not read whole, and costs no FLOPs (a tied table
  is read whole by the LM head);
- the k and v projections are replicated with their KV heads where TP exceeds n_kv, MLA's down-projections of the
  query and the latent (q_a, kv_a) and the router are whole on every TP rank, as vLLM and SGLang shard them;
- constant state (linear-attention and Mamba layers) is split over every TP rank by its heads; KV heads over TP with
  at least one whole head each; an MLA latent whole on every rank;
- the routed experts a device reads are those its share receives from the whole batch, on the average rank.
Under PP the busiest stage is the one holding the LM head: ceil(L / PP) layers and the head.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import (ATTENTION, CHUNKED, DENSE_MLP, EMBEDDING, EXPERTS, FULL, LM_HEAD, ROUTER,
                                 SHARED_EXPERTS, WINDOW, FullAttention, LatentAttention, Model)
from kvwall.model.expert_imbalance import busiest_rank_touched_fraction
from kvwall.model.footprint import context_holding, kv_bytes
from kvwall.model.params import weight_part_params
from kvwall.model.roofline import active_params_per_token, experts_touched_fraction, routed_active_params, step_flops
from kvwall.units import dtype_bytes


def kv_heads_per_device(model: Model, tensor_parallel: int) -> int | None:
    """KV heads one of TP devices holds: n_kv / TP, at least one whole head (heads replicated when TP > n_kv).

    None for an MLA latent, which has no heads to split: every TP rank holds all of it.
    """
    if isinstance(model.attention, LatentAttention):
        return None
    return max(model.n_kv_heads // tensor_parallel, 1)


@lru_cache(maxsize=256)
def device_cache(model: Model, tensor_parallel: int) -> Model:
    """The model as one of TP devices caches it: each key-value group's heads max(n_kv / TP, 1), a latent and index
    keys whole, constant state over its heads or over TP (kvwall.inputs.specs.LayerGroup.on_tensor_rank). Its KV bytes
    (kvwall.model.footprint) are one device's, for every layer."""
    if tensor_parallel == 1:
        return model
    a = model.attention
    heads = max(model.n_kv_heads // tensor_parallel, 1)
    if isinstance(a, LatentAttention):
        return model
    if isinstance(a, FullAttention):
        return replace(model, attention=replace(a, n_kv_heads=heads), n_kv_heads=heads)
    return replace(model, attention=a.on_tensor_rank(tensor_parallel), n_kv_heads=heads)


def kv_replication(model: Model, tensor_parallel: int) -> float:
    """How many TP ranks hold each KV byte of a sequence, over its per-token KV: TP n_kv' / n_kv per key-value
    group (1 up to TP = n_kv), TP for an MLA latent, 1 for constant state (weighted by bytes below any window)."""
    a, per_device = model.attention, device_cache(model, tensor_parallel).attention
    return tensor_parallel * per_device.kv_elements_per_token / a.kv_elements_per_token


def layer_share(model: Model, pipeline_parallel: int) -> float:
    """The share of the layers the busiest of PP stages holds: ceil(L / PP) / L."""
    return math.ceil(model.n_layers / pipeline_parallel) / model.n_layers


def sequences_per_replica(batch: ArrayLike, data_parallel: int) -> np.ndarray:
    """Sequences the busiest of DP attention replicas runs: ceil(b / DP); the batch itself without DP."""
    b = np.asarray(batch, dtype=float)
    return b if data_parallel == 1 else np.ceil(b / data_parallel)


def pipeline_microbatches(d: Deployment, batch: ArrayLike) -> np.ndarray:
    """Microbatches in flight through the stages, as vLLM, SGLang and TensorRT-LLM decode under PP: one per stage,
    min(PP, sequences of a replica); 1 without PP."""
    b = np.asarray(batch, dtype=float)
    if d.pipeline_parallel == 1:
        return np.ones_like(b)
    return np.maximum(np.minimum(float(d.pipeline_parallel), sequences_per_replica(b, d.data_parallel)), 1.0)


def replicated_attention_params(model: Model, tensor_parallel: int) -> float:
    """Attention weights each TP rank holds beyond its 1/TP share: the k and v projections of the heads it
    replicates, 2 d d_h (n_kv' - n_kv / TP) per key-value layer, and MLA's down-projections d (d_q + d_c + d_r)
    (1 - 1/TP) per layer, whole on every rank."""
    if tensor_parallel == 1:
        return 0.0
    a, d = model.attention, model.hidden_size
    if isinstance(a, LatentAttention):
        return a.n_layers * d * (a.q_lora_rank + a.latent_dim) * (1.0 - 1.0 / tensor_parallel)
    extra = 0.0
    for g in a.groups:
        if g.kind in (FULL, WINDOW, CHUNKED):
            extra += g.layers * 2 * d * g.head_dim * (max(g.n_kv_heads // tensor_parallel, 1) - g.n_kv_heads / tensor_parallel)
    return extra


def mlp_columns_per_device(model: Model, d: Deployment) -> float:
    """The columns N of the MLP's GEMMs one device computes: the intermediate size over TP; for an MoE model its
    routed experts' intermediate size over the ranks that split each expert, the TP x DP devices of a stage over EP."""
    if model.moe is None:
        return model.intermediate_size / d.tensor_parallel
    return model.moe.expert_intermediate_size * d.expert_parallel / (d.tensor_parallel * d.data_parallel)


@lru_cache(maxsize=256)
def _parts(model: Model) -> dict[str, float]:
    return weight_part_params(model)


def resident_params_per_device(model: Model, d: Deployment) -> dict[str, float]:
    """Parameters of each part one device holds: the attention, dense MLP and shared experts of its stage over TP
    (with the replicated projections), the router of its stage whole, its stage's routed experts over TP x DP, the
    embedding and LM head vocabulary-split over TP (under PP the busiest stage, the last, holds the head; a tied
    table there for it)."""
    parts, tp = _parts(model), d.tensor_parallel
    stage = layer_share(model, d.pipeline_parallel)
    held = {
        ATTENTION: (parts[ATTENTION] / tp + replicated_attention_params(model, tp)) * stage,
        DENSE_MLP: parts[DENSE_MLP] * stage / tp,
        SHARED_EXPERTS: parts[SHARED_EXPERTS] * stage / tp,
        EXPERTS: parts[EXPERTS] * stage / (tp * d.data_parallel),
        ROUTER: parts[ROUTER] * stage,
        EMBEDDING: parts[EMBEDDING] / tp if d.pipeline_parallel == 1 or model.tied_embeddings else 0.0,
        LM_HEAD: parts[LM_HEAD] / tp,
    }
    return held


def resident_weight_bytes_per_device(model: Model, d: Deployment) -> float:
    """Weight bytes one device holds: each part's share (resident_params_per_device) in its format (one
    multiplication where every part shares one)."""
    held, formats = resident_params_per_device(model, d), d.weight_formats
    if formats.single is not None:
        return float(sum(held.values()) * dtype_bytes(formats.single))
    return float(sum(count * dtype_bytes(formats.of(part)) for part, count in held.items() if formats.of(part)))


def _gathered_rows(model: Model, d: Deployment, batch: np.ndarray, held: float) -> np.ndarray:
    """Embedding parameters a device reads: the rows of its replica's tokens over TP, at most what it holds; the whole
    table where it is tied to the head."""
    if model.tied_embeddings or not held:
        return np.full_like(batch, held)
    rows = sequences_per_replica(batch, d.data_parallel) / d.tensor_parallel
    return np.minimum(rows * model.hidden_size, held)


def step_weight_bytes_per_device(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """Weight bytes one device reads in one forward of ``batch`` tokens, each part in its format: its dense shares
    whole, of its routed experts those the batch touches (every device's experts receive tokens from the whole batch,
    so 1 - (1 - k/E)^b of them under uniform routing, the average rank's share), and of the input embedding the
    ceil(b / DP) / TP rows of its tokens (a tied table is read whole by the head; under PP the first stage gathers)."""
    b = np.asarray(batch, dtype=float)
    held, formats = resident_params_per_device(model, d), d.weight_formats
    width = {part: dtype_bytes(formats.of(part)) if formats.of(part) else 0.0 for part in held}
    whole = sum(count * width[part] for part, count in held.items() if part not in (EXPERTS, EMBEDDING))
    experts = held[EXPERTS] * width[EXPERTS] * experts_touched_fraction(model, b) if held[EXPERTS] else 0.0
    return whole + experts + _gathered_rows(model, d, b, held[EMBEDDING]) * width[EMBEDDING]


def imbalance_bytes_per_step(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """Routed-expert bytes the busiest expert-parallel rank reads per decode step beyond the average rank's
    (kvwall.model.expert_imbalance), per microbatch in flight as weight_bytes_per_step counts them; 0 without EP."""
    b = np.asarray(batch, dtype=float)
    held, stored = resident_params_per_device(model, d), d.weight_formats.of(EXPERTS)
    if not held[EXPERTS] or not stored or d.expert_parallel <= 1:
        return np.zeros_like(b)
    microbatches = pipeline_microbatches(d, b) if d.pipeline_parallel > 1 else np.ones_like(b)
    tokens = b / microbatches
    extra = busiest_rank_touched_fraction(model, d, tokens) - experts_touched_fraction(model, tokens)
    return microbatches * held[EXPERTS] * dtype_bytes(stored) * extra


def weight_bytes_per_step(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """Weight bytes one device reads in a decode step of ``batch`` sequences: once per microbatch in flight
    (pipeline_microbatches), each of b / microbatches tokens; once for the whole batch without PP."""
    b = np.asarray(batch, dtype=float)
    if d.pipeline_parallel == 1:
        return step_weight_bytes_per_device(model, d, b)
    microbatches = pipeline_microbatches(d, b)
    return microbatches * step_weight_bytes_per_device(model, d, b / microbatches)


def kv_bytes_per_device(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """KV bytes one device holds and reads per step: its replica's ceil(b / DP) sequences as its TP rank caches them
    (device_cache) over its stage's layers."""
    sequences = sequences_per_replica(batch, d.data_parallel)
    cache = device_cache(model, d.tensor_parallel)
    return kv_bytes(cache, context, d.kv_bytes_per_element, sequences) * layer_share(model, d.pipeline_parallel)


def context_holding_per_device(model: Model, d: Deployment, kv_bytes_held: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """The context at which ``batch`` sequences hold ``kv_bytes_held`` of KV on one device: kv_bytes_per_device
    inverted (kvwall.model.footprint.context_holding on the device's cache and stage)."""
    sequences = sequences_per_replica(batch, d.data_parallel)
    held = np.asarray(kv_bytes_held, dtype=float) / layer_share(model, d.pipeline_parallel)
    return context_holding(device_cache(model, d.tensor_parallel), held, d.kv_bytes_per_element, sequences)


def computed_params_per_token(model: Model) -> float:
    """Parameters one token multiplies through: the active parameters (kvwall.model.roofline) less an untied input
    embedding, which is gathered, not multiplied."""
    gathered = 0.0 if model.tied_embeddings else model.vocab_size * model.hidden_size
    return active_params_per_token(model) - gathered


def step_flops_per_device(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """FLOPs one device runs per step (SoK Table 8 split, the input embedding's lookup free): its replica's
    sequences through its TP share of the dense weights and attention of its stage, and the routed-expert FLOPs of
    the whole batch over the stage's TP x DP devices."""
    b = np.asarray(batch, dtype=float)
    sequences = sequences_per_replica(b, d.data_parallel)
    stage, tp = layer_share(model, d.pipeline_parallel), d.tensor_parallel
    gathered = 0.0 if model.tied_embeddings else 2.0 * model.vocab_size * model.hidden_size
    routed_active = routed_active_params(model)
    replica = (step_flops(model, context, sequences) - gathered * sequences) * stage / tp
    if d.data_parallel == 1 or routed_active == 0.0:  # every device of the stage runs the same tokens
        return replica
    return replica - 2.0 * routed_active * (sequences * stage / tp - b * stage / (tp * d.data_parallel))
