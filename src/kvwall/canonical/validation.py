"""CANONICAL-NUMBERS §8 (Validation): the derived bounds held against the reported serving measurements.

Read from the validation tables (kvwall.tables.validation) by column name: what was understood and why not, the
realization per engine and device, the points below their bound by diagnosis, what the measured TPOT is made of, the paper's
central claim on independent data, the calibrated estimate's error on points its fit did not see and, per engine,
the held-out error band kvwall prints beside a calibrated answer, whether
kvwall plan ranks layouts as the measurements do, priced with the calibrated costs, why narrower weights bought
less than the bound predicted and what the estimate's held-out error is made of, and, last, what the estimate knows of a model or device it has never
measured. Every number here is derived; the measurements stay reported in
tables/reported/serving_measurements.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Mapping

from kvwall.canonical.derived import Column, WideTable, wide_block
from kvwall.canonical.document import Block, Number, Row, Section

if TYPE_CHECKING:
    import pandas as pd

SECTION = 8
#: The tables this section reads, by artifact.
VALIDATION_TABLE_INPUTS = (
    "derived/serving_bounds",
    "derived/serving_realization",
    "derived/serving_cost_shares",
    "derived/serving_format_claim",
    "derived/serving_estimate_error",
    "derived/plan_ranking_summary",
    "derived/serving_format_claim_costs",
    "derived/serving_error_sources",
    "derived/serving_repeatability",
)
_BOUNDS_SOURCE = ("kvwall.validation.points: TPOT bound = max(bytes / β, FLOPs / F) per GPU at the batch that fits; "
                  "tables/derived/serving_bounds.csv")

REALIZATION = WideTable(
    "derived/serving_realization", "Bound over measured, per engine and device", "{backend}.{device}",
    "{backend} on {device}", "Engine, device",
    (Column("points", "Points", "count", "int"),
     Column("below_bound", "Below bound", "count", "int"),
     Column("median_tpot_realization", "Median TPOT bound / measured", "ratio", "fixed3"),
     Column("median_ttft_realization", "Median TTFT bound / measured", "ratio", "fixed3")),
    "realization = bound / measured; medians over the understood points (kvwall.validation.points)",
    "data/reported/serving-measurements.csv; config/validation.yaml",
    note="1 is the hardware's limit; below 1, the share of it the engine realized.",
)


COST_SHARES = WideTable(
    "derived/serving_cost_shares", "What the measured TPOT is made of, per engine, device and mode",
    "{backend}.{device}.{mode}", "{backend} on {device}, {mode}", "Engine, device, mode",
    (Column("points", "Points", "count", "int"),
     *(Column(f"share_{name}", header, "ratio", "percent0") for name, header in (
         ("weights", "Weights"), ("kv", "KV"), ("compute", "Compute"), ("collectives", "Collectives"),
         ("imbalance", "Busiest EP rank"), ("fixed", "Fixed"), ("prefill", "Prefill"))),
     Column("remainder", "Unexplained", "ratio", "percent0")),
    "each named cost of the calibrated decode step (kvwall.model.decode_costs) summed over the points, over their "
    "summed measured TPOT (kvwall.validation.cost_shares)",
    "data/reported/serving-measurements.csv; config/validation.yaml; tables/derived/serving_engine_constants.csv",
    note="Shares of the summed measured TPOT, with each engine's constants fitted on its points (derived from "
    "reported data); a negative remainder is time the costs price that the engine did not spend.",
)


#: The parts of the wider step that narrower weights do not shrink: name, header and how the sentence says it.
_NOT_SHRINKING = (("kv", "KV", "KV reads"), ("compute", "Compute", "compute"), ("collectives", "Collectives", "collectives"),
                  ("dispatch", "Busiest EP rank's dispatch", "the busiest EP rank's dispatch"),
                  ("fixed", "Fixed", "the fixed cost per step"), ("prefill", "Prefill", "other requests' prefill"))
CLAIM_COSTS = WideTable(
    "derived/serving_format_claim_costs", "The claim re-asked: why narrower weights bought less than the bound predicted",
    "{weight_format_wide}-{weight_format_narrow}", "{weight_format_wide} to {weight_format_narrow}", "From, to",
    (Column("pairs", "Pairs", "count", "int"),
     Column("median_measured_speedup", "Measured", "ratio", "times2"),
     Column("median_predicted_speedup", "Bound", "ratio", "times2"),
     Column("median_calibrated_speedup", "Calibrated", "ratio", "times2"),
     Column("median_held_out_speedup", "Held out", "ratio", "times2"),
     Column("median_ceiling", "Ceiling", "ratio", "times2"),
     Column("shrinking_share", "Shrinks", "ratio", "percent0"),
     *(Column(f"share_{name}", header, "ratio", "percent0") for name, header, _ in _NOT_SHRINKING)),
    "medians over the pairs of the wider point's TPOT, bound and calibrated estimate (in sample, and held out: "
    "constants fitted on the grouped 5-fold folds without the pair's two points) over the narrower's; ceiling "
    "1 / (1 - s + s / r), s the share of the wider step in the weights and the busiest EP rank's expert reads, r the "
    "weight-bytes ratio; shares of the summed wider estimates (kvwall.validation.claim_costs)",
    "data/reported/serving-measurements.csv; config/validation.yaml; tables/derived/serving_engine_constants.csv",
)


def _claim_costs(frame: pd.DataFrame) -> Block:
    """The weight-bound pairs of every engine and device, over all formats (first) and per pair of formats, with a
    sentence that answers the claim in the numbers of the first row."""
    pooled = frame[(frame["backend"] == "all") & (frame["device"] == "all") & (frame["regime_wide"] == "weight-bound")]
    block = wide_block(SECTION, CLAIM_COSTS, pooled.sort_values(["weight_format_wide", "weight_format_narrow"]), {})
    first = {column.name: number for column, number in zip(CLAIM_COSTS.columns, block.rows[0].numbers)}
    rest = sorted(((first[f"share_{name}"], words) for name, _, words in _NOT_SHRINKING
                   if first[f"share_{name}"].display != "0%"), key=lambda part: -part[0].value)
    shown = {name: number.display for name, number in first.items()}
    said = [f"{words} ({number.display})" for number, words in rest]
    parts = ", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else "".join(said)
    note = (f"Over the {shown['pairs']} weight-bound pairs, narrower weights bought a median "
            f"{shown['median_measured_speedup']} where the step-time bound predicted {shown['median_predicted_speedup']}; "
            f"the calibrated model predicts {shown['median_calibrated_speedup']} in sample and "
            f"{shown['median_held_out_speedup']} held out (constants fitted without the pair's two points), and "
            f"Amdahl's ceiling "
            f"{shown['median_ceiling']}, because only {shown['shrinking_share']} of the wider step shrinks with the "
            f"weight bytes: the rest is {parts}, which narrower weights do not shrink. Weight-bound: the "
            "wider point's regime; the shares are priced with the engine constants fitted in sample, these pairs among their "
            "points.")
    return replace(block, note=note)


def _count(number_id: str, quantity: str, value: int, source: str) -> Number:
    return Number(number_id, quantity, int(value), "count", f"{int(value):,}", "derived", source)


def _reading(bounds: pd.DataFrame) -> Block:
    """Rows read, understood, refused by reason (words: the reasons name no values of their own)."""
    refused = bounds["reason"].dropna()
    kinds = refused.str.replace(r":.*", "", regex=True).str.replace(r"^(model|system) \S+ (is not mapped).*", r"\1 \2", regex=True)
    rows = [Row("Rows read", (_count("s8.rows.read", "Rows read", len(bounds), _BOUNDS_SOURCE),)),
            Row("Rows understood", (_count("s8.rows.understood", "Rows understood", int(bounds["reason"].isna().sum()), _BOUNDS_SOURCE),))]
    for index, (kind, count) in enumerate(sorted(kinds.value_counts().items())):
        rows.append(Row(f"Refused: {kind}", (_count(f"s8.rows.refused.{index}", f"Refused: {kind}", count, _BOUNDS_SOURCE),)))
    return Block("What was understood", tuple(rows), note="A refused row keeps its reason in tables/derived/serving_bounds.")


def _below(bounds: pd.DataFrame) -> Block:
    below = bounds[bounds["tpot_realization"] > 1]
    counts = below["diagnosis"].value_counts().sort_index()
    rows = tuple(Row(f"Below the TPOT bound: {diagnosis}", (_count(f"s8.below.{diagnosis}", f"Points below the TPOT bound, {diagnosis}", count,
                                                                   f"config/validation.yaml below_bound; {_BOUNDS_SOURCE}"),))
                 for diagnosis, count in counts.items())
    return Block("Points measured below their bound, by documented diagnosis", rows,
                 note="Never dropped: each is listed in tables/derived/serving_bounds with its diagnosis.")


def _medians(frame: pd.DataFrame, by: str, title: str, columns: Mapping[str, tuple[str, int]], source: str, stem: str) -> Block:
    """One row per value of ``by``: the number of rows and the median of each column (a ratio, printed to decimals)."""
    rows = []
    for key, group in frame.groupby(by, sort=True):
        numbers = [_count(f"s8.{stem}.{key}.n", f"{title}, {key}: n", len(group), source)]
        numbers += [Number(f"s8.{stem}.{key}.{name}", f"{header}, {key}", float(group[name].median()), "ratio",
                           f"{group[name].median():,.{decimals}f}", "derived", source)
                    for name, (header, decimals) in columns.items()]
        rows.append(Row(str(key), tuple(numbers)))
    return Block(title, tuple(rows), header=by.replace("_", " ").capitalize(),
                 columns=("n", *(header for header, _ in columns.values())))


_ESTIMATE_SOURCE = ("kvwall.validation.estimate_error: |estimate / measured - 1| over the agg points, engine "
                    "constants fitted on the reported measurements; tables/derived/serving_estimate_error.csv")
#: The error statistics printed per scheme: (quantity, column, header).
_ESTIMATE_COLUMNS = (("TPOT", "median_error", "TPOT median |error|"), ("TPOT", "mean_error", "TPOT mean |error|"),
                     ("TPOT", "within_10", "TPOT within 10%"), ("TTFT", "median_error", "TTFT median |error|"))


def _estimate(errors: pd.DataFrame) -> Block:
    """Per scheme, over every engine's agg points: the TPOT and TTFT errors of the estimate."""
    agg = errors[(errors["backend"] == "all") & (errors["mode"] == "agg")]
    rows = []
    for scheme in dict.fromkeys(agg["scheme"]):
        chosen, slug = agg[agg["scheme"] == scheme].set_index("quantity"), scheme.replace(" ", "-")
        numbers = tuple(Number(f"s8.estimate.{slug}.{quantity.lower()}.{column}", f"{header}, {scheme}",
                               float(chosen.loc[quantity, column]), "ratio", f"{chosen.loc[quantity, column]:.0%}",
                               "derived", _ESTIMATE_SOURCE)
                        for quantity, column, header in _ESTIMATE_COLUMNS)
        rows.append(Row(scheme, numbers))
    return Block("The estimate's error on agg points, by how it was predicted", tuple(rows), header="Predicted",
                 columns=tuple(header for _, _, header in _ESTIMATE_COLUMNS),
                 note="Datasheet: every byte and FLOP at its datasheet rate, no fixed cost. The fitted constants "
                 "(tables/derived/serving_engine_constants) are derived from reported data and feed the estimate "
                 "only, never a bound; grouped 5-fold keeps points that differ only in concurrency in one fold.")


