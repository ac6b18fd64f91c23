"""The time to first token of a measured point, estimated with an engine's constants (kvwall.model.engine_constants).

A benchmark at a fixed concurrency sends requests of one length, so they finish together and arrive together: a wave
of `running` prefills of isl tokens each runs on the engine, and a request waits on average for half the wave ahead
of it and its own, (running + 1) / 2 prefills of F_pre FLOPs per GPU of the engine over f P (agg). A disaggregated
request's prefill runs alone on its replica, its FLOPs per GPU of the replica (kvwall.model.first_token) over f P:
the prefill workers' load is not recorded. Both add the fixed cost t0 before a first token (scheduling,
tokenization, the first decode step, the response):

    TTFT = t0 + (running + 1) / 2 x F_pre / (f P)      agg
    TTFT = t0 + F_replica / (f P)                        disagg
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.model.engine_constants import EngineConstants


def first_token_estimate(points: pd.DataFrame, constants: EngineConstants) -> np.ndarray:
    """Seconds to the first token of each point: the fixed cost plus the prefills it waits for and its own."""
    rate = constants.flop_fraction * points["peak_flops"].to_numpy(dtype=float)
    wave = (points["running_batch"].to_numpy(dtype=float) + 1.0) / 2.0 * points["prefill_flops_per_device"].to_numpy(dtype=float)
    agg = (points["mode"] == "agg").to_numpy()
    prefill = np.where(agg, wave, points["replica_prefill_flops"].to_numpy(dtype=float)) / rate
    return constants.first_token_fixed + prefill
