"""The time to first token of a measured point, estimated with an engine's constants (kvwall.model.engine_constants).

A benchmark at a fixed concurrency sends requests of one length: where they finish together they arrive together,
a wave of `running` prefills of isl tokens each, and a request waits on average for half the wave ahead of it besides
its own, (running - 1) / 2 other prefills (agg). Its clients are a closed loop whose requests spread out as their
lengths and chunked prefills shift them, so a request waits for a share w of that wave (the engine's wave_share, 0 to
1: 1 for a wave, 0 for requests that never meet). Each prefill costs its FLOPs per GPU of the engine F_pre over f P,
but no less than the weight bytes W_pre per GPU its tokens touch (every routed expert of an MoE model, for a prompt
of any length) over h beta, the rate the decode step reads bf16 weights at: a prompt that arrives alone is a prefill
batch of its own, and its GEMMs, with many tokens each, run at their FLOPs past that. In an engine whose steps run
the batch's decodes beside prompt chunks under one token budget it also pays the decode step S of each of the n
steps its chunks ride (kvwall.model.prompt_steps: n = isl / (B - running), 0 where prompts run apart). A
disaggregated request's prefill runs alone on a replica of its prefill workers, its FLOPs per GPU of the replica
(kvwall.model.first_token) over f P, at least its weights read: the prefill pool's load does not set it
(tables/derived/serving_disagg_load). Both add the fixed cost t0 before a first token (scheduling, tokenization, the
first decode step, the response). In agg mode a request in flight beyond the batch that runs (the capacity
crossover: fewer sequences fit than are in flight) first waits for a running one to end. The benchmark's clients are
a closed loop, so in flight - running requests wait while slots free at running / (osl x TPOT) a second (each
running request ends after osl steps), and by Little's law a request waits (in flight - running) / running x osl x
TPOT, TPOT the decode step S of kvwall.model.decode_costs over the tokens a step emits:

    P_one = max(F_pre / (f P), W_pre / (h beta))
    TTFT  = t0 + wait + (1 + w (running - 1) / 2) x (P_one + n S)                  agg
    TTFT  = t0 + max(F_replica / (f P), W_pre / (h beta))                          disagg

A point without the requests in flight (a planned one, which never exceeds what fits) waits for none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import decode_step
from kvwall.model.engine_constants import EngineConstants


def _waiting(points: pd.DataFrame) -> np.ndarray:
    """Requests in flight beyond the batch that runs, per agg point (0 in disagg mode or without the column)."""
    if "in_flight" not in points:
        return np.zeros(len(points))
    beyond = points["in_flight"].to_numpy(dtype=float) - points["running_batch"].to_numpy(dtype=float)
    return np.where((points["mode"] == "agg").to_numpy(), np.maximum(beyond, 0.0), 0.0)


def _capacity_wait(points: pd.DataFrame, waiting: np.ndarray, step: np.ndarray, tokens: float) -> np.ndarray:
    running = np.maximum(points["running_batch"].to_numpy(dtype=float), 1.0)
    return waiting / running * points["osl"].to_numpy(dtype=float) * step / tokens


def capacity_wait(points: pd.DataFrame, constants: EngineConstants, tokens: float) -> np.ndarray:
    """Seconds an agg request waits for a running slot (the module's closed loop): (in flight - running) / running
    x osl x TPOT, 0 where every request in flight runs, in disagg mode, or where the points do not record the
    requests in flight; ``tokens`` per decode step."""
    waiting = _waiting(points)
    if not waiting.any():
        return np.zeros(len(points))
    return _capacity_wait(points, waiting, decode_step(points, constants), tokens)


def first_token_estimate(points: pd.DataFrame, constants: EngineConstants, tokens: float) -> np.ndarray:
    """Seconds to the first token of each point: the fixed cost, the wait for a running slot (capacity_wait) and the
    prefills it waits for (a share of the wave) and its own, each with the decode steps its chunks ride; ``tokens``
    per decode step."""
    rate = constants.flop_fraction * points["peak_flops"].to_numpy(dtype=float)
    weights = points["prefill_weight_read"].to_numpy(dtype=float) / (
        constants.hbm_fraction * points["hbm_bandwidth"].to_numpy(dtype=float))
    others = constants.wave_share * (points["running_batch"].to_numpy(dtype=float) - 1.0) / 2.0
    agg = (points["mode"] == "agg").to_numpy()
    waiting, rides = _waiting(points), points["prompt_steps"].to_numpy(dtype=float)
    step = decode_step(points, constants) if waiting.any() or rides.any() else np.zeros(len(points))
    one_prompt = np.maximum(points["prefill_flops_per_device"].to_numpy(dtype=float) / rate, weights) + rides * step
    replica = np.maximum(points["replica_prefill_flops"].to_numpy(dtype=float) / rate, weights)
    prefill = np.where(agg, (1.0 + others) * one_prompt, replica)
    return constants.first_token_fixed + _capacity_wait(points, waiting, step, tokens) + prefill