#: The held-out schemes whose error `kvwall regime|fit|plan --engine` prints (kvwall.validation.calibrated.HELD_OUT
#: and HELD_OUT_WITH_OFFSETS), each with what its rows' labels and ids add to the engine's name.
_HELD_OUT, _WITH_OFFSETS = "grouped 5-fold", "grouped 5-fold, with offsets"
_BAND_SCHEMES = {_HELD_OUT: ("", ""), _WITH_OFFSETS: (", with offsets", "-offsets")}
#: Per quantity, the columns of an engine's band: (column, header, format).
_BAND_COLUMNS = (("points", "points", "{:,}"), ("median_error", "median |error|", "{:.0%}"),
                 ("measured_over_estimate_p10", "measured / estimate, 10th pct", "{:.2f}×"),
                 ("measured_over_estimate_p90", "measured / estimate, 90th pct", "{:.2f}×"))


def _engine_bands(errors: pd.DataFrame) -> Block:
    """Per engine, the held-out error of its agg TPOT and TTFT that the calibrated answer of kvwall prints beside
    the estimate, without offsets and with them, with one sentence per engine saying it."""
    rows, said = [], {}
    for scheme, (label, slug) in _BAND_SCHEMES.items():
        held = errors[(errors["scheme"] == scheme) & (errors["mode"] == "agg") & (errors["backend"] != "all")]
        for engine, group in held.groupby("backend", sort=True):
            chosen, numbers, shown = group.set_index("quantity"), [], {}
            for quantity in ("TPOT", "TTFT"):
                for column, header, fmt in _BAND_COLUMNS:
                    value = chosen.loc[quantity, column]
                    value = int(value) if column == "points" else float(value)
                    display = fmt.format(value)
                    shown[quantity, column] = display
                    numbers.append(Number(f"s8.engine-band.{engine}{slug}.{quantity.lower()}.{column}",
                                          f"{quantity} {header}, {engine}, {scheme}, agg", value,
                                          "count" if column == "points" else "ratio", display, "derived",
                                          _ESTIMATE_SOURCE))
            rows.append(Row(f"{engine}{label}", tuple(numbers)))
            said.setdefault(scheme, []).append(
                f"{engine}: TPOT within {shown['TPOT', 'median_error']} at the median, 80% of the points measured "
                f"{shown['TPOT', 'measured_over_estimate_p10']} to {shown['TPOT', 'measured_over_estimate_p90']} "
                f"the estimate; TTFT within {shown['TTFT', 'median_error']}, "
                f"{shown['TTFT', 'measured_over_estimate_p10']} to {shown['TTFT', 'measured_over_estimate_p90']}")
    note = ("`kvwall regime --engine E` and `kvwall plan --engine E` print the calibrated TPOT and TTFT, priced with "
            "E's constants fitted on every point (tables/derived/serving_engine_constants), beside the error E's "
            f"estimate makes on the agg points {_HELD_OUT} cross-validation held out: " + "; ".join(said.get(_HELD_OUT, ()))
            + ". For a model the measurements hold, both multiply them by E's offsets "
            "(tables/derived/serving_estimate_offsets) and prints the error of that estimate, the constants and the "
            "offsets fitted on the other folds: " + "; ".join(said.get(_WITH_OFFSETS, ())) + ".")
    return Block(f"What `kvwall regime|plan --engine` prints beside its estimate: the engine's held-out error", tuple(rows),
                 header="Engine", columns=tuple(f"{q} {header}" for q in ("TPOT", "TTFT") for _, header, _ in _BAND_COLUMNS),
                 note=note)


