"""The targets the calibrated estimate's held-out error is held to, new models first: printed by `kvwall benchmark`
(from a build's tables/derived/serving_estimate_error) and `kvwall validate --summary`, never asserted by a test.

What a planner meets is a model or a device it has never measured, so the error of the estimate `kvwall plan --engine`
prices with (the constants times the offsets, kvwall.validation.estimate_error) leaving one model out leads, then one
device out, then the in-distribution grouped 5-fold, on every engine's points ("all"). The fit and every scheme of
kvwall.validation.estimate_error.assess on the committed measurements within FIT_SECONDS, one thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from kvwall.validation.estimate_error import SCHEMES, assess


@dataclass(frozen=True)
class ErrorTarget:
    """One statistic of one scheme, quantity and mode, at most (``at_most``) or at least ``bound``."""

    scheme: str
    quantity: str
    mode: str
    statistic: str
    bound: float
    at_most: bool = True

    def label(self, value: float) -> str:
        """'leave one model out, with offsets: agg TPOT median_error 15.3% <= 10%'."""
        return (f"{self.scheme}: {self.mode} {self.quantity} {self.statistic} {value:.1%} "
                f"{'<=' if self.at_most else '>='} {self.bound:.0%}")

    def met(self, value: float) -> bool:
        return value <= self.bound if self.at_most else value >= self.bound


#: The targets, in the order they are printed.
ERROR_TARGETS = (
    ErrorTarget(SCHEMES[7], "TPOT", "agg", "median_error", 0.10),
    ErrorTarget(SCHEMES[7], "TPOT", "agg", "mean_error", 0.15),
    ErrorTarget(SCHEMES[7], "TPOT", "agg", "within_10", 0.55, at_most=False),
    ErrorTarget(SCHEMES[7], "TTFT", "agg", "median_error", 0.25),
    ErrorTarget(SCHEMES[8], "TPOT", "agg", "median_error", 0.12),
    ErrorTarget(SCHEMES[6], "TPOT", "agg", "median_error", 0.06),
    ErrorTarget(SCHEMES[6], "TTFT", "agg", "median_error", 0.15),
    ErrorTarget(SCHEMES[6], "TTFT", "disagg", "median_error", 0.30),
)
#: Seconds the fit and every cross-validation scheme may take.
FIT_SECONDS = 20.0


def scored(errors: pd.DataFrame) -> tuple[tuple[str, bool], ...]:
    """Each target of ERROR_TARGETS that ``errors`` (the summary of kvwall.validation.estimate_error, or its table
    as read) holds, as its label and whether it is met."""
    pooled = errors[errors["backend"] == "all"].set_index(["scheme", "quantity", "mode"])
    found = []
    for target in ERROR_TARGETS:
        key = (target.scheme, target.quantity, target.mode)
        if key in pooled.index:
            value = float(pooled.loc[key, target.statistic])
            found.append((target.label(value), target.met(value)))
    return tuple(found)


def assessment_seconds(understood: pd.DataFrame, rows: pd.DataFrame, tokens: float, latency: float,
                       pseudo_count: float, families) -> float:
    """Seconds kvwall.validation.estimate_error.assess takes: every engine's fit and every scheme."""
    start = time.perf_counter()
    assess(understood, rows, tokens, latency, pseudo_count, families)
    return time.perf_counter() - start
