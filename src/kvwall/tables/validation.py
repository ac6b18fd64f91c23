"""The validation tables: reported serving measurements as read, and what kvwall derives against them.

- tables/reported/serving_measurements: every row as read (reported TPOT and TTFT);
- tables/derived/serving_bounds: per row, the deployment understood, its bounds and estimate, the realizations,
  the regime and, for a point below its bound, its documented diagnosis; a refused row with its reason;
- tables/derived/serving_realization: median realization per engine and system;
- tables/derived/serving_format_claim: measured against predicted speedup of a narrower weight format
  (kvwall.validation.claim);
- tables/derived/serving_engine_constants: each engine's fitted constants (kvwall.validation.calibration);
- tables/derived/serving_estimate_error: the estimate's error on points it did not see
  (kvwall.validation.estimate_error);
- tables/derived/serving_estimate_offsets: the calibrated estimate's offsets per engine, model, device, layout and
  weight format (kvwall.validation.offsets);
- tables/derived/serving_error_sources: that error after corrections for more and more of what the rows record
  (kvwall.validation.error_sources);
- tables/derived/serving_repeatability: how far two measurements of one deployment differ
  (kvwall.validation.repeatability);
- tables/derived/serving_cost_shares: the share of each named cost in the measured TPOT per engine, device and mode
  (kvwall.validation.cost_shares);
- tables/derived/serving_format_claim_costs: the format claim's pairs priced with the calibrated named costs, what
  shrinks with the weight bytes and what does not (kvwall.validation.claim_costs);
- tables/derived/serving_transfer and serving_transfer_models: the error leaving one model out with each candidate
  cost of the decode step, and per model what it leaves (kvwall.validation.transfer).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from kvwall.model.decode_costs import COSTS
from kvwall.model.engine_constants import PRINTED_UNITS, EngineConstants, rounded
from kvwall.render import Column, Table, keyed
from kvwall.validation.calibration import FIRST_TOKEN_BOUNDS, LOWER, UPPER, Calibration
from kvwall.validation.claim_costs import PARTS
from kvwall.validation.estimate_error import FOLDS

#: The source of every serving measurement, as each table built from them cites it.
MEASUREMENTS_SOURCE = "ai-dynamo/aiconfigurator silicon_sample.csv @095f58a51 (Apache-2.0), data/reported/serving-measurements.csv"


def records(frame: pd.DataFrame, columns: tuple[Column, ...]) -> tuple[dict, ...]:
    """The rows of ``frame`` as a Table's rows, ``columns`` only, a missing value None."""
    names = [c.name for c in columns]
    return tuple({k: (None if pd.isna(v) else v) for k, v in row.items()} for row in frame[names].to_dict("records"))


def layout_label(points: pd.DataFrame) -> pd.Series:
    """TP4 PP1 DP1 EP4: the decode engine's layout as one label ('' where the row was refused before it)."""
    sizes = points[["tp", "pp", "dp", "moe_ep"]].astype("Int64").astype(str)
    return "TP" + sizes["tp"] + " PP" + sizes["pp"] + " DP" + sizes["dp"] + " EP" + sizes["moe_ep"]


_MEASURED = (
    Column("id", "Id"),
    Column("model_path", "Model"),
    Column("system", "System"),
    Column("backend", "Engine"),
    Column("precision", "Precision"),
    Column("mode", "Mode"),
    Column("isl", "ISL", None, "int"),
    Column("osl", "OSL", None, "int"),
    Column("batch_size", "Concurrency", None, "int"),
    Column("silicon_tpot_ms", "TPOT (ms)", "reported", "fixed3", "ms"),
    Column("silicon_ttft_ms", "TTFT (ms)", "reported", "fixed1", "ms"),
)


@keyed("id")
def measurements(rows: pd.DataFrame) -> Table:
    """Every serving measurement as read: its keys and the two reported times."""
    return Table(
        id="serving_measurements",
        title="Serving measurements as reported",
        caption="Measured mean time per output token (TPOT) and to first token (TTFT) of TensorRT-LLM, vLLM and "
        "SGLang, one row per measurement; Concurrency is the agg engine's requests in flight (blank for disagg rows, "
        "whose decode side is described by the decode_* columns of the data).",
        columns=_MEASURED,
        rows=records(rows, _MEASURED),
        sources=(MEASUREMENTS_SOURCE,),
    )