#: The schemes of a planner's new model or device, with the in-distribution one beside them (kvwall.validation.targets).
_NEW_MODEL_SCHEMES = ("leave one model out, with offsets", "leave one device out, with offsets",
                      "leave one model family out", _WITH_OFFSETS)
#: The band columns of each: (quantity, column, header).
_NEW_MODEL_COLUMNS = tuple((quantity, column, f"{quantity} measured / estimate, {end}")
                           for quantity in ("TPOT", "TTFT")
                           for column, end in (("measured_over_estimate_p10", "10th pct"),
                                               ("measured_over_estimate_p90", "90th pct")))
#: The ranking summary's estimates the note compares: for a measured model, for a new one, and measuring again.
_PLANNED, _NEW_MODEL, _SECOND = ("calibrated with offsets, held out", "calibrated with offsets, leave one model out",
                                 "a second measurement")


def _new_model(errors: pd.DataFrame, ranking: pd.DataFrame) -> Block:
    """What the estimate `kvwall plan --engine` prices with knows of a model or a device it has never measured: per
    scheme, the band 80% of the agg points' measured / estimate fall in, with a note leading with the new-model
    error and ranking, the in-distribution ones beside them."""
    agg = errors[(errors["backend"] == "all") & (errors["mode"] == "agg")].set_index(["scheme", "quantity"])
    rows = []
    for scheme in _NEW_MODEL_SCHEMES:
        slug = scheme.replace(", ", "-").replace(" ", "-")
        rows.append(Row(scheme, tuple(
            Number(f"s8.new-model.{slug}.{quantity.lower()}.{column}", f"{header}, {scheme}, agg",
                   float(agg.loc[(scheme, quantity), column]), "ratio", f"{agg.loc[(scheme, quantity), column]:.2f}×",
                   "derived", _ESTIMATE_SOURCE)
            for quantity, column, header in _NEW_MODEL_COLUMNS)))
    median = {scheme: f"{agg.loc[(scheme, 'TPOT'), 'median_error']:.0%}" for scheme in _NEW_MODEL_SCHEMES}
    at = ranking[ranking["limit"] == "median"].set_index("estimate")
    top1 = {estimate: f"{at.loc[estimate, 'top1_agreement']:.1%}" for estimate in (_PLANNED, _NEW_MODEL, _SECOND)}
    note = (f"For a model the measurements do not hold, the estimate `kvwall plan --engine` prices with is off by "
            f"{median[_NEW_MODEL_SCHEMES[0]]} at the median on agg TPOT (8.6, leave one model out: a held-out model "
            f"keeps no offset of its own), {median[_NEW_MODEL_SCHEMES[2]]} leaving its whole family out, and "
            f"{median[_NEW_MODEL_SCHEMES[1]]} for a device the measurements do not hold; "
            f"{median[_WITH_OFFSETS]} where the same engine, model and device were measured at other lengths "
            f"(grouped 5-fold, with offsets). Its first layout at the median TPOT limit is the measurements' in "
            f"{top1[_NEW_MODEL]} of the groups for a new model and {top1[_PLANNED]} for a measured one (8.8), against "
            f"{top1[_SECOND]} for a second measurement of the same points.")
    return Block("What the estimate knows of a model or device it has never measured", tuple(rows),
                 header="Predicted", columns=tuple(header for _, _, header in _NEW_MODEL_COLUMNS), note=note)


