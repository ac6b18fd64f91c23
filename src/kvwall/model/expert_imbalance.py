"""The busiest expert-parallel rank of an MoE decode step: the experts it reads, beside the average rank's.

Under expert parallelism each of EP ranks holds n = E / EP routed experts. A step of b tokens, each routed to k of E
experts, touches a given expert with probability q = 1 - (1 - k/E)^b (uniform routing, the assumption of
kvwall.model.roofline.experts_touched_fraction); a rank's touched experts are taken as Binomial(n, q), the ranks as
independent, and the all-to-all waits for the busiest: E[max over EP ranks] = sum_{m < n} (1 - F(m)^EP), F the
binomial distribution function. For one token of Qwen3-235B over 8 ranks (k = 8, E = 128) that is 2.51 experts on
the busiest rank (2.53 without replacement), not the average 1. The bound keeps the average rank (a bound holds for
the luckiest routing); the estimate prices the busiest.

The busiest rank's fraction lies between q and 1, so where 1 - q < SATURATED (large batches: every expert touched) it
is q to 12 digits and is taken as q. Elsewhere the binomial terms come from the ratio of successive terms, counted
from the likelier end, by multiplication alone, in blocks of batches that stay in cache. A sweep over every batch a
deployment holds (kvwall.plan) would evaluate n terms at each of thousands of batches, so the values are computed
once per model and EP: exactly at whole token counts (every layout without PP steps whole tokens), and on a grid of
counts GRID_RATIO apart for the fractional counts of a PP microbatch (b / m tokens), whose busiest fraction is q plus
the excess over q interpolated linearly on that grid: within 0.05% of the excess and 1e-4 of an expert of the
catalogue's MoE models at any EP, where the binomial itself is 1% off the draw without replacement.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.specs import Model
from kvwall.model.roofline import experts_touched_fraction

#: Below this share of untouched experts, the busiest rank reads what the average rank reads (to 12 digits).
SATURATED = 1e-12
#: Batches whose binomial terms are evaluated together.
BLOCK_ROWS = 1024
#: Ratio of successive token counts of the grid that fractional counts interpolate on, from GRID_START tokens.
GRID_RATIO, GRID_START = 1.0 + 2.0**-8, 2.0**-6


def busiest_rank_touched_fraction(model: Model, d: Deployment, batch: ArrayLike) -> np.ndarray:
    """The expected fraction of its routed experts the busiest of EP ranks reads in a step of ``batch`` tokens; the
    average rank's q where EP is 1 (every device holds a share of every expert) or the model is dense."""
    q = experts_touched_fraction(model, batch)
    ranks = d.expert_parallel
    if model.moe is None or ranks <= 1:
        return q
    tokens = np.broadcast_to(np.asarray(batch, dtype=float), q.shape).reshape(-1)
    busiest = np.array(q, dtype=float, copy=True)
    flat = busiest.reshape(-1)
    table = _at_whole_tokens(model, ranks)
    unsaturated = 1.0 - flat >= SATURATED
    whole = unsaturated & (tokens == np.floor(tokens)) & (tokens < table.size)
    flat[whole] = table[tokens[whole].astype(int)]
    grid, excess = _excess_on_grid(model, ranks)
    fractional = unsaturated & ~whole & (tokens >= grid[0]) & (tokens <= grid[-1])
    flat[fractional] = np.minimum(flat[fractional] + np.interp(tokens[fractional], grid, excess), 1.0)
    rows = np.flatnonzero(unsaturated & ~whole & ~fractional)
    flat[rows] = _binomial_maximum(model.moe.routed_experts // ranks, ranks, flat[rows])
    return busiest


@lru_cache(maxsize=256)
def _at_whole_tokens(model: Model, ranks: int) -> np.ndarray:
    """The busiest rank's fraction at 0, 1, 2, ... tokens, up to the first count where every expert is touched
    (SATURATED): a layout without PP steps whole tokens, and every such layout of one EP shares these values."""
    p_miss = 1.0 - model.moe.experts_per_token / model.moe.routed_experts
    tokens = np.arange(int(np.ceil(np.log(SATURATED) / np.log(p_miss))) + 1, dtype=float)
    return _binomial_maximum(model.moe.routed_experts // ranks, ranks, experts_touched_fraction(model, tokens))


@lru_cache(maxsize=256)
def _excess_on_grid(model: Model, ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Token counts GRID_RATIO apart from GRID_START to the whole-token table's last count, and the busiest rank's
    fraction beyond q at each: what a fractional count interpolates."""
    last = _at_whole_tokens(model, ranks).size - 1
    grid = GRID_START * GRID_RATIO ** np.arange(int(np.ceil(np.log(last / GRID_START) / np.log(GRID_RATIO))) + 1)
    grid[-1] = last
    q = experts_touched_fraction(model, grid)
    return grid, _binomial_maximum(model.moe.routed_experts // ranks, ranks, q) - q


def _binomial_maximum(n: int, ranks: int, q: np.ndarray) -> np.ndarray:
    """E[max over ``ranks`` of Binomial(n, q)] / n per q, sum_{m < n} (1 - F(m)^ranks) / n."""
    found = np.empty_like(q)
    for start in range(0, q.size, BLOCK_ROWS):  # a block's terms stay in cache, no fresh pages per step
        distribution = np.cumsum(binomial_probabilities(n, q[start:start + BLOCK_ROWS]), axis=-1)[:, :n]
        np.minimum(distribution, 1.0, out=distribution)
        np.power(distribution, ranks, out=distribution)
        np.subtract(1.0, distribution, out=distribution)
        found[start:start + BLOCK_ROWS] = distribution.sum(axis=-1) / n
    return found


def binomial_probabilities(n: int, p: np.ndarray) -> np.ndarray:
    """P(X = j) for j = 0..n of X ~ Binomial(n, p), one row per p: from the likelier end, (1 - p)^n at j = 0 where
    p <= 1/2 (at least 2^-n, so nothing underflows for n below 1,000), each next term the last times
    (n - j + 1) / j * p / (1 - p); where p > 1/2 the same for 1 - p, read from j = n down."""
    low = np.minimum(p, 1.0 - p)[..., np.newaxis]
    j = np.arange(1, n + 1)
    steps = np.concatenate([(1.0 - low) ** n, (n - j + 1) / j * (low / (1.0 - low))], axis=-1)
    terms = np.cumprod(steps, axis=-1)
    return np.where(p[..., np.newaxis] > 0.5, terms[..., ::-1], terms)
