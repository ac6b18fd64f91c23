"""Whether the estimate picks the layouts the measurements pick: the measured groups ranked both ways.

A group is the understood agg points of the serving measurements (kvwall.validation) that share a model, a
system, an engine, a weight format and the lengths isl and osl, at two layouts or more. At a TPOT limit, each
layout's throughput per GPU is its best in_flight / (TPOT x GPUs) over its points whose TPOT is within the limit:
measured with the measured TPOT, estimated with an estimate's, at the same concurrencies. Three estimates rank: the
datasheet step-time estimate (kvwall.model.step_time, no fitted constant), the calibrated one as grouped
cross-validation predicts it (kvwall.validation.estimate_error), folds of whole groups: every layout of a group is
predicted by the same constants, fitted without any point of the group; and the same with the offsets
(kvwall.validation.offsets) of those folds' points, which `kvwall plan --engine` prices with: for a held-out group,
what the other lengths of its engine, model, device, layout and format measured; and that estimate for a model it
has never measured: constants and offsets fitted without any point of the group's model (leave one model out), what
`kvwall plan --engine` prices a new model with. The layouts the
measurements rank (those with a point within the limit) are ranked both ways; a layout the estimate puts past the
limit at every concurrency ranks last. The limits: the median of the group's measured TPOT, where half its measured
points qualify, and the loosest, no limit, where every point qualifies both ways (at the largest measured TPOT
instead, an estimate above it at the slowest point of a layout would drop that point: the limit would be loose for
the measurements only). Top-1 agreement: both rankings put the same layout first; the rank correlation is Spearman's
(ties at their mean rank), undefined where either ranking is all ties; and what the estimate's first layout costs
where it is not the measurements': its measured rate over the measured first layout's.

What the measurements allow an estimate at most: the measured ranking against a second measurement of the same
points, each point's TPOT times the ratio of two measurements of one deployment, drawn from the data's own repeats
(kvwall.validation.repeatability), ranked as an estimate is. An estimate that ranks as well as measuring again is as
good as the measurements can tell. How far a share could move on other groups like these: its 90% interval over
cluster bootstrap resamples of the groups, and an estimate's share minus the second measurement's with its interval
over the same resamples; where that interval holds 0, the groups do not tell the estimate's first layouts from
measuring again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from typing import NamedTuple

import numpy as np
import pandas as pd

from kvwall.validation.estimate_error import grouped_folds, held_out_with_offsets, measured_times
from kvwall.validation.offsets import SEPARATOR, layout_name as priced_layout_name

#: The columns that make a group (its layouts told apart by layout_name).
GROUP = ("model", "device", "backend", "weight_format", "isl", "osl")
#: Each TPOT limit as the quantile of the group's measured TPOT it sits at; None: no limit.
LIMITS = {"median": 0.5, "loosest": None}


#: The estimate `kvwall plan --engine` prices with, as the proof ranks it: for a measured model, and for a model
#: held out of every fit.
PLANNED, NEW_MODEL = "calibrated with offsets, held out", "calibrated with offsets, leave one model out"
#: The estimates ranked, and the column of the points each one's TPOT is in (ms).
ESTIMATES = {"datasheet": "tpot_estimate_ms", "calibrated, held out": "tpot_calibrated_ms", PLANNED: "tpot_offsets_ms",
             NEW_MODEL: "tpot_new_model_ms"}
#: The measurements ranked against themselves measured again, the draws of a second measurement, and their seed
#: (numpy's PCG64 draws the same integers on every machine).
SECOND, DRAWS, SEED = "a second measurement", 200, 0
#: The cluster bootstrap of the top-1 shares: the columns whose groups are drawn together, the resamples (seeded as
#: the draws) and the interval's quantiles (90%).
CLUSTER, RESAMPLES, INTERVAL = ("model", "device", "backend", "weight_format"), 2000, (0.05, 0.95)
#: The columns of agreement_intervals.
INTERVAL_COLUMNS = ("estimate", "limit", "top1_low", "top1_high", "against_second", "against_second_low",
                    "against_second_high")


def layout_name(row: pd.Series) -> str:
    """4 GPUs TP4 EP4: the GPU count and the degrees above 1, EP as the row records it."""
    return priced_layout_name(row["devices"], row["tp"], row["pp"], row["dp"], row["moe_ep"])


def held_out_tpot(points: pd.DataFrame, rows: pd.DataFrame, tokens: float, pseudo_count: float) -> pd.DataFrame:
    """The calibrated TPOT (ms) of each understood point from constants fitted on the folds without its group
    (tpot_calibrated_ms), and times the offsets of those folds' points (tpot_offsets_ms, ``pseudo_count``: their
    shrinkage); and the same fitted without any point of its model (tpot_new_model_ms)."""
    measured = measured_times(points, rows)
    plain, offset = held_out_with_offsets(points, measured, tokens, grouped_folds(points, GROUP), pseudo_count)
    _, new_model = held_out_with_offsets(points, measured, tokens, points["model"], pseudo_count)
    return pd.DataFrame({"tpot_calibrated_ms": plain["tpot"], "tpot_offsets_ms": offset["tpot"],
                         "tpot_new_model_ms": new_model["tpot"]})


def _doubled_ranks(values: np.ndarray) -> np.ndarray:
    """Twice each value's rank (1 for the smallest) along the last axis, ties at their mean rank: integers, the first
    and the last place a tie takes added and 2 more. ``values`` hold no NaN."""
    order = np.argsort(values, axis=-1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=-1)
    n = values.shape[-1]
    place = np.broadcast_to(np.arange(n), ordered.shape)
    starts = np.concatenate([np.ones(ordered.shape[:-1] + (1,), bool), ordered[..., 1:] != ordered[..., :-1]], axis=-1)
    ends = np.concatenate([ordered[..., 1:] != ordered[..., :-1], np.ones(ordered.shape[:-1] + (1,), bool)], axis=-1)
    first = np.maximum.accumulate(np.where(starts, place, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, place, n), axis=-1), axis=-1), axis=-1)
    doubled = np.empty(values.shape, dtype=np.int64)
    np.put_along_axis(doubled, order, (first + last + 2).astype(np.int64), axis=-1)
    return doubled


def rank_correlation(first, second) -> np.ndarray | float:
    """Pearson's correlation of two rankings (Spearman's on the values ranked) along the last axis, exact: with twice
    the ranks as integers, covariance = S_xy / 4n and the spread's product = S_xx S_yy / 16 n^2 are each rounded once
    (integers far below 2^53), the same on every machine; NaN where either ranking is all ties."""
    x, y = _doubled_ranks(np.asarray(first, dtype=float)), _doubled_ranks(np.asarray(second, dtype=float))
    n = x.shape[-1]
    sxy = n * (x * y).sum(axis=-1) - x.sum(axis=-1) * y.sum(axis=-1)
    sxx, syy = n * (x * x).sum(axis=-1) - x.sum(axis=-1) ** 2, n * (y * y).sum(axis=-1) - y.sum(axis=-1) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (sxy / (4 * n)) / np.sqrt((sxx * syy) / (16 * n * n))
    return float(rho) if np.ndim(rho) == 0 else rho


def _rates(tpot_ms: np.ndarray, in_flight: np.ndarray, devices: np.ndarray, layout: np.ndarray, layouts: int,
           limit: float) -> np.ndarray:
    """Per row of ``tpot_ms`` (one TPOT per point) and layout, the most tokens per second per GPU among the layout's
    points within ``limit``; NaN where none is."""
    rate = np.where(tpot_ms <= limit, in_flight / (tpot_ms / 1e3) / devices, -np.inf)
    best = np.stack([rate[:, layout == code].max(axis=1) for code in range(layouts)], axis=1)
    return np.where(np.isfinite(best), best, np.nan)


@dataclass(frozen=True)
class _Group:
    """One measured group's points as arrays: their layouts (codes into ``names``), concurrency, GPUs, measured
    TPOT (ms) and index in the agg points."""

    names: np.ndarray
    layout: np.ndarray
    in_flight: np.ndarray
    devices: np.ndarray
    tpot_ms: np.ndarray
    positions: np.ndarray


def _groups(points: pd.DataFrame):
    """The agg points, and each group (GROUP) of them at two layouts or more, with its key, in sorted order."""
    agg = points[points["mode"] == "agg"]
    layouts = agg.apply(layout_name, axis=1) if not agg.empty else pd.Series(dtype=object)
    found = []
    positions = pd.Series(np.arange(len(agg)), index=agg.index)
    for key, group in agg.groupby(list(GROUP), sort=True):
        names, layout = np.unique(layouts.loc[group.index].to_numpy(dtype=str), return_inverse=True)
        if names.size < 2:
            continue
        found.append((key, _Group(names, layout, group["in_flight"].to_numpy(dtype=float),
                                  group["devices"].to_numpy(dtype=float), group["tpot_ms"].to_numpy(dtype=float),
                                  positions.loc[group.index].to_numpy())))
    return agg, found


def _limit(group: _Group, quantile: float | None) -> float:
    return math.inf if quantile is None else float(np.quantile(group.tpot_ms, quantile))


def _scores(group: _Group, other_tpot_ms: np.ndarray, limit: float) -> dict | None:
    """The measured ranking of ``group``'s layouts at ``limit`` against each row of ``other_tpot_ms`` (a TPOT per
    point): per row, the first layouts, whether they agree, the rank correlation and the rates; None where fewer than
    two layouts have a measured point within the limit."""
    measured = _rates(group.tpot_ms[None, :], group.in_flight, group.devices, group.layout, group.names.size, limit)[0]
    ranked = np.flatnonzero(~np.isnan(measured))
    if ranked.size < 2:
        return None
    measured = measured[ranked]
    other = np.nan_to_num(_rates(other_tpot_ms, group.in_flight, group.devices, group.layout, group.names.size,
                                 limit)[:, ranked], nan=0.0)
    first, others_first = int(np.argmax(measured)), np.argmax(other, axis=1)
    return {"layouts": int(ranked.size), "measured_best": group.names[ranked[first]],
            "estimate_best": group.names[ranked[others_first]], "top1_agrees": others_first == first,
            "rank_correlation": rank_correlation(np.broadcast_to(measured, other.shape), other),
            "measured_best_rate": float(measured[first]), "estimate_of_measured_best": other[:, first],
            "measured_of_estimate_best": measured[others_first]}


def rankings(points: pd.DataFrame, estimates: dict[str, str]) -> pd.DataFrame:
    """One row per estimate, group and limit: layouts ranked, the best of each ranking, top-1 agreement, rank
    correlation.

    ``points``: understood points with the measured ``tpot_ms``; ``estimates``: each estimate's name and the column
    of ``points`` holding its TPOT (ms; a point it does not predict is NaN and never within a limit, and a group it
    predicts no point of, an engine without constants, is not ranked by it)."""
    agg, groups = _groups(points)
    found = []
    for key, group in groups:
        for (estimate, column), (limit_name, quantile) in product(estimates.items(), LIMITS.items()):
            estimated = agg[column].to_numpy(dtype=float)[group.positions]
            if not np.isfinite(estimated).any():
                continue
            limit = _limit(group, quantile)
            scores = _scores(group, estimated[None, :], limit)
            if scores is None:
                continue
            found.append({"estimate": estimate, **dict(zip(GROUP, key)), "limit": limit_name,
                          "tpot_limit_ms": limit if math.isfinite(limit) else np.nan,
                          **{name: value[0] if isinstance(value, np.ndarray) else value for name, value in scores.items()}})
    ranked = pd.DataFrame(found)
    return ranked.assign(top1_agrees=ranked["top1_agrees"].astype(bool)) if found else ranked


class Remeasured(NamedTuple):
    """A second measurement's scores: per limit in the summary's columns, and per group the draws that agree."""

    summary: pd.DataFrame
    agreement: pd.DataFrame


def second_measurement(points: pd.DataFrame, ratios: np.ndarray, draws: int = DRAWS, seed: int = SEED) -> Remeasured:
    """Per limit, the measured rankings against a second measurement of the same points, in the summary's columns
    (estimate SECOND): ``draws`` times, each agg point's measured TPOT times a ratio drawn from ``ratios`` (of two
    measurements of one deployment, kvwall.validation.repeatability), ranked as an estimate is; the shares, the
    median and the mean are over every group of every draw (``groups``: the groups of one draw). And per group and
    limit, the draws whose first layout is the measurements' (``agreeing`` of ``draws``)."""
    agg, groups = _groups(points)
    drawn = np.random.default_rng(seed).integers(0, ratios.size, size=(draws, len(agg)))
    remeasured = agg["tpot_ms"].to_numpy(dtype=float)[None, :] * ratios[drawn]
    rows, agreeing = [], []
    for limit_name, quantile in LIMITS.items():
        scored = [(key, s) for key, group in groups
                  if (s := _scores(group, remeasured[:, group.positions], _limit(group, quantile))) is not None]
        agrees = np.concatenate([s["top1_agrees"] for _, s in scored])
        rho = np.concatenate([s["rank_correlation"] for _, s in scored])
        pick = np.concatenate([s["measured_of_estimate_best"] / s["measured_best_rate"] for _, s in scored])
        rows.append({"estimate": SECOND, "limit": limit_name, "groups": len(scored),
                     "top1_agreement": float(np.count_nonzero(agrees)) / agrees.size,
                     "median_rank_correlation": float(np.median(rho[~np.isnan(rho)])),
                     "mean_rate_of_pick": math.fsum(pick) / pick.size})
        agreeing += [{**dict(zip(GROUP, key)), "limit": limit_name, "agreeing": int(np.count_nonzero(s["top1_agrees"])),
                      "draws": draws} for key, s in scored]
    return Remeasured(pd.DataFrame(rows), pd.DataFrame(agreeing, columns=[*GROUP, "limit", "agreeing", "draws"]))