_RANKING_SOURCE = ("kvwall.plan.proof: each measured group's layouts ranked by measured and by estimated tokens/s per "
                   "GPU at a TPOT limit; tables/derived/plan_ranking_summary.csv")


def _ranking(summary: pd.DataFrame) -> Block:
    """Per estimate and limit: how often kvwall's first layout is the measurements' and the median rank correlation."""
    rows = []
    for record in summary.to_dict("records"):
        label, slug = _ranking_slug(record)
        rows.append(Row(label, (
            _count(f"s8.ranking.{slug}.groups", f"Groups ranked, {label}", record["groups"], _RANKING_SOURCE),
            Number(f"s8.ranking.{slug}.top1", f"First layouts agree, {label}", float(record["top1_agreement"]), "ratio",
                   f"{record['top1_agreement']:.1%}", "derived", _RANKING_SOURCE),
            Number(f"s8.ranking.{slug}.rho", f"Median rank correlation, {label}",
                   float(record["median_rank_correlation"]), "ratio", f"{record['median_rank_correlation']:.2f}",
                   "derived", _RANKING_SOURCE),
            Number(f"s8.ranking.{slug}.pick", f"Estimate's first layout, measured, of the best, {label}",
                   float(record["mean_rate_of_pick"]), "ratio", f"{record['mean_rate_of_pick']:.0%}", "derived",
                   _RANKING_SOURCE))))
    return Block("Does kvwall plan pick what the measurements pick?", tuple(rows), header="Estimate, TPOT limit",
                 columns=("Groups", "First layouts agree", "Median rank correlation", "Its first, measured, of the best"),
                 note="Per group of measured agg points at two layouts or more (tables/derived/plan_ranking, where a "
                 "disagreement stays with what each ranking put first), at the group's median measured TPOT and at "
                 "no limit (loosest); the calibrated estimate as grouped cross-validation predicts it, folds of whole "
                 "groups, without and with the offsets of those folds (tables/derived/serving_estimate_offsets, what "
                 "kvwall plan --engine prices with); the last column: the mean over the groups of the measured rate of the estimate's first "
                 "layout over the measured first layout's. A second measurement: the measured ranking against the same "
                 "points measured again, each TPOT times a ratio of two measurements of one deployment drawn from the "
                 "file's repeats (tables/derived/serving_repeatability), over many draws: what an estimate as good as measuring again would score.")