_BOUNDS = (
    Column("id", "Id"),
    Column("model", "Model"),
    Column("device", "Device"),
    Column("backend", "Engine"),
    Column("mode", "Mode"),
    Column("layout", "Decode layout"),
    Column("weight_format", "Weights"),
    Column("in_flight", "In flight", None, "int"),
    Column("running_batch", "Running batch", "derived", "int", "count"),
    Column("tpot_bound_ms", "TPOT bound (ms)", "derived", "fixed3", "ms"),
    Column("tpot_estimate_ms", "TPOT estimate (ms)", "derived", "fixed3", "ms"),
    Column("ttft_bound_ms", "TTFT bound (ms)", "derived", "fixed2", "ms"),
    Column("tpot_realization", "TPOT bound / measured", "derived", "fixed3", "ratio"),
    Column("ttft_realization", "TTFT bound / measured", "derived", "fixed3", "ratio"),
    Column("regime", "Regime", "derived"),
    Column("diagnosis", "Below its bound because", "derived"),
    Column("reason", "Not understood because", "derived"),
)


@keyed("id")
def bounds(points: pd.DataFrame) -> Table:
    """Per measured point: the deployment understood, the bounds, the estimate, realizations and regime."""
    frame = points.assign(layout=layout_label(points).where(points["tp"].notna(), None))
    return Table(
        id="serving_bounds",
        title="Serving measurements against their derived bounds",
        caption="Per measured point, on one GPU of its decode engine: the batch that runs (requests in flight, or "
        "fewer where fewer fit beside the weights), the TPOT lower bound max(bytes / HBM bandwidth, FLOPs / dense "
        "peak) at the mean decode context, the estimate with collectives and the stated bandwidth efficiency, the "
        "TTFT lower bound of one request, and bound / measured (above 1: measured below the bound, with its "
        "documented diagnosis). A row that kvwall cannot map says why.",
        columns=_BOUNDS,
        rows=records(frame, _BOUNDS),
        sources=(MEASUREMENTS_SOURCE, "config/validation.yaml"),
    )


_REALIZATION = (
    Column("backend", "Engine"),
    Column("device", "Device"),
    Column("points", "Points", "derived", "int", "count"),
    Column("below_bound", "Below bound", "derived", "int", "count"),
    Column("median_tpot_realization", "Median TPOT bound / measured", "derived", "fixed3", "ratio"),
    Column("median_ttft_realization", "Median TTFT bound / measured", "derived", "fixed3", "ratio"),
)


def realization_summary(points: pd.DataFrame) -> pd.DataFrame:
    """Points, points below their bound and median realizations per engine and device (understood points)."""
    understood = points[points["reason"].isna()]
    grouped = understood.groupby(["backend", "device"], sort=True)
    return pd.DataFrame(
        {
            "points": grouped.size(),
            "below_bound": grouped["tpot_realization"].apply(lambda r: int((r > 1).sum())),
            "median_tpot_realization": grouped["tpot_realization"].median(),
            "median_ttft_realization": grouped["ttft_realization"].median(),
        }
    ).reset_index()


@keyed("backend", "device")
def realization(points: pd.DataFrame) -> Table:
    """The median realization of the TPOT and TTFT bounds per engine and device."""
    return Table(
        id="serving_realization",
        title="How close engines come to the hardware's bound",
        caption="Per engine and device, over the understood points: how many, how many measured below their TPOT "
        "bound (each with a documented diagnosis), and the median of bound / measured for TPOT and TTFT (1 is "
        "the hardware's limit).",
        columns=_REALIZATION,
        rows=records(realization_summary(points), _REALIZATION),
        sources=(MEASUREMENTS_SOURCE,),
    )


_CLAIM = (
    Column("model", "Model"),
    Column("device", "Device"),
    Column("backend", "Engine"),
    Column("mode", "Mode"),
    Column("isl", "ISL", None, "int"),
    Column("osl", "OSL", None, "int"),
    Column("in_flight", "In flight", None, "int"),
    Column("weight_format_wide", "From"),
    Column("weight_format_narrow", "To"),
    Column("measured_speedup", "Measured speedup", "derived", "fixed2", "×"),
    Column("predicted_speedup", "Predicted speedup", "derived", "fixed2", "×"),
    Column("speedup_realized", "Measured over predicted", "derived", "fixed2", "ratio"),
    Column("regime_wide", "Regime before", "derived"),
    Column("regime_narrow", "Regime after", "derived"),
    Column("id_wide", "Id of the wider point", printed=False),  # the pair's two measurements: the row's key
    Column("id_narrow", "Id of the narrower point", printed=False),
)


