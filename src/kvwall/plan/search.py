"""The search behind `kvwall plan`: every layout of a model on up to N devices, every batch it holds, best first.

A layout is any TP x PP x DP (experts over 1 or all TP x DP devices of a stage) on n <= N devices that the engines can
run (kvwall.model.fitting.candidate_deployments). For each, every batch b from 1 to the sequences it holds at the
longest context of a request, isl + osl (kvwall.model.capacity.sequences_that_fit, under the engine's memory rule),
is evaluated at once: the time per output token at the mean context of a request's decode, isl + osl / 2, from the
step-time function given (an estimate, never the bound), and the time to first token from the function given (the
lower bound of one request's prompt, kvwall.model.first_token, or an estimate at each batch). Per device, a layout
serves b / (TPOT x n) tokens per second; per user, 1 / TPOT. Within the targets the best is the most tokens per
second per device, then the fewest devices, then the lowest TPOT; the frontier is every point that no other beats on
both rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.engines import EngineMemory
from kvwall.inputs.specs import Model, WeightFormats
from kvwall.model.capacity import sequences_that_fit
from kvwall.model.fitting import candidate_deployments

#: Significant digits two rates per device must share to tie (the fewer devices then rank first).
TIE_DIGITS = 9
#: The frontier search first drops the points that one of every SAMPLE_STRIDE-th point beats by CLEAR_MARGIN.
SAMPLE_STRIDE, CLEAR_MARGIN = 64, 1e-7
#: A TPOT target no point misses: what a frontier is searched under.
UNBOUNDED = float("inf")
#: Seconds per output token of a layout at a context, for an array of batches.
StepSeconds = Callable[[Deployment, float, np.ndarray], np.ndarray]
#: Seconds to the first token of a request's prompt (tokens) on a layout, for an array of batches.
FirstTokenSeconds = Callable[[Deployment, float, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Workload:
    """The requests a plan serves: prompt (isl) and output (osl) tokens, and the targets a user sees (s)."""

    input_tokens: int
    output_tokens: int
    tpot_max: float
    ttft_max: float | None = None

    @property
    def longest_context(self) -> float:
        """The context a request's KV reaches: isl + osl."""
        return float(self.input_tokens + self.output_tokens)

    @property
    def decode_context(self) -> float:
        """The mean context over a request's decode: isl + osl / 2."""
        return self.input_tokens + self.output_tokens / 2.0


@dataclass(frozen=True)
class LayoutCurve:
    """One layout evaluated at every batch it holds: TPOT and TTFT (s) per batch."""

    deployment: Deployment
    batches: np.ndarray
    tpot: np.ndarray
    ttft: np.ndarray

    @cached_property
    def tokens_per_second_per_device(self) -> np.ndarray:
        return self.batches / (self.tpot * self.deployment.devices)

    @cached_property
    def tokens_per_second_per_user(self) -> np.ndarray:
        return 1.0 / self.tpot


@dataclass(frozen=True)
class PlanPoint:
    """A layout at one batch: what it serves and what each user sees."""

    deployment: Deployment
    batch: int
    tpot: float  # s per output token (estimate)
    ttft: float  # s, as the first-token function gives it (a bound or an estimate)
    tokens_per_second_per_device: float
    tokens_per_second_per_user: float


def layout_curves(model: Model, weight_format: str | WeightFormats, kv_format: str, devices: int, workload: Workload,
                  hbm_capacity: float, memory: EngineMemory, linked: bool, step_seconds: StepSeconds,
                  first_token_seconds: FirstTokenSeconds) -> list[LayoutCurve]:
    """Every layout on 1 to ``devices`` devices (one device where there is no scale-up link: ``linked`` False) that
    holds at least one request at its longest context, evaluated at every batch it holds."""
    curves = []
    for n in range(1, (devices if linked else 1) + 1):
        for d in candidate_deployments(model, weight_format, kv_format, n):
            held = int(sequences_that_fit(model, d, workload.longest_context, hbm_capacity, memory))
            if held < 1:
                continue
            batches = np.arange(1, held + 1, dtype=float)
            tpot = np.asarray(step_seconds(d, workload.decode_context, batches), dtype=float)
            ttft = np.broadcast_to(np.asarray(first_token_seconds(d, float(workload.input_tokens), batches), dtype=float),
                                   batches.shape)
            curves.append(LayoutCurve(d, batches, tpot, ttft))
    return curves