def _ranking_slug(record: dict) -> tuple[str, str]:
    """A summary row's label and the slug of its ids: 'calibrated with offsets, held out, median limit'."""
    label = f"{record['estimate']}, {record['limit']} limit"
    return label, f"{record['estimate']}.{record['limit']}".replace(", ", "-").replace(" ", "-")


def _ranking_intervals(summary: pd.DataFrame) -> Block:
    """Per estimate and limit: the 90% interval of the top-1 share over cluster bootstrap resamples of the groups."""
    rows = []
    for record in summary.to_dict("records"):
        label, slug = _ranking_slug(record)
        rows.append(Row(label, tuple(
            Number(f"s8.ranking.{slug}.top1-{end}", f"First layouts agree, 90% interval {words}, {label}",
                   float(record[column]), "ratio", f"{record[column]:.1%}", "derived", _RANKING_SOURCE)
            for end, words, column in (("low", "from", "top1_low"), ("high", "to", "top1_high")))))
    return Block("How far the first-layout shares could move on other groups like these", tuple(rows),
                 header="Estimate, TPOT limit", columns=("90% interval from", "to"),
                 note="The share of 8.8 over cluster bootstrap resamples of its groups (their count in the table's "
                 "caption), the groups of one engine, model, device and weight format drawn together (a held-out group's offsets come from the others); "
                 "the 5th and 95th percentiles.")


