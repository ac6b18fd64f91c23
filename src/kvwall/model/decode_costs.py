"""A decode step per GPU as a sum of named, non-negative costs, vectorized over measured points.

With the engine's constants (kvwall.model.engine_constants.EngineConstants: fixed step cost c, realized fractions
h <= 1 of the HBM bandwidth and f <= 1 of the dense peak, latency l per collective message), on one GPU:

    weights     = idle x W / (h beta)                                W: weight bytes read per step
    kv          = idle x r KV / (h beta)                             r: stored over counted KV bytes per element
    compute     = idle x max(0, F / (f P) - (W + r KV + X) / (h beta)) the step's FLOPs past its bytes (roofline)
    collectives = bytes / link + messages x l
    imbalance   = idle x X / (h beta) + dispatch x sqrt(2 ln E / load)  the busiest of E EP ranks (E > 1)
    fixed       = c
    prefill     = running / osl x (F_pre / (f P) + C_pre)            agg only: arrivals per step, isl tokens each

idle is PP over microbatches (kvwall.model.step_time). The all-to-all waits for the busiest EP rank, which costs
twice: X, the routed-expert bytes it reads beyond the average rank's (kvwall.model.expert_imbalance; W is the average
rank's), and the extra tokens it receives, load being the routed assignments per EP rank (their expected maximum over
E ranks is load + sqrt(2 load ln E), a Gaussian maximum); without EP both are 0. F_pre is the prefill FLOPs of isl
tokens per GPU of the engine, C_pre the seconds the collectives of those isl tokens take on the links, bytes only (the
prompt's tokens ride the step's all-reduces, dispatch and stage sends: a TP ring sends 2 (TP - 1) / TP of them whatever
TP is, so this cost does not shrink as TP grows, unlike the FLOPs). At steady state a request leaves every osl steps,
so running / osl arrive per step (chunked prefill). The step is the sum; TPOT is the step over the tokens a step emits.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.engine_constants import EngineConstants

#: The named costs, in the order they are summed.
COSTS = ("weights", "kv", "compute", "collectives", "imbalance", "fixed", "prefill")


def decode_costs(points: pd.DataFrame, constants: EngineConstants) -> dict[str, np.ndarray]:
    """Seconds per decode step per GPU of each named cost for every point (columns of kvwall.validation.points)."""
    idle = points["pipeline_idle"].to_numpy(dtype=float)
    bandwidth = constants.hbm_fraction * points["hbm_bandwidth"].to_numpy(dtype=float)
    rate = constants.flop_fraction * points["peak_flops"].to_numpy(dtype=float)
    weights = points["weight_read_per_device"].to_numpy(dtype=float) / bandwidth
    kv = points["stored_kv_ratio"].to_numpy(dtype=float) * points["kv_read_per_device"].to_numpy(dtype=float) / bandwidth
    busiest = points["imbalance_read_per_device"].to_numpy(dtype=float) / bandwidth
    compute = np.maximum(points["flops_per_device"].to_numpy(dtype=float) / rate - weights - kv - busiest, 0.0)
    ranks = points["expert_ranks"].to_numpy(dtype=float)
    load = points["dispatch_load"].to_numpy(dtype=float)
    spread = np.sqrt(2.0 * np.log(np.maximum(ranks, 1.0)) / np.where(load > 0, load, np.inf))
    agg = (points["mode"] == "agg").to_numpy()
    arrivals = np.where(agg, points["running_batch"].to_numpy(dtype=float) / points["osl"].to_numpy(dtype=float), 0.0)
    return {
        "weights": idle * weights,
        "kv": idle * kv,
        "compute": idle * compute,
        "collectives": (points["collective_bytes_s"].to_numpy(dtype=float)
                        + points["collective_messages"].to_numpy(dtype=float) * constants.collective_latency),
        "imbalance": idle * busiest + points["dispatch_s"].to_numpy(dtype=float) * spread,
        "fixed": np.full(len(points), constants.fixed_step),
        "prefill": arrivals * (points["prefill_flops_per_device"].to_numpy(dtype=float) / rate
                               + points["prefill_collectives_s"].to_numpy(dtype=float)),
    }


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