def _agreements(ranked: pd.DataFrame, estimate: str, limit_name: str, keys: pd.MultiIndex) -> np.ndarray:
    """1 where ``estimate``'s first layout is the measurements' at ``limit_name``, per group of ``keys``, 0 where it
    is not, NaN where the estimate ranks the group not (an engine without constants); ValueError where it ranks a
    group the measurements do not."""
    at = ranked[(ranked["estimate"] == estimate) & (ranked["limit"] == limit_name)]
    agrees = at.set_index(list(GROUP))["top1_agrees"].reindex(keys)
    if int(agrees.notna().sum()) != len(at):
        raise ValueError(f"{estimate}: ranks other groups at the {limit_name} limit than the measurements")
    return agrees.to_numpy(dtype=float)


def agreement_intervals(ranked: pd.DataFrame, agreement: pd.DataFrame, resamples: int = RESAMPLES,
                        seed: int = SEED) -> pd.DataFrame:
    """Per estimate (those of ``ranked``, from rankings, then SECOND, from ``agreement``: Remeasured.agreement) and
    limit, the INTERVAL of its top-1 share over ``resamples`` cluster bootstrap resamples of the limit's groups, and
    an estimate's share minus the second measurement's (against_second) with its INTERVAL over the same resamples
    (paired). The groups of one CLUSTER are drawn together: a group's offsets come from the other lengths of its
    engine, model, device and format. A resample's shares are ratios of integer sums, the same on every machine."""
    found = []
    for limit_name in LIMITS:
        second = agreement[agreement["limit"] == limit_name]
        if second.empty:
            continue
        keys = pd.MultiIndex.from_frame(second[list(GROUP)])
        clusters, cluster_of = np.unique(second[list(CLUSTER)].astype(str).agg(SEPARATOR.join, axis=1),
                                         return_inverse=True)
        draws = int(second["draws"].iloc[0])

        def per_cluster(values: np.ndarray) -> np.ndarray:
            return np.bincount(cluster_of, weights=values, minlength=clusters.size).astype(np.int64)

        chosen = np.random.default_rng(seed).integers(0, clusters.size, size=(resamples, clusters.size))
        groups = per_cluster(np.ones(len(second)))[chosen].sum(axis=1)
        agreeing = per_cluster(second["agreeing"].to_numpy(dtype=float))[chosen].sum(axis=1)
        for estimate in [*ranked["estimate"].unique(), SECOND] if not ranked.empty else [SECOND]:
            row = {"estimate": estimate, "limit": limit_name, **dict.fromkeys(INTERVAL_COLUMNS[2:], np.nan)}
            if estimate == SECOND:
                share = agreeing / (draws * groups)
            else:
                # paired on the groups the estimate ranks, the second measurement's agreement on the same groups
                agrees = _agreements(ranked, estimate, limit_name, keys)
                ranks = ~np.isnan(agrees)
                if not ranks.any():
                    found.append(row)
                    continue
                hits = per_cluster(np.where(ranks, agrees, 0.0))[chosen].sum(axis=1)
                ranked_groups = per_cluster(ranks.astype(float))[chosen].sum(axis=1)
                paired = per_cluster(np.where(ranks, second["agreeing"].to_numpy(dtype=float), 0.0))[chosen].sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    share, against = hits / ranked_groups, (draws * hits - paired) / (draws * ranked_groups)
                second_agreeing = int(second["agreeing"].to_numpy()[ranks].sum())
                row["against_second"] = ((draws * int(agrees[ranks].sum()) - second_agreeing)
                                         / (draws * int(ranks.sum())))
                row["against_second_low"], row["against_second_high"] = map(float, np.nanquantile(against, INTERVAL))
            row["top1_low"], row["top1_high"] = map(float, np.nanquantile(share, INTERVAL))
            found.append(row)
    return pd.DataFrame(found, columns=list(INTERVAL_COLUMNS))


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