def _against_second(summary: pd.DataFrame) -> Block:
    """Per estimate and limit: its top-1 share less a second measurement's, with its paired 90% interval."""
    rows = []
    for record in summary.dropna(subset=["against_second"]).to_dict("records"):
        label, slug = _ranking_slug(record)
        rows.append(Row(label, tuple(
            Number(f"s8.ranking.{slug}.against-second{end}", f"First layouts agree, less a second measurement{words}, "
                   f"{label}", float(record[column]), "ratio", f"{record[column] * 100:+.1f} pp", "derived",
                   _RANKING_SOURCE)
            for end, words, column in (("", "", "against_second"), ("-low", ", 90% interval from", "against_second_low"),
                                       ("-high", ", 90% interval to", "against_second_high")))))
    return Block("Does an estimate pick the first layout less often than measuring again?", tuple(rows),
                 header="Estimate, TPOT limit", columns=("Less a second measurement", "90% interval from", "to"),
                 note="The estimate's share of 8.8 less the second measurement's, in percentage points, its interval "
                 "over the resamples of 8.12, paired (the same groups drawn for both): where the interval holds 0, "
                 "these groups do not tell the estimate's first layouts from measuring again.")


_ERROR_SOURCES_SOURCE = ("kvwall.validation.error_sources: the grouped 5-fold agg TPOT residual ln(measured / estimate) "
                         "corrected by a fit on the other folds; tables/derived/serving_error_sources.csv")
#: The columns of each correction: (column, header).
_ERROR_SOURCES_COLUMNS = (("median_error", "Median |error|"), ("mean_error", "Mean |error|"), ("within_10", "Within 10%"))


def _error_sources(frame: pd.DataFrame) -> Block:
    """The held-out TPOT error after each correction: what a term of the decode step could buy, what only lookups do."""
    rows = []
    for record in frame.to_dict("records"):
        step = record["step"]
        slug = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-")
        rows.append(Row(step, tuple(
            Number(f"s8.error-sources.{slug}.{column}", f"{header}, {step}", float(record[column]), "ratio",
                   f"{record[column]:.1%}", "derived", _ERROR_SOURCES_SOURCE)
            for column, header in _ERROR_SOURCES_COLUMNS)))
    return Block("What the estimate's held-out TPOT error is made of", tuple(rows), header="Corrected for",
                 columns=tuple(header for _, header in _ERROR_SOURCES_COLUMNS),
                 note="Each step adds to the fit of the steps above it. The deployment's shape (sequences in flight, TP, "
                 "isl, osl) is what a missing term of the decode step could depend on; the offsets per engine and "
                 "model, engine and device, precision, layout, lengths and measurement campaign are lookups no "
                 "datasheet gives, which would not carry over to a model, device or campaign the measurements do not "
                 "hold.")