@keyed("id_wide", "id_narrow")
def format_claim(pairs: pd.DataFrame) -> Table:
    """Measured against predicted speedup of a narrower weight format, with the regime of each point."""
    return Table(
        id="serving_format_claim",
        title="The algorithm didn't change, the regime did: narrower weights, measured and predicted",
        caption="Pairs of measured points that differ only in weight format: the measured speedup (TPOT of the "
        "wider over TPOT of the narrower) against the speedup the step-time bound predicts (1 where compute binds), "
        "and the regime of each point.",
        columns=_CLAIM,
        rows=records(pairs, _CLAIM),
        sources=(MEASUREMENTS_SOURCE,),
    )


_CONSTANTS = (
    Column("backend", "Engine"),
    Column("constant", "Constant"),
    Column("value", "Fitted", "derived", "full"),
    Column("half_interval", "± (95%)", "derived", "full"),
    Column("unit", "Unit"),
    Column("lower", "Lower bound", None, "full"),
    Column("upper", "Upper bound", None, "full"),
    Column("at_bound", "At a bound", "derived"),
    Column("points", "Points fitted on", "derived", "int", "count"),
)


def constants_frame(calibrations: Mapping[str, Calibration]) -> pd.DataFrame:
    """One row per engine and constant: its rounded value, interval and bounds in its printed unit."""
    rows = []
    for engine, fitted in sorted(calibrations.items()):
        for i, name in enumerate(EngineConstants.NAMES):
            unit, scale = PRINTED_UNITS[name]
            value = fitted.constants.values()[i]
            lower, upper = (LOWER[i], UPPER[i]) if i < len(LOWER) else FIRST_TOKEN_BOUNDS[name]
            points = fitted.points if i < len(LOWER) else fitted.first_token_points
            rows.append({"backend": engine, "constant": name, "unit": unit, "points": points,
                         "value": rounded(value / scale), "half_interval": rounded(fitted.half_interval[i] / scale, 2),
                         "lower": rounded(lower / scale), "upper": rounded(upper / scale),
                         "at_bound": "yes" if value in (lower, upper) else "no"})
    return pd.DataFrame(rows)


@keyed("backend", "constant")
def engine_constants(calibrations: Mapping[str, Calibration]) -> Table:
    """Each engine's constants fitted to its measured TPOT (kvwall.validation.calibration)."""
    return Table(
        id="serving_engine_constants",
        title="Engine constants fitted to measured TPOT",
        caption="Per engine, the constants of the estimated decode step (fixed cost per step, realized fractions of "
        "the datasheet HBM bandwidth and dense peak, latency per collective message, cost per layer a GPU runs and "
        "per sequence of an attention-DP rank, extra time per weight byte of fp8 and of fp4 GEMMs over bf16's), "
        "fitted by least squares on the "
        "relative TPOT error of every understood point, and the fixed cost before a first token and the share of the "
        "prefill wave a request waits for, fitted then on the log of estimate over measured TTFT of the agg points; "
        "within the bounds shown, rounded to three significant digits, with "
        "a 95% interval from the Jacobian. Derived from reported data; the bounds never use them.",
        columns=_CONSTANTS,
        rows=records(constants_frame(calibrations), _CONSTANTS),
        sources=(MEASUREMENTS_SOURCE, "config/validation.yaml"),
    )


def _rounded(frame: pd.DataFrame, names: list[str], digits: int = 4) -> pd.DataFrame:
    """``frame`` with the columns ``names`` rounded to ``digits`` significant digits (kvwall.model.engine_constants
    .rounded): what a table prints of a fraction or a time, its last bits never the CPU's."""
    return frame.assign(**{name: frame[name].map(lambda v: rounded(float(v), digits)) for name in names})


def _error_statistics(fmt: str) -> tuple[Column, ...]:
    """The columns of kvwall.validation.estimate_error.error_statistics, the percentages printed as ``fmt``."""
    return (
        Column("points", "Points", "derived", "int", "count"),
        Column("median_error", "Median |error|", "derived", fmt, "ratio"),
        Column("mean_error", "Mean |error|", "derived", fmt, "ratio"),
        Column("within_10", "Within 10%", "derived", fmt, "ratio"),
        Column("within_20", "Within 20%", "derived", fmt, "ratio"),
    )


