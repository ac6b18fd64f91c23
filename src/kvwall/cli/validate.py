"""`kvwall validate PATH`: serving measurements in the columns of data/reported/serving-measurements.csv, each held
against the bounds of its deployment.

Writes one CSV row per input row (the deployment understood, the bounds, the estimates, the realizations, the regime,
or why the row was not understood) to --output or standard output, and a short summary to standard error, one fact a line.
Every number written is derived; the measurements themselves stay in the input file. tpot_estimate_ms and
ttft_estimate_ms are the calibrated estimate, with each engine's constants as tables/derived/serving_engine_constants
holds them (derived from reported data; empty for an engine without constants, or where the tables are not built),
tpot_datasheet_ms the same decode step at datasheet rates, cost_<name>_ms each named cost of the calibrated TPOT
(kvwall.model.decode_costs), and tpot_stated_ms the step-time estimate of stated assumptions only
(kvwall.model.step_time). tpot_planned_ms and ttft_planned_ms are what `kvwall plan --engine` prices the row's
deployment with: the calibrated estimate times the engine's offsets of tables/derived/serving_estimate_offsets
(kvwall.validation.calibrated.planned_columns), planned_layer the layer that priced it (the finest offset level that
holds the row, or the constants alone where the measurements hold nothing of its engine, mode and model). With --summary the summary
adds the error of the calibrated estimate on the file's own rows it was not fitted on (kvwall.validation.estimate_error),
beside its targets (kvwall.validation.targets: new models first).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kvwall.cli import request
from kvwall.cli.options import common
from kvwall.render import checked_output, write_output
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.validation_map import VALIDATION_FILE
from kvwall.model.decode_costs import COSTS
from kvwall.tables.validation import layout_label
from kvwall.validation.calibrated import (PLANNED_COLUMNS, engine_constants, engine_offsets, estimate_columns,
                                          fitted_ids, planned_columns, tables_beside)
from kvwall.validation.calibration import CalibrationError
from kvwall.validation.estimate_error import SCHEMES, assess
from kvwall.validation.run import Validation, validate_file
from kvwall.validation.targets import ERROR_TARGETS

#: The columns written, in order.
OUTPUT_COLUMNS = (
    "id", "model", "device", "backend", "mode", "layout", "devices", "weight_format", "kv_format", "in_flight",
    "running_batch", "decode_context", "tpot_bound_ms", "tpot_estimate_ms", "tpot_datasheet_ms", "tpot_stated_ms",
    "ttft_estimate_ms", *PLANNED_COLUMNS, *(f"cost_{name}_ms" for name in COSTS), "collectives_ms", "ttft_bound_ms",
    "tpot_realization", "ttft_realization", "regime", "diagnosis", "reason",
)


def output_frame(validation: Validation, kv_format: str, estimates: pd.DataFrame) -> pd.DataFrame:
    """The rows ``kvwall validate`` writes: derived values only, keyed by the input's id; ``estimates``: the
    calibrated, planned and datasheet estimates (kvwall.validation.calibrated.estimate_columns and
    planned_columns)."""
    points = validation.points.rename(columns={"tpot_estimate_ms": "tpot_stated_ms"})
    frame = points.assign(layout=layout_label(points).where(points["tp"].notna(), None), kv_format=kv_format,
                          **{name: estimates[name] for name in estimates.columns})
    for name in ("devices", "in_flight", "running_batch"):
        frame[name] = frame[name].astype("Int64")
    return frame[list(OUTPUT_COLUMNS)]


def _refusals(reasons: pd.Series) -> list[tuple[str, int]]:
    """Refusal reasons by kind (the words before ': '), most frequent first, each with its variants counted and the
    most frequent named: 'a layout that does not divide (14 variants; most often: a parallel size of 0)'."""
    kinds = reasons.str.split(": ", n=1).str[0]
    found = []
    for kind, count in kinds.value_counts().items():
        details = reasons[kinds == kind].str.split(": ", n=1).str[1].dropna().value_counts()
        if len(details) > 1:
            kind = f"{kind} ({len(details)} variants; most often: {details.index[0]})"
        elif len(details) == 1:
            kind = f"{kind}: {details.index[0]}"
        found.append((kind, int(count)))
    return found


def calibrated_summary(validation: Validation, rows: pd.DataFrame, estimates: pd.DataFrame,
                       fitted_ids: set[str], calibrated) -> list[str]:
    """The median TPOT error of the calibrated estimate and of the planned one (its constants times the offsets) on
    the file's rows, split into rows the calibration was fitted on (``fitted_ids``) and rows it never saw; and, one
    a line, each engine of the rows without constants (not in ``calibrated``)."""
    understood = validation.understood
    measured = rows.loc[understood.index, "silicon_tpot_ms"]
    seen = understood["id"].isin(fitted_ids)
    lines = []
    for name, column in (("calibrated estimate (derived from reported data)", "tpot_estimate_ms"),
                         ("with its offsets (as planned)", "tpot_planned_ms")):
        error = (estimates.loc[understood.index, column] / measured - 1).abs()
        parts = []
        for label, chosen in (("rows fitted on", error[seen]), ("unseen rows", error[~seen])):
            chosen = chosen.dropna()
            parts.append(f"{chosen.median():.2f} on {len(chosen):,} {label}" if len(chosen) else f"none on {label}")
        lines.append(f"  {name}, median |error|: {', '.join(parts)}")
    for engine in sorted(set(understood["backend"]) - set(calibrated)):
        lines.append(f"  {engine}: no fitted constants in tables/derived/serving_engine_constants: its rows keep no "
                     "calibrated or planned estimate")
    return lines


def summary(validation: Validation, rows: pd.DataFrame) -> str:
    """Rows read, understood and refused (each reason on its line, most frequent first), points below their bound,
    the median realization per engine and the estimate's median error: a short report, one fact a line."""
    points, understood, rows_read = validation.points, validation.understood, len(rows)
    reasons = _refusals(points["reason"].dropna())
    below = understood[understood["tpot_realization"] > 1]
    diagnosed = int(below["diagnosis"].notna().sum())
    medians = understood.groupby("backend")["tpot_realization"].median()
    errors = np.abs(understood["tpot_estimate_ms"] / rows.loc[understood.index, "silicon_tpot_ms"] - 1)  # stated
    estimate_error = f"{np.median(errors):.2f}" if len(errors) else "none (no row understood)"
    width = len(f"{rows_read:,}")
    lines = [
        f"kvwall validate: {rows_read:,} rows read",
        f"  understood {len(understood):>{width},}",
        f"  refused    {rows_read - len(understood):>{width},}",
        *(f"    {count:>{width},}  {reason}" for reason, count in reasons),
        f"  measured below their TPOT bound: {len(below):,} ({diagnosed:,} with a documented diagnosis)",
        "  median TPOT bound / measured per engine:" + ("" if len(medians) else " none"),
        *(f"    {engine:<8} {value:.2f}" for engine, value in medians.items()),
        f"  estimate (stated assumptions only, no efficiency fitted to these data): median |estimate / measured - 1| "
        f"{estimate_error}",
    ]
    return "\n".join(lines)