_REPEATABILITY_SOURCE = ("kvwall.validation.repeatability: TPOT ratios of two different measurements of one agg "
                         "configuration; tables/derived/serving_repeatability.csv")


def _repeatability(frame: pd.DataFrame) -> Block:
    """How far two measurements of one deployment differ: the noise the layout ranking is held against."""
    record = frame.to_dict("records")[0]
    label = "Agg configurations measured more than once"
    return Block("How far two measurements of one deployment differ", (Row(label, (
        _count("s8.repeatability.configurations", "Configurations measured more than once", record["configurations"],
               _REPEATABILITY_SOURCE),
        _count("s8.repeatability.pairs", "Ordered pairs of two different measurements", record["pairs"],
               _REPEATABILITY_SOURCE),
        Number("s8.repeatability.median", "Median |TPOT ratio - 1| of two measurements", float(record["median_distance"]),
               "ratio", f"{record['median_distance']:.1%}", "derived", _REPEATABILITY_SOURCE),
        Number("s8.repeatability.within-10", "Pairs of measurements within 10% of each other",
               float(record["within_10"]), "ratio", f"{record['within_10']:.0%}", "derived", _REPEATABILITY_SOURCE),
        Number("s8.repeatability.within-20", "Pairs of measurements within 20% of each other",
               float(record["within_20"]), "ratio", f"{record['within_20']:.0%}", "derived", _REPEATABILITY_SOURCE))),),
        header="Measurements", columns=("Configurations", "Pairs", "Median |ratio - 1|", "Within 10%",
                                        "Within 20%"),
        note="A configuration is an agg deployment at one concurrency; a row that lists another's measurement again "
        "is refused and gives no pair. The layout ranking's second measurement "
        "re-measures every point with these ratios.")


def validation_section(tables: Mapping[str, pd.DataFrame]) -> Section:
    """§8 from the validation tables."""
    bounds = tables["derived/serving_bounds"]
    claim = tables["derived/serving_format_claim"]
    return Section(
        number=SECTION,
        title="Validation",
        intro="Every reported serving measurement (data/reported/, TensorRT-LLM, vLLM and SGLang) held against the "
        "bounds kvwall derives for its deployment: the bound is derived, the measurement reported, and bound over "
        "measured is a third, derived number. What the estimate knows of a model or device it has never measured, what a "
        "planner meets, is 8.14. Tables: tables/derived/serving_*; figures: figures/serving_*.",
        blocks=(
            _reading(bounds),
            wide_block(SECTION, REALIZATION, tables["derived/serving_realization"], {}),
            _below(bounds),
            wide_block(SECTION, COST_SHARES, tables["derived/serving_cost_shares"], {}),
            _medians(claim, "regime_narrow", "Narrower weights: measured and predicted speedup, by regime after",
                     {"measured_speedup": ("Median measured speedup", 2), "predicted_speedup": ("Median predicted speedup", 2),
                      "speedup_realized": ("Median measured over predicted", 2)},
                     "kvwall.validation.claim: ratio of TPOTs against ratio of step-time bounds; "
                     "tables/derived/serving_format_claim.csv", "claim"),
            _estimate(tables["derived/serving_estimate_error"]),
            _engine_bands(tables["derived/serving_estimate_error"]),
            _ranking(tables["derived/plan_ranking_summary"]),
            _claim_costs(tables["derived/serving_format_claim_costs"]),
            _error_sources(tables["derived/serving_error_sources"]),
            _repeatability(tables["derived/serving_repeatability"]),
            _ranking_intervals(tables["derived/plan_ranking_summary"]),
            _against_second(tables["derived/plan_ranking_summary"]),
            _new_model(tables["derived/serving_estimate_error"], tables["derived/plan_ranking_summary"]),
        ),
    )
