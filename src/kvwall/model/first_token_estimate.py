"""The time to first token of a measured point, estimated with an engine's constants (kvwall.model.engine_constants).

One request's prefill of isl tokens on its replica: p = max(its FLOPs per GPU over f P, one read of a GPU's weights
over h beta) (the terms of kvwall.model.first_token at realized rates). In agg mode it waits behind the other
requests' prefills on the same engine, an M/D/1 queue: prefills arrive at running / osl per step
(kvwall.model.decode_costs), so the engine spends a share rho = prefill cost / step of its time prefilling (capped at
RHO_MAX), and the mean wait is rho / (2 (1 - rho)) x p (Pollaczek-Khinchine): TTFT = p (1 + rho / (2 (1 - rho))).
Disaggregated prefill workers' load is not recorded: there the estimate is the prefill alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import decode_costs
from kvwall.model.engine_constants import EngineConstants
from kvwall.units import MS

#: The highest share of the engine's time the queue takes as prefill (a saturated queue would wait forever).
RHO_MAX = 0.95


def first_token_estimate(points: pd.DataFrame, constants: EngineConstants) -> np.ndarray:
    """Seconds to the first token of each point: its prefill plus the mean wait behind the others'."""
    rate = constants.flop_fraction * points["peak_flops"].to_numpy(dtype=float)
    weights = points["weight_read_ms"].to_numpy(dtype=float) * MS / constants.hbm_fraction
    prefill = np.maximum(points["replica_prefill_flops"].to_numpy(dtype=float) / rate, weights)
    costs = decode_costs(points, constants)
    step = sum(costs.values(), np.zeros(len(points)))
    rho = np.minimum(costs["prefill"] / step, RHO_MAX)
    return prefill * (1.0 + rho / (2.0 * (1.0 - rho)))