_ERROR = (
    Column("scheme", "Predicted"),
    Column("quantity", "Quantity"),
    Column("backend", "Engine"),
    Column("mode", "Mode"),
    *_error_statistics("percent0"),
    Column("measured_over_estimate_p10", "Measured / estimate, 10th pct", "derived", "times2", "ratio"),
    Column("measured_over_estimate_p90", "Measured / estimate, 90th pct", "derived", "times2", "ratio"),
)


@keyed("scheme", "quantity", "backend", "mode")
def estimate_error(summary: pd.DataFrame) -> Table:
    """The estimate's absolute percentage error per scheme, quantity, engine and mode, and the 10th to 90th
    percentile of measured / estimate."""
    # errors and shares to four significant digits; the band to six, so that its two decimals print as computed
    digits = {"median_error": 4, "mean_error": 4, "within_10": 4, "within_20": 4, "measured_over_estimate_p10": 6,
              "measured_over_estimate_p90": 6}
    frame = summary.assign(**{name: summary[name].map(lambda v, n=n: rounded(float(v), n)) for name, n in digits.items()})
    return Table(
        id="serving_estimate_error",
        title="How well the estimate predicts measured TPOT and TTFT",
        caption="The absolute percentage error |estimate / measured - 1| of the estimated TPOT and TTFT: at datasheet "
        "rates (no fitted constant), with each engine's constants fitted on every point, on points held out by "
        f"grouped {FOLDS}-fold cross-validation (points that differ only in concurrency in one fold), the same with "
        "the offsets of serving_estimate_offsets fitted on the other folds alone, and by leaving one model, one "
        "device or one engine version out; then what an estimate knows of what it never measured: one model or one "
        "device left out with the offsets of the other models' or devices' points (a held-out model keeps no offset "
        "of its own), and one model family (the model_type of its config.json) left out; and the 10th and 90th "
        "percentiles of measured / estimate, between which 80% of the points fall.",
        columns=_ERROR,
        rows=records(frame, _ERROR),
        sources=(MEASUREMENTS_SOURCE,),
    )


_OFFSETS = (
    Column("backend", "Engine"),
    Column("quantity", "Quantity"),
    Column("level", "Level"),
    Column("mode", "Mode"),
    Column("model", "Model"),
    Column("device", "Device"),
    Column("layout", "Layout"),
    Column("weight_format", "Weight format"),
    Column("points", "Points", "derived", "int", "count"),
    Column("factor", "Factor", "derived", "times2", "ratio"),
    Column("factor_p10", "Factor, 10th pct", "derived", "times2", "ratio"),
    Column("factor_p90", "Factor, 90th pct", "derived", "times2", "ratio"),
    Column("slope", "Per doubling", "derived", "times2", "ratio"),
    Column("slope_p10", "Per doubling, 10th pct", "derived", "times2", "ratio"),
    Column("slope_p90", "Per doubling, 90th pct", "derived", "times2", "ratio"),
    Column("sequences", "Sequences per rank, mean", "derived", "fixed1", "count"),
    Column("sequences_low", "Sequences per rank, least", "derived", "fixed1", "count"),
    Column("sequences_high", "Sequences per rank, most", "derived", "fixed1", "count"),
    Column("prefill_slope", "Per doubling of the prefill stretch", "derived", "times2", "ratio"),
    Column("prefill_slope_p10", "Per doubling of the prefill stretch, 10th pct", "derived", "times2", "ratio"),
    Column("prefill_slope_p90", "Per doubling of the prefill stretch, 90th pct", "derived", "times2", "ratio"),
    Column("prefill_stretch", "Prefill stretch, mean", "derived", "times2", "ratio"),
    Column("prefill_stretch_low", "Prefill stretch, least", "derived", "times2", "ratio"),
    Column("prefill_stretch_high", "Prefill stretch, most", "derived", "times2", "ratio"),
)


