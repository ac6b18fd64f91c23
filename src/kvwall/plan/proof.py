"""Whether the estimate picks the layouts the measurements pick: the measured groups ranked both ways.

A group is the understood agg points of the serving measurements (kvwall.validation) that share a model, a
system, an engine, a weight format and the lengths isl and osl, at two layouts or more. At a TPOT limit, each
layout's throughput per GPU is its best in_flight / (TPOT x GPUs) over its points whose TPOT is within the limit:
measured with the measured TPOT, estimated with an estimate's, at the same concurrencies. Two estimates rank: the
datasheet step-time estimate (kvwall.model.step_time, no fitted constant) and the calibrated one as grouped
cross-validation predicts it (kvwall.validation.estimate_error), folds of whole groups: every layout of a group is
predicted by the same constants, fitted without any point of the group. The layouts the
measurements rank (those with a point within the limit) are ranked both ways; a layout the estimate puts past the
limit at every concurrency ranks last. The limits: the median of the group's measured TPOT, where half its measured
points qualify, and the loosest, no limit, where every point qualifies both ways (at the largest measured TPOT
instead, an estimate above it at the slowest point of a layout would drop that point: the limit would be loose for
the measurements only). Top-1 agreement: both rankings put the same layout first; the rank correlation is Spearman's
(ties at their mean rank), undefined where either ranking is all ties; and what the estimate's first layout costs
where it is not the measurements': its measured rate over the measured first layout's.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pandas as pd

from kvwall.validation.estimate_error import grouped_folds, held_out, measured_times

#: The columns that make a group, and those that tell its layouts apart.
GROUP = ("model", "device", "backend", "weight_format", "isl", "osl")
LAYOUT = ("devices", "tp", "pp", "dp", "moe_ep")
#: Each TPOT limit as the quantile of the group's measured TPOT it sits at; None: no limit.
LIMITS = {"median": 0.5, "loosest": None}


#: The estimates ranked, and the column of the points each one's TPOT is in (ms).
ESTIMATES = {"datasheet": "tpot_estimate_ms", "calibrated, held out": "tpot_calibrated_ms"}


def layout_name(row: pd.Series) -> str:
    """4 GPUs TP4 EP4: the GPU count and the degrees above 1."""
    degrees = [f"{name}{int(row[column])}" for name, column in (("TP", "tp"), ("PP", "pp"), ("DP", "dp"), ("EP", "moe_ep"))
               if int(row[column]) > 1]
    return " ".join([f"{int(row['devices'])} GPU{'s' if int(row['devices']) > 1 else ''}", *degrees])


def held_out_tpot(points: pd.DataFrame, rows: pd.DataFrame, tokens: float) -> pd.Series:
    """The calibrated TPOT (ms) of each understood point, from constants fitted on the folds without its group."""
    return held_out(points, measured_times(points, rows), tokens, grouped_folds(points, GROUP))["tpot"]


def rank_correlation(first: pd.Series, second: pd.Series) -> float:
    """Pearson's correlation of two rankings (Spearman's on the values ranked), exact: ranks are multiples of 1/2,
    so the sums are computed in fractions and rounded once, the same on every machine."""
    x, y = [Fraction(v) for v in first], [Fraction(v) for v in second]
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    covariance = sum((a - mx) * (b - my) for a, b in zip(x, y))
    spread = sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y)
    return float(covariance) / math.sqrt(float(spread))


def _best_per_layout(group: pd.DataFrame, tpot_ms: str, limit: float) -> pd.Series:
    """Per layout, the most tokens per second per GPU among its points with ``tpot_ms`` within ``limit``."""
    within = group[group[tpot_ms] <= limit]
    rate = within["in_flight"] / (within[tpot_ms] / 1e3) / within["devices"]
    return rate.groupby(within["layout"]).max()


def rankings(points: pd.DataFrame, estimates: dict[str, str]) -> pd.DataFrame:
    """One row per estimate, group and limit: layouts ranked, the best of each ranking, top-1 agreement, rank
    correlation.

    ``points``: understood points with the measured ``tpot_ms``; ``estimates``: each estimate's name and the column
    of ``points`` holding its TPOT (ms; a point it does not predict is NaN and never within a limit)."""
    agg = points[points["mode"] == "agg"].copy()
    agg["layout"] = agg.apply(layout_name, axis=1) if not agg.empty else pd.Series(dtype=object)
    found = []
    for key, group in agg.groupby(list(GROUP), sort=True):
        if group["layout"].nunique() < 2:
            continue
        for (estimate, column), (limit_name, quantile) in product(estimates.items(), LIMITS.items()):
            limit = math.inf if quantile is None else float(np.quantile(group["tpot_ms"].to_numpy(dtype=float), quantile))
            measured = _best_per_layout(group, "tpot_ms", limit)
            if measured.size < 2:
                continue
            estimated = _best_per_layout(group, column, limit).reindex(measured.index).fillna(0.0)
            measured_rank, estimated_rank = measured.rank(), estimated.rank()
            defined = measured_rank.nunique() > 1 and estimated_rank.nunique() > 1
            found.append({
                "estimate": estimate, **dict(zip(GROUP, key)), "limit": limit_name,
                "tpot_limit_ms": limit if math.isfinite(limit) else np.nan,
                "layouts": int(measured.size),
                "measured_best": measured.idxmax(), "estimate_best": estimated.idxmax(),
                "top1_agrees": bool(measured.idxmax() == estimated.idxmax()),
                "rank_correlation": rank_correlation(measured_rank, estimated_rank) if defined else np.nan,
                "measured_best_rate": float(measured.max()),
                "estimate_of_measured_best": float(estimated[measured.idxmax()]),
                "measured_of_estimate_best": float(measured[estimated.idxmax()]),
            })
    return pd.DataFrame(found)


def summary(ranked: pd.DataFrame, estimates: dict[str, str]) -> pd.DataFrame:
    """Per estimate and limit: groups ranked, the share where the first layouts agree, the median rank correlation,
    and the mean over the groups of the estimate's first layout's measured rate over the measured first's."""
    rows = []
    for estimate, limit_name in product(estimates, LIMITS):
        at = ranked[(ranked["estimate"] == estimate) & (ranked["limit"] == limit_name)] if not ranked.empty else ranked
        rows.append({"estimate": estimate, "limit": limit_name, "groups": int(len(at)),
                     "top1_agreement": float(at["top1_agrees"].mean()) if len(at) else np.nan,
                     "median_rank_correlation": float(at["rank_correlation"].median()) if len(at) else np.nan,
                     "mean_rate_of_pick": float((at["measured_of_estimate_best"] / at["measured_best_rate"]).mean())
                     if len(at) else np.nan})
    return pd.DataFrame(rows)
