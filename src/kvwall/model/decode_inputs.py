"""What the named costs of a decode step and a first token (kvwall.model.decode_costs,
kvwall.model.first_token_estimate) read of a deployment at a batch, per GPU of its engine: the step's bytes and FLOPs
(kvwall.model.step_time), the dense peak, the PP stages over microbatches, the collectives' bytes over their links
(s) and their messages, the routed-expert bytes the busiest EP rank reads beyond the average rank's
(kvwall.model.expert_imbalance), the EP dispatch and combine (s) with the routed assignments per EP rank, one
prefill of isl tokens over the engine (FLOPs per GPU, and its collectives' bytes over their links, s) and over a
replica (FLOPs per GPU, kvwall.model.first_token), the weight bytes per GPU a forward of those isl tokens reads (every
routed expert they touch, kvwall.model.sharding.step_weight_bytes_per_device), the layers one GPU runs in a step (its
stage's, once per microbatch, as it reads its weights), the sequences of an attention-DP rank, whether its GEMMs run
in fp8 or in fp4 (1 or 0 each), and the columns of its MLP's GEMMs (kvwall.model.sharding.mlp_columns_per_device).
A measured point (kvwall.validation.points) and a planned one (kvwall.plan) read them from this one function; the
stored over counted KV bytes, the engine's own, is the caller's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import CollectiveLink, Deployment
from kvwall.inputs.specs import Model
from kvwall.model.collectives import collectives_time, expert_parallel_time
from kvwall.model.first_token import first_token_bound
from kvwall.model.sharding import mlp_columns_per_device, sequences_per_replica, step_weight_bytes_per_device
from kvwall.model.step_time import DeviceStep, device_step
from kvwall.model.workloads import prefill_flops

#: The inputs named in the module's docstring, in that order (kvwall.validation.points keeps them as columns).
COST_INPUTS = ("flops_per_device", "peak_flops", "pipeline_idle", "collective_bytes_s", "collective_messages",
               "imbalance_read_per_device", "dispatch_s", "dispatch_load", "expert_ranks", "prefill_flops_per_device", "prefill_collectives_s",
               "replica_prefill_flops", "prefill_weight_read", "layers_per_step", "sequences_per_rank", "fp8_gemms",
               "fp4_gemms", "gemm_columns")


@dataclass(frozen=True)
class DecodeInputs:
    """The step of the datasheet estimate (its bytes, FLOPs, bound and estimate), one prefill of isl tokens over the
    engine's dense peak (s per GPU), and the cost inputs by name (arrays over the batches)."""

    step: DeviceStep
    prefill_seconds: np.ndarray
    costs: dict[str, np.ndarray]


def decode_inputs(model: Model, d: Deployment, context: ArrayLike, batch: ArrayLike, isl: ArrayLike, bandwidth: float,
                  peak: float, precision: str, link: CollectiveLink, latency: float, activation_bytes: float,
                  efficiency: float) -> DecodeInputs:
    """The cost inputs of ``batch`` running sequences at ``context`` tokens, prompts of ``isl`` tokens, on one GPU of
    ``d`` whose GEMMs run in ``precision`` at ``peak`` FLOP/s; ``latency``, ``activation_bytes`` and ``efficiency``
    as kvwall.model.step_time.device_step reads them."""
    batch = np.asarray(batch, dtype=float)
    isl = np.broadcast_to(np.asarray(isl, dtype=float), batch.shape)
    step = device_step(model, d, context, batch, bandwidth, peak, link, latency, activation_bytes, efficiency)
    prefill = prefill_flops(model, isl) / (peak * d.devices)
    one_forward = batch / step.microbatches
    bytes_only = collectives_time(model, d, one_forward, link, 0.0, activation_bytes)
    experts = model.moe.experts_per_token if model.moe is not None else 0
    costs = {
        "flops_per_device": step.flops,
        "peak_flops": np.full(batch.shape, peak),
        "pipeline_idle": d.pipeline_parallel / step.microbatches,
        "collective_bytes_s": bytes_only,
        "collective_messages": collectives_time(model, d, one_forward, link, 1.0, activation_bytes) - bytes_only,
        "imbalance_read_per_device": step.imbalance_bytes,
        "dispatch_s": expert_parallel_time(model, d, one_forward, link, 0.0, activation_bytes),
        "dispatch_load": sequences_per_replica(one_forward, d.data_parallel) / d.tensor_parallel * experts,
        "expert_ranks": np.full(batch.shape, float(d.expert_parallel if model.moe is not None else 1)),
        "prefill_flops_per_device": prefill * peak,
        "prefill_collectives_s": collectives_time(model, d, isl, link, 0.0, activation_bytes),
        "replica_prefill_flops": first_token_bound(model, d, isl, np.inf, 1.0),
        "prefill_weight_read": step_weight_bytes_per_device(model, d, isl),
        "layers_per_step": step.microbatches * math.ceil(model.n_layers / d.pipeline_parallel),
        "sequences_per_rank": batch / d.data_parallel,
        "fp8_gemms": float(precision == "fp8"),
        "fp4_gemms": float(precision == "fp4"),
        "gemm_columns": mlp_columns_per_device(model, d),
    }
    return DecodeInputs(step, prefill, {name: np.broadcast_to(np.asarray(costs[name], dtype=float), batch.shape)
                                        for name in COST_INPUTS})