@keyed("backend", "quantity", "level", "mode", "model", "device", "layout", "weight_format")
def estimate_offsets(offsets: pd.DataFrame, pseudo_count: int) -> Table:
    """The calibrated estimate's offsets (kvwall.validation.offsets.fit_offsets), fitted on every understood point."""
    return Table(
        id="serving_estimate_offsets",
        title="What the calibrated estimate misses per engine, model, device, layout and weight format",
        caption="The factor each key multiplies the calibrated TPOT or TTFT by, nested coarse to fine (per engine, "
        "mode and model, then device, layout and weight format, each level fitted on what the coarser ones left): "
        "at the key's mean sequences per attention-DP rank and mean prefill stretch, the mean of ln(measured / "
        "estimate) over its points; per doubling of the sequences, the slope of what the mean left; and per doubling "
        "of the estimated step's prefill stretch (the step over the step without its prefill cost), the slope of "
        "what those left; all shrunk by a pseudo-count of "
        f"{pseudo_count} (config/validation.yaml); on every understood point with the constants of "
        "serving_engine_constants, rounded to three significant digits, with the 80% intervals of a normal mean and "
        "slopes. An estimate's factor is the product of its keys' at its sequences per rank and prefill stretch, each "
        "kept within the key's least and most; a key the points do not hold has none. Derived from reported data; a "
        "lookup that does not carry over to another model, and no bound uses it.",
        columns=_OFFSETS,
        rows=records(offsets, _OFFSETS),
        sources=(MEASUREMENTS_SOURCE, "config/validation.yaml"),
    )


_SOURCES = (Column("step", "Corrected for"), *_error_statistics("percent1"))


@keyed("step")
def error_sources(sources: pd.DataFrame) -> Table:
    """The held-out agg TPOT error after each correction of kvwall.validation.error_sources."""
    frame = _rounded(sources, [c.name for c in _SOURCES if c.name not in ("step", "points")])
    return Table(
        id="serving_error_sources",
        title="What the estimate's held-out TPOT error is made of",
        caption=f"The grouped {FOLDS}-fold TPOT error of the calibrated estimate on agg points, then after a "
        "log-linear correction fitted on the other folds to more and more of what the rows record: the deployment's "
        "shape, then offsets per engine and model, engine and device, precision, layout, lengths and measurement "
        "campaign. The shape is what a missing term of the decode step could use; the offsets are lookups no "
        "datasheet gives.",
        columns=_SOURCES,
        rows=records(frame, _SOURCES),
        sources=(MEASUREMENTS_SOURCE,),
    )


#: The spread of TPOT ratios of pairs of measurements (kvwall.validation.repeatability.ratio_spread).
_RATIO_SPREAD = (
    Column("median_distance", "Median |ratio - 1|", "derived", "percent1", "ratio"),
    Column("within_10", "Within 10%", "derived", "percent0", "ratio"),
    Column("within_20", "Within 20%", "derived", "percent0", "ratio"),
    Column("low", "Ratio, 10th pct", "derived", "fixed3", "ratio"),
    Column("high", "Ratio, 90th pct", "derived", "fixed3", "ratio"),
)

_REPEATABILITY = (
    Column("mode", "Mode"),
    Column("configurations", "Configurations", "derived", "int", "count"),
    Column("rows", "Rows", "derived", "int", "count"),
    Column("pairs", "Pairs", "derived", "int", "count"),
    *_RATIO_SPREAD,
)


@keyed("mode")
def repeatability(summary: dict[str, float]) -> Table:
    """The serving measurements' repeatability (kvwall.validation.repeatability), in one row."""
    return Table(
        id="serving_repeatability",
        title="How far two measurements of one deployment differ",
        caption="The agg configurations (a deployment at one concurrency) that the shared serving measurements hold "
        "more than once, and over every ordered pair of two different measurements of one configuration, their ratio "
        "of measured TPOT: the median distance from 1, the shares within 10% and 20%, and the 10th and 90th "
        "percentiles; a row that lists another's measurement again is refused (tables/derived/serving_bounds) and gives "
        "no pair. The ranking of layouts is held against these ratios (tables/derived/plan_ranking_summary).",
        columns=_REPEATABILITY,
        rows=records(pd.DataFrame([{name: rounded(value, 4) if isinstance(value, float) else value
                                    for name, value in summary.items()}]), _REPEATABILITY),
        sources=(MEASUREMENTS_SOURCE,),
    )


_VERSION_SPREAD = (
    Column("quantity", "Quantity"),
    Column("versions", "Engine versions"),
    Column("checkpoints", "Models"),
    Column("configurations", "Configurations", "derived", "int", "count"),
    Column("pairs", "Pairs", "derived", "int", "count"),
    *_RATIO_SPREAD,
)