def estimate_summary(validation: Validation, rows: pd.DataFrame, tokens: float, latency: float,
                     pseudo_count: float, families) -> str:
    """The calibrated estimate's error on rows held out of its fit, one target of
    kvwall.validation.targets.ERROR_TARGETS a line (new models first), the datasheet's beside it."""
    try:
        _, _, errors = assess(validation.understood, rows, tokens, latency, pseudo_count, families)
    except CalibrationError as error:
        return f"  estimate: not calibrated: {error}"
    pooled = errors[errors["backend"] == "all"].set_index(["scheme", "quantity", "mode"])
    lines = ["  estimate on rows it was not fitted on (target; datasheet rates beside):"]
    for target in ERROR_TARGETS:
        key = (target.scheme, target.quantity, target.mode)
        if key not in pooled.index:
            continue
        value, datasheet = (float(pooled.loc[k, target.statistic]) for k in (key, (SCHEMES[0], *key[1:])))
        lines.append(f"    {target.label(value)}: {'met' if target.met(value) else 'not met'}; datasheet {datasheet:.1%}")
    return "\n".join(lines)


def run(args: argparse.Namespace, catalog: Catalog) -> int:
    validation_map = Path(catalog.files["devices"]).parent / VALIDATION_FILE
    output = checked_output(args.output, "--output", [args.path]) if args.output else None
    rows, vmap, validation = validate_file(args.path, validation_map, catalog, strict=False)
    serving = load_serving_inputs(catalog)
    tables = tables_beside(catalog)
    constants = engine_constants(tables, sorted(validation.points["backend"].dropna().unique()))
    estimates = estimate_columns(validation.points, constants, serving.collective_latency, vmap.tokens_per_step)
    estimates = estimates.join(planned_columns(validation.points, constants, engine_offsets(tables, constants),
                                               vmap.tokens_per_step))
    text = output_frame(validation, vmap.kv_format, estimates).to_csv(index=False, lineterminator="\n")
    if output is None:
        sys.stdout.write(text)
    else:
        write_output(output, text)
    print(summary(validation, rows), file=sys.stderr)
    print("\n".join(calibrated_summary(validation, rows, estimates, fitted_ids(tables), constants)), file=sys.stderr)
    if args.summary:
        print(estimate_summary(validation, rows, vmap.tokens_per_step, serving.collective_latency,
                                       vmap.offset_pseudo_count, vmap.families), file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add `kvwall validate` to the command's subparsers."""
    p = subparsers.add_parser(
        "validate", parents=[common()], help="hold measured serving points against their derived bounds",
        description="Read a CSV of measured serving points (the columns of data/reported/serving-measurements.csv, "
        "described in data/reported/README.md) and write, per row, the deployment understood, the TPOT and TTFT "
        "bounds, the calibrated estimate (engine constants of tables/derived/serving_engine_constants, derived from "
        "reported data) with its named costs, the datasheet and stated estimates, bound / measured and the regime, or "
        "why the row was not understood.",
    )
    p.add_argument("path", metavar="PATH", help="CSV of measurements in the columns of data/reported/serving-measurements.csv")
    p.add_argument("--output", metavar="FILE", help="write the CSV here (default: standard output)")
    p.add_argument("--summary", action="store_true",
                   help="also fit the engine constants to the file and report the estimate's cross-validated error")
    p.set_defaults(func=lambda args: run(args, request.catalog_of(args)))
