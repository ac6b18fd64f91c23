"""Whether the estimate ranks layouts as the measurements do (kvwall.plan.proof), per group and in summary.

- tables/derived/plan_ranking: per group of measured agg points at two layouts or more and per TPOT limit, the
  layouts ranked by measured and by estimated tokens per second per GPU, the first of each, whether they agree and
  the rank correlation;
- tables/derived/plan_ranking_summary: per limit, the share of groups whose first layouts agree, its interval and
  its difference from a second measurement's, and the median rank correlation, for each estimate and for a second
  measurement of the same points.
"""

from __future__ import annotations

import pandas as pd

from kvwall.render import Column, Table, keyed
from kvwall.tables.validation import MEASUREMENTS_SOURCE, records

_BASIS = ("A layout's rate is its best in_flight / (TPOT x GPUs) among its points within the limit, measured with "
          "the measured TPOT and estimated with an estimate's at the same concurrencies: the datasheet step-time "
          "estimate (kvwall.model.step_time, datasheet bandwidth at the stated efficiency, collectives included, no "
          "fitted constant), the calibrated estimate as grouped cross-validation predicts it (constants fitted "
          "without any point of the group, tables/derived/serving_engine_constants), or the same times its offsets "
          "fitted without any point of the group (tables/derived/serving_estimate_offsets, what kvwall plan --engine "
          "prices with), and that estimate for a model it never measured (constants and offsets fitted without any "
          "point of the group's model: leave one model out); the limits are the median "
          "measured TPOT of the group and none (loosest: every point counts, measured and estimated).")


_RANKING = (
    Column("estimate", "Estimate"),
    Column("model", "Model"),
    Column("device", "Device"),
    Column("backend", "Engine"),
    Column("weight_format", "Weights"),
    Column("isl", "ISL", None, "int"),
    Column("osl", "OSL", None, "int"),
    Column("limit", "TPOT limit"),
    Column("tpot_limit_ms", "Limit", "derived", "fixed1", "ms"),
    Column("layouts", "Layouts", "derived", "int"),
    Column("measured_best", "First by measurement", "derived"),
    Column("estimate_best", "First by estimate", "derived"),
    Column("top1_agrees", "Agree", "derived"),
    Column("rank_correlation", "Rank correlation", "derived", "fixed2"),
    Column("measured_best_rate", "Its rate, measured", "derived", "int", "tok/s/GPU"),
    Column("estimate_of_measured_best", "Its rate, estimated", "derived", "int", "tok/s/GPU"),
    Column("measured_of_estimate_best", "Estimate's first, measured", "derived", "int", "tok/s/GPU"),
)


@keyed("estimate", "model", "device", "backend", "weight_format", "isl", "osl", "limit")
def ranking(ranked: pd.DataFrame) -> Table:
    """Per group and limit, the two rankings' first layouts and their rank correlation."""
    return Table(
        id="plan_ranking",
        title="Does the estimate pick the layout the measurements pick?",
        caption="Per group of measured agg points that share a model, system, engine, weight format, ISL and OSL at "
        "two layouts or more: the layouts ranked by measured and by estimated tokens per second per GPU at a TPOT "
        "limit, the first of each, whether they agree, and Spearman's rank correlation (blank where a ranking is all "
        "ties; the limit blank where there is none). A disagreement stays in the table with the rates of the measured "
        "first layout both ways and the measured rate of the estimate's first. " + _BASIS,
        columns=_RANKING,
        rows=records(ranked.assign(top1_agrees=ranked["top1_agrees"].map({True: "yes", False: "no"})), _RANKING)
        if not ranked.empty else (),
        sources=(MEASUREMENTS_SOURCE,),
    )


_SUMMARY = (
    Column("estimate", "Estimate"),
    Column("limit", "TPOT limit"),
    Column("groups", "Groups", "derived", "int"),
    Column("top1_agreement", "First layouts agree", "derived", "percent1"),
    Column("top1_low", "Agree, 90% interval from", "derived", "percent1"),
    Column("top1_high", "Agree, 90% interval to", "derived", "percent1"),
    Column("against_second", "Agree, less a second measurement", "derived", "points_signed1"),
    Column("against_second_low", "Less a second measurement, 90% interval from", "derived", "points_signed1"),
    Column("against_second_high", "Less a second measurement, 90% interval to", "derived", "points_signed1"),
    Column("median_rank_correlation", "Median rank correlation", "derived", "fixed2"),
    Column("mean_rate_of_pick", "Estimate's first, measured, of the best (mean)", "derived", "percent0", "ratio"),
)


@keyed("estimate", "limit")
def ranking_summary(summary: pd.DataFrame, draws: int, resamples: int) -> Table:
    """Per estimate and limit, top-1 agreement with its interval and against a second measurement, and the median
    rank correlation over the groups; ``draws``: the draws of the second measurement
    (kvwall.plan.proof.second_measurement), ``resamples``: the bootstrap's (kvwall.plan.proof.agreement_intervals)."""
    return Table(
        id="plan_ranking_summary",
        title="The estimate's layout rankings against the measurements', in summary",
        caption="Over the groups of tables/derived/plan_ranking, per estimate and TPOT limit: the share whose first layouts agree, "
        "the median rank correlation, and the mean over the groups of the measured rate of the estimate's first "
        "layout over the measured first layout's (100%: it picks a layout as fast as the best). " + _BASIS + " The "
        "last rows rank a second measurement of the same points as an estimate: each point's measured TPOT times the "
        "ratio of two measurements of one deployment, drawn from the file's own repeats "
        f"(tables/derived/serving_repeatability), in {draws} draws, the shares, median and mean over every group of "
        "every draw: how often measuring again picks the same layout, what an estimate as good as a second measurement "
        f"would score. Each share's 90% interval is that of {resamples:,} cluster bootstrap resamples of the groups, those of "
        "one engine, model, device and weight format drawn together (a group's offsets come from the others); the "
        "share less the second measurement's is in percentage points, paired on the same resamples: where its "
        "interval holds 0, these groups do not tell the estimate's first layouts from measuring again.",
        columns=_SUMMARY,
        rows=records(summary, _SUMMARY),
        sources=(MEASUREMENTS_SOURCE,),
    )