@keyed("quantity", "versions", "checkpoints")
def version_spread(spread: pd.DataFrame) -> Table:
    """How far one configuration's measured TPOT and TTFT move with the engine version and the checkpoint
    (kvwall.validation.versions)."""
    frame = _rounded(spread, [c.name for c in _VERSION_SPREAD[5:]])
    return Table(
        id="serving_version_spread",
        title="How far an engine version and a checkpoint move one deployment's TPOT and TTFT",
        caption="The ordered pairs of two measurements of one agg configuration (a deployment at one concurrency, "
        "as serving_repeatability's, with a model taken as its shapes: DeepSeek-V3 and DeepSeek-R1 are one), split "
        "by their engine versions (the same, two, or one not recorded) and their models (one, or two of the same "
        "shapes), with their ratio of measured TPOT, then of measured TTFT: the median distance from 1, the shares "
        "within 10% and 20%, and the 10th and 90th percentiles. A model never measured comes with a checkpoint and an "
        "engine version of its own, which no constant fitted on the other models knows (serving_transfer, "
        "serving_ttft_forms).",
        columns=_VERSION_SPREAD,
        rows=records(frame, _VERSION_SPREAD),
        sources=(MEASUREMENTS_SOURCE,),
    )


_DISAGG_LOAD = (
    Column("backend", "Engine"),
    Column("points", "Points", "derived", "int", "count"),
    Column("ttft_ms", "Median measured TTFT (ms)", "derived", "fixed1", "ms"),
    Column("alone_ms", "Median prompt alone at peak (ms)", "derived", "fixed1", "ms"),
    Column("ttft_over_alone", "Median TTFT / prompt alone", "derived", "times0", "ratio"),
    Column("busy", "Median prefill pool busy at peak", "derived", "percent1", "ratio"),
    Column("busy_max", "Largest busy at peak", "derived", "percent0", "ratio"),
    Column("transfer_share", "Median KV transfer / TTFT, at most", "derived", "percent1", "ratio"),
    Column("busy_rank_correlation", "Rank correlation, busy and TTFT / alone", "derived", "fixed2", "ratio"),
)


@keyed("backend")
def disagg_load(load: pd.DataFrame) -> Table:
    """What a disagg request's measured TTFT follows, or does not (kvwall.validation.disagg_load)."""
    frame = _rounded(load, [c.name for c in _DISAGG_LOAD[2:]])
    return Table(
        id="serving_disagg_load",
        title="What a disaggregated request's TTFT does not follow",
        caption="Per engine and over all, the disagg points' median measured TTFT, one prompt alone on a replica of "
        "the prefill workers at the dense peak (the estimate's prefill), their ratio, how busy the prefill pool is "
        "at least (the closed loop's measured request rate, c / (TTFT + (osl - 1) TPOT), times a prompt's prefill "
        "FLOPs over the pool's GPUs at their dense peak; at the engine's realized fraction f of it, that over f), "
        "the KV transfer of a prompt over one GPU's network link over the measured TTFT (the slowest way, so at "
        "most), and Spearman's rank correlation between how busy the pool is and TTFT / prompt alone. A queue at "
        "the prefill pool would need it busy near all the time and would make the ratio grow with it; neither the "
        "queue nor the transfer accounts for TTFTs tens of times a prompt's prefill.",
        columns=_DISAGG_LOAD,
        rows=records(frame, _DISAGG_LOAD),
        sources=(MEASUREMENTS_SOURCE,),
    )


_SHARES = (
    Column("backend", "Engine"),
    Column("device", "Device"),
    Column("mode", "Mode"),
    Column("points", "Points", "derived", "int", "count"),
    Column("median_tpot_ms", "Median measured TPOT", "derived", "fixed1", "ms"),
    *(Column(f"share_{name}", name.capitalize(), "derived", "percent0", "ratio") for name in COSTS),
    Column("remainder", "Unexplained", "derived", "percent0", "ratio"),
)


@keyed("backend", "device", "mode")
def cost_shares(shares: pd.DataFrame) -> Table:
    """The share of each named cost in the measured TPOT per engine, device and mode, and the remainder."""
    frame = _rounded(shares, [c.name for c in _SHARES
                              if c.name.startswith("share_") or c.name in ("remainder", "median_tpot_ms")])
    return Table(
        id="serving_cost_shares",
        title="What the measured TPOT is made of",
        caption="Per engine, device and mode, each named cost of the calibrated decode step (weights and KV read at "
        "the realized bandwidth, compute past the bytes, collectives, the busiest EP rank's extra expert reads and "
        "dispatch, the fixed cost per step, other requests' prefill in agg mode), summed over the understood points, "
        "over their summed measured TPOT, and the remainder no cost explains (negative where the costs price more "
        "than was measured); constants fitted on every point of the engine (tables/derived/serving_engine_constants).",
        columns=_SHARES,
        rows=records(frame, _SHARES) if not frame.empty else (),
        sources=(MEASUREMENTS_SOURCE,),
    )


