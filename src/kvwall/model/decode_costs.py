"""A decode step per GPU as a sum of named, non-negative costs, vectorized over measured points.

With the engine's constants (kvwall.model.engine_constants.EngineConstants: fixed step cost c, realized fractions
h <= 1 of the HBM bandwidth and f <= 1 of the dense peak, latency l per collective message, cost c_L per layer and
c_S per sequence, extra time x_8 and x_4 per weight byte of fp8 and fp4 GEMMs, the columns n_N at which a GEMM's
weights stream at half their rate), on one GPU:

    weights     = idle x (1 + x_G) (1 + n_N / N) W / (h beta)        W: weight bytes read per step, x_G: x_8, x_4 or 0,
                                                                     N: the columns of the MLP's GEMMs per GPU
    kv          = idle x r KV / (h beta)                             r: stored over counted KV bytes per element
    compute     = idle x max(0, F / (f P) - (weights + kv) / idle - X / (h beta))  the FLOPs past the bytes
    collectives = bytes / link + messages x l
    imbalance   = idle x X / (h beta) + dispatch x sqrt(2 ln E / load)  the busiest of E EP ranks (E > 1)
    fixed       = c + idle x L_step c_L + S_rank c_S                   L_step: layers a GPU runs, S_rank: sequences
    prefill     = running / osl x (F_pre / (f P) + C_pre)            agg only: arrivals per step, isl tokens each

idle is PP over microbatches (kvwall.model.step_time). GEMMs in fp8 or fp4 (the precision the step computes in) read
their weights slower per byte than bf16's, their scales and dequantization besides (one H200 read fp8 decode GEMMs'
weights at 0.84 of bf16's rate per byte, tests/fixtures/h200-measurements/weights_fp8.csv); x_8 and x_4 are fitted per
engine (tables/derived/serving_transfer). A GEMM split over many GPUs computes few columns on each (N = the MLP's
intermediate size over TP, an MoE's expert intermediate size over the ranks that split an expert,
kvwall.model.sharding.mlp_columns_per_device): few tiles, few blocks, multiprocessors idle while the weights stream,
so they stream at 1 / (1 + n_N / N) of the rate; n_N is fitted per engine and carries over to a model no fit saw
(tables/derived/serving_transfer). The fixed cost is what a step spends whatever it reads and computes: once per step,
once per layer it runs (its kernels' launches and synchronisations: its stage's ceil(L / PP) layers once per
microbatch, as it reads their weights, so that idle x L_step is PP ceil(L / PP), L where PP divides it) and once per
sequence of an attention-DP rank (its scheduling and sampling); the last two carry over to a model no fit saw
(tables/derived/serving_transfer). The all-to-all waits for the busiest EP rank, which costs twice: X, the
routed-expert bytes it reads beyond the average rank's (kvwall.model.expert_imbalance; W is the average rank's), and
the extra tokens it receives, load being the routed assignments per EP rank (their expected maximum over E ranks is
load + sqrt(2 load ln E), a Gaussian maximum); without EP both are 0. F_pre is the prefill FLOPs of isl tokens per GPU
of the engine, C_pre the seconds the collectives of those isl tokens take on the links, bytes only (the prompt's
tokens ride the step's all-reduces, dispatch and stage sends: a TP ring sends 2 (TP - 1) / TP of them whatever TP is,
so this cost does not shrink as TP grows, unlike the FLOPs). At steady state a request leaves every osl steps, so
running / osl arrive per step (chunked prefill). The step is the sum; TPOT is the step over the tokens a step emits.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.engine_constants import EngineConstants

#: The named costs, in the order they are summed.
COSTS = ("weights", "kv", "compute", "collectives", "imbalance", "fixed", "prefill")


@dataclass(frozen=True)
class CostInputs:
    """What the named costs read of the points (columns of kvwall.validation.points), as arrays: read once, priced
    at any constants (a fit prices the same points at every step of its solver)."""

    idle: np.ndarray
    hbm_bandwidth: np.ndarray
    peak_flops: np.ndarray
    weight_read: np.ndarray
    stored_kv_read: np.ndarray  # r KV
    imbalance_read: np.ndarray
    flops: np.ndarray
    collective_bytes_s: np.ndarray
    collective_messages: np.ndarray
    dispatch_spread_s: np.ndarray  # dispatch x sqrt(2 ln E / load)
    arrivals: np.ndarray  # running / osl in agg mode, 0 in disagg
    prefill_flops: np.ndarray
    prefill_collectives_s: np.ndarray
    layers_per_step: np.ndarray
    sequences_per_rank: np.ndarray
    fp8_gemms: np.ndarray  # 1 where the step's GEMMs run in fp8, else 0
    fp4_gemms: np.ndarray
    gemm_columns: np.ndarray  # N, the columns of the MLP's GEMMs per GPU

    def take(self, chosen: np.ndarray) -> "CostInputs":
        """The inputs of the points ``chosen`` selects (a boolean mask or positions)."""
        return CostInputs(*(getattr(self, f.name)[chosen] for f in fields(self)))


def cost_inputs(points: pd.DataFrame) -> CostInputs:
    """The arrays of ``points`` the named costs read."""
    def column(name: str) -> np.ndarray:
        return points[name].to_numpy(dtype=float)

    ranks, load = column("expert_ranks"), column("dispatch_load")
    spread = np.sqrt(2.0 * np.log(np.maximum(ranks, 1.0)) / np.where(load > 0, load, np.inf))
    agg = (points["mode"] == "agg").to_numpy()
    return CostInputs(
        idle=column("pipeline_idle"), hbm_bandwidth=column("hbm_bandwidth"), peak_flops=column("peak_flops"),
        weight_read=column("weight_read_per_device"),
        stored_kv_read=column("stored_kv_ratio") * column("kv_read_per_device"),
        imbalance_read=column("imbalance_read_per_device"), flops=column("flops_per_device"),
        collective_bytes_s=column("collective_bytes_s"), collective_messages=column("collective_messages"),
        dispatch_spread_s=column("dispatch_s") * spread,
        arrivals=np.where(agg, column("running_batch") / column("osl"), 0.0),
        prefill_flops=column("prefill_flops_per_device"), prefill_collectives_s=column("prefill_collectives_s"),
        layers_per_step=column("layers_per_step"), sequences_per_rank=column("sequences_per_rank"),
        fp8_gemms=column("fp8_gemms"), fp4_gemms=column("fp4_gemms"), gemm_columns=column("gemm_columns"))


def priced_costs(inputs: CostInputs, constants: EngineConstants) -> dict[str, np.ndarray]:
    """Seconds per decode step per GPU of each named cost of the points ``inputs`` holds."""
    idle = inputs.idle
    bandwidth = constants.hbm_fraction * inputs.hbm_bandwidth
    rate = constants.flop_fraction * inputs.peak_flops
    weights = inputs.weight_read / bandwidth * (
        1.0 + constants.fp8_weight_extra * inputs.fp8_gemms + constants.fp4_weight_extra * inputs.fp4_gemms) * (
        1.0 + constants.half_rate_columns / inputs.gemm_columns)
    kv = inputs.stored_kv_read / bandwidth
    busiest = inputs.imbalance_read / bandwidth
    compute = np.maximum(inputs.flops / rate - weights - kv - busiest, 0.0)
    return {
        "weights": idle * weights,
        "kv": idle * kv,
        "compute": idle * compute,
        "collectives": inputs.collective_bytes_s + inputs.collective_messages * constants.collective_latency,
        "imbalance": idle * busiest + inputs.dispatch_spread_s,
        "fixed": constants.fixed_step + idle * inputs.layers_per_step * constants.layer_step
        + inputs.sequences_per_rank * constants.sequence_step,
        "prefill": inputs.arrivals * (inputs.prefill_flops / rate + inputs.prefill_collectives_s),
    }


def decode_costs(points: pd.DataFrame, constants: EngineConstants) -> dict[str, np.ndarray]:
    """Seconds per decode step per GPU of each named cost for every point (columns of kvwall.validation.points)."""
    return priced_costs(cost_inputs(points), constants)


def step_of(costs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The decode step per GPU (s) of decode_costs' ``costs``: their sum, in COSTS' order."""
    return sum((costs[name] for name in COSTS), np.zeros(np.shape(costs["prefill"])))


def prefill_stretch(costs: Mapping[str, np.ndarray]) -> np.ndarray:
    """How far the prefills of arriving requests stretch a decode step: the step over the step without its prefill
    cost (1 where nothing arrives: a disagg decode step); ``costs``: decode_costs' of the points."""
    step = step_of(costs)
    return step / (step - costs["prefill"])


def decode_step(points: pd.DataFrame, constants: EngineConstants) -> np.ndarray:
    """The decode step per GPU (s): the sum of decode_costs."""
    return step_of(decode_costs(points, constants))
