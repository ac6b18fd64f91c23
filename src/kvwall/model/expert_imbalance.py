"""The busiest expert-parallel rank of an MoE decode step: the experts it reads, beside the average rank's.

Under expert parallelism each of EP ranks holds n = E / EP routed experts. A step of b tokens, each routed to k of E
experts, touches a given expert with probability q = 1 - (1 - k/E)^b (uniform routing, the assumption of
kvwall.model.roofline.experts_touched_fraction); a rank's touched experts are taken as Binomial(n, q), the ranks as
independent, and the all-to-all waits for the busiest: E[max over EP ranks] = sum_{m < n} (1 - F(m)^EP), F the
binomial distribution function. For one token of Qwen3-235B over 8 ranks (k = 8, E = 128) that is 2.51 experts on
the busiest rank (2.53 without replacement), not the average 1. The bound keeps the average rank (a bound holds for
the luckiest routing); the estimate prices the busiest.
"""

from __future__ import annotations

from math import comb

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import Model
from kvwall.model.roofline import experts_touched_fraction


def busiest_rank_touched_fraction(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """The expected fraction of its routed experts the busiest of EP ranks reads in a step of ``batch`` tokens; the
    average rank's q where EP is 1 (every device holds a share of every expert) or the model is dense."""
    q = experts_touched_fraction(model, batch)
    ranks = d.expert_parallel
    if model.moe is None or ranks <= 1:
        return q
    n = model.moe.routed_experts // ranks
    touched = np.arange(n + 1)
    ways = np.array([comb(n, j) for j in touched], dtype=float)
    p = q[..., np.newaxis]
    distribution = np.cumsum(ways * p**touched * (1.0 - p) ** (n - touched), axis=-1)[..., :n]
    return np.sum(1.0 - np.minimum(distribution, 1.0) ** ranks, axis=-1) / n