#: How the table names each part of the step (kvwall.validation.claim_costs.PARTS).
PART_LABELS = {"weights": "Weights", "expert_reads": "Busiest EP rank's expert reads", "kv": "KV", "compute": "Compute",
               "collectives": "Collectives", "dispatch": "Busiest EP rank's dispatch", "fixed": "Fixed",
               "prefill": "Prefill"}
_CLAIM_COSTS = (
    Column("backend", "Engine"),
    Column("device", "Device"),
    Column("weight_format_wide", "From"),
    Column("weight_format_narrow", "To"),
    Column("regime_wide", "Regime before"),
    Column("pairs", "Pairs", "derived", "int", "count"),
    Column("median_measured_speedup", "Median measured speedup", "derived", "fixed2", "×"),
    Column("median_predicted_speedup", "Median bound-predicted speedup", "derived", "fixed2", "×"),
    Column("median_calibrated_speedup", "Median calibrated speedup", "derived", "fixed2", "×"),
    Column("median_held_out_speedup", "Median held-out calibrated speedup", "derived", "fixed2", "×"),
    Column("median_ceiling", "Median ceiling", "derived", "fixed2", "×"),
    Column("median_weight_ratio", "Median weight-bytes ratio", "derived", "fixed2", "×"),
    Column("shrinking_share", "Shrinks with the weights", "derived", "percent0", "ratio"),
    *(Column(f"share_{name}", PART_LABELS[name], "derived", "percent0", "ratio") for name in PARTS),
)


@keyed("backend", "device", "weight_format_wide", "weight_format_narrow", "regime_wide")
def format_claim_costs(summary: pd.DataFrame) -> Table:
    """The format claim's pairs priced with the calibrated named costs: speedups, ceiling and what shrinks."""
    frame = _rounded(summary, [c.name for c in _CLAIM_COSTS if c.fmt in ("fixed2", "percent0")])
    return Table(
        id="serving_format_claim_costs",
        title="Why narrower weights bought less than the bound predicted: what does not shrink with the weights",
        caption="The pairs of tables/derived/serving_format_claim (measured points that differ only in weight format) "
        "priced at both formats with their engine's calibrated named costs, per engine, device, the two formats and "
        "the regime of the wider point, and pooled over engines and devices (all), then over formats too: the median "
        "measured speedup, the median speedup the step-time bound predicts, the median calibrated speedup (estimated "
        "step of the wider over the narrower) in sample and held out (each pair priced with its engine's constants "
        f"fitted on the grouped {FOLDS}-fold folds without its two points: one fold left out where both lie in it, "
        "else two), the median ceiling 1 / (1 - s + s / r) if only the parts that shrink "
        "with the weight bytes shrank (s their share of the wider step, r the weight-bytes ratio), and each part's "
        "share of the summed estimated wider steps (they add to 1; the weights and the busiest EP rank's expert reads "
        "shrink). In sample and for the shares, constants fitted on every point of the engine, the pairs among them "
        "(tables/derived/serving_engine_constants).",
        columns=_CLAIM_COSTS,
        rows=records(frame, _CLAIM_COSTS),
        sources=(MEASUREMENTS_SOURCE,),
    )


_TRANSFER = (Column("terms", "Costs of the decode step"), *_error_statistics("percent1"))


@keyed("terms")
def transfer(terms: pd.DataFrame) -> Table:
    """The agg TPOT error leaving one model out with each term set of kvwall.validation.transfer."""
    frame = _rounded(terms, [c.name for c in _TRANSFER if c.name not in ("terms", "points")])
    return Table(
        id="serving_transfer",
        title="Which operation's efficiency carries over to a model the fit never saw",
        caption="The agg TPOT error of the calibrated estimate leaving one model out (each engine's constants fitted "
        "on its points of the other models): with the estimate's own costs, without its fixed cost per layer of each "
        "step, per sequence of an attention-DP rank, per weight byte of fp8 and fp4 GEMMs, or all three (held at 0, "
        "a fixed cost per step alone), and with one candidate cost added, its constant per engine fitted with the "
        "others within a physical bound: latent attention or MoE weights at their own fraction of the rate the rest "
        "runs at, and decode "
        "attention's parallelism (the KV read at 1 / (1 + x / blocks) of its rate, a block one sequence and one KV "
        "head of a GPU, x 0 to 1,000). A cost that lowers the error carries over from the other models; one that "
        "raises it or leaves it is set by the model's own kernels, which the other models do not tell "
        "(serving_transfer_models: what is left per model).",
        columns=_TRANSFER,
        rows=records(frame, _TRANSFER),
        sources=(MEASUREMENTS_SOURCE,),
    )


