"""Per-device shares of a deployment: the weights, KV and FLOPs one device holds or runs per decode step.

TP splits each layer's heads and matrices, PP the layers, attention DP the sequences; the routed experts of a stage
are spread over all its TP x DP devices (kvwall.inputs.deployment). One device, every degree 1, gives the paper's
whole-model numbers exactly (SoK sections 3.1, 3.4).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import LatentAttention, LayerStack, Model
from kvwall.model.footprint import kv_bytes
from kvwall.model.params import embedding_params, routed_expert_params
from kvwall.model.roofline import active_params_per_token, experts_touched_fraction, step_flops


def kv_heads_per_device(model: Model, tensor_parallel: int) -> int | None:
    """KV heads one of TP devices holds: n_kv / TP, at least one whole head (heads replicated when TP > n_kv).

    None for an MLA latent, which has no heads to split: every TP rank holds all of it. The one place the
    deployment model looks inside the attention.
    """
    if isinstance(model.attention, LatentAttention):
        return None
    return max(model.n_kv_heads // tensor_parallel, 1)


def kv_share_per_tensor_rank(model: Model, tensor_parallel: int) -> float:
    """The share of a sequence's KV one TP rank holds: its heads over n_kv, or 1 for a replicated MLA latent."""
    heads = kv_heads_per_device(model, tensor_parallel)
    return 1.0 if heads is None else heads / model.n_kv_heads


def kv_on_tensor_rank(model: Model, tensor_parallel: int) -> tuple[Model, float]:
    """The cache one of TP ranks holds, as a model and a factor on its footprint: a layer stack's groups each split
    their own way (KV heads split, latents and index keys whole, states by their heads; LayerGroup.on_tensor_rank),
    factor 1; a uniform kind, the model itself and its head share (kv_share_per_tensor_rank)."""
    if isinstance(model.attention, LayerStack):
        return replace(model, attention=model.attention.on_tensor_rank(tensor_parallel)), 1.0
    return model, kv_share_per_tensor_rank(model, tensor_parallel)


def layer_share(model: Model, pipeline_parallel: int) -> float:
    """The share of the layers the busiest of PP stages holds: ceil(L / PP) / L."""
    return math.ceil(model.n_layers / pipeline_parallel) / model.n_layers


def sequences_per_replica(batch: ArrayLike, data_parallel: int) -> np.ndarray:
    """Sequences the busiest of DP attention replicas runs: ceil(b / DP); the batch itself without DP."""
    b = np.asarray(batch, dtype=float)
    return b if data_parallel == 1 else np.ceil(b / data_parallel)


def _weight_params(model: Model, d: Deployment) -> tuple[float, float, float]:
    """Parameters per device: layer weights over TP x PP, embedding and LM head vocabulary-split over TP (the first
    and last stage hold one each under PP), routed experts over the TP x DP devices of a stage."""
    routed, embeddings = routed_expert_params(model), embedding_params(model)
    stage = layer_share(model, d.pipeline_parallel)
    layers = (model.params_nominal - routed - embeddings) * stage / d.tensor_parallel
    one_table = model.vocab_size * model.hidden_size
    edge = (embeddings if d.pipeline_parallel == 1 else one_table) / d.tensor_parallel
    experts = routed * stage / (d.tensor_parallel * d.data_parallel)
    return layers, edge, experts


def resident_weight_bytes_per_device(model: Model, d: Deployment) -> float:
    """Weight bytes one device holds: its layer, embedding and expert shares times w_p (P w_p at one device)."""
    layers, edge, experts = _weight_params(model, d)
    return (layers + edge + experts) * d.weight_bytes_per_param


def step_weight_bytes_per_device(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """Weight bytes one device reads per step: its dense shares, and of its experts those the batch touches.

    Every device's experts receive tokens from the whole batch (dispatch gathers them), so the touched fraction is
    1 - (1 - k/E)^b of the full batch under uniform routing (kvwall.model.roofline.experts_touched_fraction).
    """
    layers, edge, experts = _weight_params(model, d)
    return (layers + edge + experts * experts_touched_fraction(model, batch)) * d.weight_bytes_per_param


def kv_bytes_per_device(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """KV bytes one device holds and reads per step: its replica's ceil(b / DP) sequences, its heads' share (MLA:
    all of the latent) and its stage's layers."""
    sequences = sequences_per_replica(batch, d.data_parallel)
    on_rank, share = kv_on_tensor_rank(model, d.tensor_parallel)
    share = share * layer_share(model, d.pipeline_parallel)
    return kv_bytes(on_rank, context, d.kv_bytes_per_element, sequences) * share


def step_flops_per_device(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike) -> np.ndarray:
    """FLOPs one device runs per step (SoK Table 8 split): its replica's sequences through its TP share of the
    dense weights and attention of its stage, and the routed-expert FLOPs of the whole batch over the stage's
    TP x DP devices."""
    b = np.asarray(batch, dtype=float)
    sequences = sequences_per_replica(b, d.data_parallel)
    stage, tp = layer_share(model, d.pipeline_parallel), d.tensor_parallel
    routed_active = active_params_per_token(model) - (model.params_nominal - routed_expert_params(model))
    replica = step_flops(model, context, sequences) * stage / tp
    if d.data_parallel == 1 or routed_active == 0.0:  # every device of the stage runs the same tokens
        return replica
    return replica - 2.0 * routed_active * (sequences * stage / tp - b * stage / (tp * d.data_parallel))