def point_at(curve: LayoutCurve, i: int) -> PlanPoint:
    """The ``i``-th batch of ``curve`` as a point."""
    return PlanPoint(curve.deployment, int(curve.batches[i]), float(curve.tpot[i]), float(curve.ttft[i]),
                     float(curve.tokens_per_second_per_device[i]), float(curve.tokens_per_second_per_user[i]))


def best_within(curves: list[LayoutCurve], workload: Workload) -> list[PlanPoint]:
    """Per layout that meets the targets at some batch, its batch with the most tokens per second per device; best
    first (most tokens/s per device to TIE_DIGITS significant digits, then fewest devices, then lowest TPOT)."""
    found = []
    for curve in curves:
        within = curve.tpot <= workload.tpot_max
        if workload.ttft_max is not None:
            within &= curve.ttft <= workload.ttft_max
        meets = np.flatnonzero(within)
        if meets.size:
            found.append(point_at(curve, int(meets[np.argmax(curve.tokens_per_second_per_device[meets])])))
    return sorted(found, key=lambda p: (-float(_significant(p.tokens_per_second_per_device)), p.deployment.devices, p.tpot))


def _significant(rate: np.ndarray | float) -> np.ndarray:
    """Rates to TIE_DIGITS significant digits (0 stays 0): DP replicas of one layout serve the same rate but for the
    last bits, and rates that agree to that many digits tie."""
    rate = np.asarray(rate, dtype=float)
    positive = rate > 0
    scale = 10.0 ** (TIE_DIGITS - 1 - np.floor(np.log10(np.where(positive, rate, 1.0))))
    return np.where(positive, np.round(rate * scale) / scale, rate)


def closest(curves: list[LayoutCurve]) -> PlanPoint | None:
    """Where nothing meets the targets: the layout with the lowest TPOT (at batch 1), fewest devices first."""
    if not curves:
        return None
    return min((point_at(c, 0) for c in curves), key=lambda p: (p.tpot, p.deployment.devices))


def frontier(curves: list[LayoutCurve]) -> list[PlanPoint]:
    """The points no other point beats on both tokens/s per device and tokens/s per user (each to TIE_DIGITS
    significant digits; of points that tie on both, the one on the fewest devices), fastest per user first."""
    if not curves:
        return []
    per_user = np.concatenate([c.tokens_per_second_per_user for c in curves])
    per_device = np.concatenate([c.tokens_per_second_per_device for c in curves])
    candidates = _not_clearly_beaten(per_user, per_device)
    per_user, per_device = _significant(per_user[candidates]), _significant(per_device[candidates])
    devices = np.concatenate([np.full(c.batches.size, c.deployment.devices) for c in curves])[candidates]
    curve_of = np.concatenate([np.full(c.batches.size, k) for k, c in enumerate(curves)])[candidates]
    index_in = np.concatenate([np.arange(c.batches.size) for c in curves])[candidates]
    order = np.lexsort((devices, -per_device, -per_user))  # the last key sorts first
    ranked = per_device[order]
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(ranked)[:-1]))
    return [point_at(curves[curve_of[k]], int(index_in[k])) for k in order[ranked > best_before]]


def _not_clearly_beaten(per_user: np.ndarray, per_device: np.ndarray) -> np.ndarray:
    """Indices of the points that no point of a sample (every SAMPLE_STRIDE-th) beats on both rates by more than
    CLEAR_MARGIN, a margin past any rounding to TIE_DIGITS digits: such a point ranks before the one it beats in
    frontier's order and keeps it off the frontier, so the frontier of the points left is the frontier of all,
    found by sorting a few instead of millions."""
    sample = np.arange(0, per_user.size, SAMPLE_STRIDE)
    by_user = sample[np.argsort(-per_user[sample], kind="stable")]
    best_faster = np.maximum.accumulate(per_device[by_user])  # the best per device of the sample's k fastest per user
    faster = np.searchsorted(-per_user[by_user], -per_user * (1.0 + CLEAR_MARGIN), side="left")
    beaten = (faster > 0) & (best_faster[np.maximum(faster - 1, 0)] > per_device * (1.0 + CLEAR_MARGIN))
    return np.flatnonzero(~beaten)