_TTFT_FORMS = (Column("form", "Prefills a request waits for"), Column("scheme", "Predicted"),
               *_error_statistics("percent1"))


@keyed("form", "scheme")
def ttft_forms(forms: pd.DataFrame) -> Table:
    """The agg TTFT error of each form of kvwall.validation.ttft_forms, in sample and leaving one model out."""
    frame = _rounded(forms, [c.name for c in _TTFT_FORMS if c.name not in ("form", "scheme", "points")])
    return Table(
        id="serving_ttft_forms",
        title="Which prefills a request waits for before its first token",
        caption="The agg TTFT error of the calibrated estimate in sample and leaving one model out, with six forms of "
        "the prefills a request waits for besides its own (after the fixed cost and the wait for a running slot): "
        "a whole wave of the running requests' prefills (every request arriving with the others), none, a queue of "
        "random arrivals (M/D/1, one prompt's prefill a service, busy c P / (osl x TPOT) of the time), and a share of "
        "the wave fitted per engine, 0 to 1 (the estimate's); each engine's fixed cost before a first token fitted "
        "with it on the log of the agg points' estimate over measured TTFT. A prompt's prefill P is its FLOPs over the realized peak "
        "and, where the engine runs the batch's decodes beside prompt chunks under one token budget a step (vLLM, "
        "TensorRT-LLM: 8,192 tokens by default, an assumption), the decode step of each of the isl / (budget - "
        "running) steps its chunks ride, and no less than the weights its tokens touch over the realized bandwidth; "
        "the share of the wave with its prompts apart from the decodes prices P without the steps, the one at its "
        "FLOPs alone without the weights' floor. The benchmark's clients are a closed loop whose arrivals bunch in a way no row records: the "
        "form that lowers the error leaving one model out prices a model never measured.",
        columns=_TTFT_FORMS,
        rows=records(frame, _TTFT_FORMS),
        sources=(MEASUREMENTS_SOURCE,),
    )


_TRANSFER_MODELS = (
    Column("model", "Model"),
    Column("cache", "Cache"),
    Column("mlp", "MLP"),
    Column("points", "Points", "derived", "int", "count"),
    Column("median_error_baseline", "Median |error|, a fixed cost per step alone", "derived", "percent0", "ratio"),
    Column("median_error", "Median |error|, the estimate", "derived", "percent0", "ratio"),
    Column("measured_over_estimate", "Measured / estimate, median", "derived", "times2", "ratio"),
    Column("measured_over_estimate_p10", "Measured / estimate, 10th pct", "derived", "times2", "ratio"),
    Column("measured_over_estimate_p90", "Measured / estimate, 90th pct", "derived", "times2", "ratio"),
)


@keyed("model")
def transfer_models(models: pd.DataFrame) -> Table:
    """Per model, what leaving it out of every fit leaves (kvwall.validation.transfer)."""
    names = [c.name for c in _TRANSFER_MODELS[4:]]
    frame = _rounded(_rounded(models, [n for n in names if "error" in n]), [n for n in names if "error" not in n], 6)
    return Table(
        id="serving_transfer_models",
        title="What a model left out of every fit keeps of its error",
        caption="Per model, over its agg points with each engine's constants fitted on the other models' points: the "
        "median TPOT error with a fixed cost per step alone and with the estimate's costs (a fixed cost per step, "
        "per layer and per sequence, and the weight formats' costs), and with the latter the median and the 10th to 90th percentiles of measured / "
        "estimate. A median far from 1 is an efficiency the model's own shapes and checkpoint set, which the other "
        "models' constants do not tell and only a measurement of the model does; the band is what varies within the "
        "model by device, layout and format, which no constant per model would take out.",
        columns=_TRANSFER_MODELS,
        rows=records(frame, _TRANSFER_MODELS),
        sources=(MEASUREMENTS_SOURCE,),
    )
