"""The calibrated estimate in `kvwall regime` and `kvwall fit` with --engine: TPOT and TTFT of the deployment with
the engine's fitted constants (tables/derived/serving_engine_constants) times its offsets for the model, device,
layout and weight format (tables/derived/serving_estimate_offsets, kvwall.validation.offsets), as `kvwall plan
--engine` prices them, and their held-out error (tables/derived/serving_estimate_error: with offsets where they hold
the model, else of the constants alone), beside the datasheet estimate; derived from reported data, never a bound
(kvwall.validation.calibrated)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.inputs.validation_map import VALIDATION_FILE, load_validation_map
from kvwall.model.decode_costs import prefill_stretch
from kvwall.model.engine_constants import PRINTED_UNITS
from kvwall.validation.calibrated import (CONSTANTS_TABLE, HELD_OUT_WITH_OFFSETS, NEW_MODEL, OFFSETS_TABLE, Calibrated,
                                         NotCalibrated, band_of, cost_points, estimate, read_calibrated, read_offsets,
                                         tables_beside)
from kvwall.validation.estimate_error import QUANTITIES
from kvwall.validation.offsets import OFFSET_COST, deployment_key

#: The mode the estimate prices: one engine prefilling and decoding (agg).
MODE = "agg"


def length_options(parser: argparse.ArgumentParser) -> None:
    """``--isl`` and ``--osl``: the lengths the calibrated estimate prices (with --engine)."""
    parser.add_argument("--isl", type=int, metavar="TOKENS",
                        help="input length of each request, for the calibrated estimate of --engine")
    parser.add_argument("--osl", type=int, metavar="TOKENS",
                        help="output length of each request, for the calibrated estimate of --engine")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def calibrated_answer(args: argparse.Namespace, catalog: Catalog, model, device, deployment: Deployment,
                      precision: str) -> dict | None:
    """The calibrated estimate of ``deployment`` at --batch requests of --isl and --osl tokens for --engine, as plain
    data; None without --engine. Stops with one line where the lengths are missing or the engine is not calibrated."""
    if args.engine is None:
        return None
    if args.isl is None or args.osl is None or args.isl < 1 or args.osl < 1:
        return {"engine": args.engine, "refused": "give --isl and --osl (at least 1 token each): the lengths whose "
                "decode and prefill the calibrated estimate prices"}
    tables = tables_beside(catalog)
    try:
        calibrated = read_calibrated(tables, args.engine)
        offsets = read_offsets(tables, args.engine)
    except NotCalibrated as error:
        return {"engine": args.engine, "refused": str(error)}
    key = deployment_key(args.engine, MODE, model, device, deployment)
    band = band_of(read_calibrated(tables, args.engine, HELD_OUT_WITH_OFFSETS),
                   read_calibrated(tables, args.engine, NEW_MODEL), offsets, MODE, model.id)
    vmap = load_validation_map(Path(catalog.files["devices"]).parent / VALIDATION_FILE, catalog)
    serving = load_serving_inputs(catalog)
    points = cost_points(model, device, deployment, args.engine, MODE, args.batch, args.isl, args.osl, vmap, serving,
                         precision)
    if points["reason"].notna().any():
        return {"engine": args.engine, "refused": str(points["reason"].iloc[0])}
    found = estimate(points, calibrated.constants, serving.collective_latency, vmap.tokens_per_step)[0]
    sequences, stretch = args.batch / deployment.data_parallel, float(prefill_stretch(found.costs))
    factors = {q: offsets.factor(q, key, sequences, stretch) for q in QUANTITIES}
    costs = {**found.costs, OFFSET_COST: found.tpot * (factors["TPOT"] - 1.0)}
    return {"engine": args.engine, "mode": MODE, "isl": args.isl, "osl": args.osl, "batch": args.batch,
            "evidence": "derived from reported data", "constants": calibrated.constants,
            "constants_table": f"tables/{CONSTANTS_TABLE}", "offsets_table": f"tables/{OFFSETS_TABLE}",
            "offsets": {**{q.lower(): {"factor": factors[q], "levels": offsets.levels_of(q, key, sequences, stretch)}
                           for q in factors}, "prefill_stretch": stretch},
            "tpot_s": found.tpot * factors["TPOT"], "ttft_s": found.ttft * factors["TTFT"],
            "tpot_datasheet_s": found.tpot_datasheet, "ttft_datasheet_s": found.ttft_datasheet,
            "tpot_error": band.tpot_error.get(MODE), "ttft_error": band.ttft_error.get(MODE),
            "held_out": band.tpot_error[MODE].scheme if MODE in band.tpot_error else None,
            "constants_at_bound": at_bound_json(calibrated),
            "costs_s_per_token": costs}


def _printed(name: str, value: float) -> str:
    """A constant in the unit tables/derived/serving_engine_constants prints it in."""
    unit, scale = PRINTED_UNITS[name]
    return f"{value / scale:.3g}" + ("" if unit == "ratio" else f" {unit}")


def at_bound_json(calibrated: Calibrated) -> list[dict]:
    """The constants the engine's fit held at a bound, as an answer's JSON lists them (base units)."""
    return [{"constant": c.name, "value": c.value, "bound": c.bound} for c in calibrated.at_bound]


def at_bound_line(engine: str, at_bound: list[dict]) -> list[str]:
    """One line naming the constants (at_bound_json) the engine's fit held at a bound, none where it held none: the
    measurements would take each past it, so the estimate prices with the bound itself (a realized fraction of 1 is
    the datasheet's own rate, a fixed cost of 0 none), and its interval is one-sided."""
    if not at_bound:
        return []
    named = ", ".join(f"{c['constant']} {_printed(c['constant'], c['value'])} ({c['bound']})" for c in at_bound)
    return [f"  held at a bound of the fit ({engine}, tables/{CONSTANTS_TABLE}): {named}: the measurements would take "
            "each past its bound, so the estimate prices with the bound itself (a fraction of 1 is the datasheet's own "
            "rate, a fixed cost of 0 none), and its interval is one-sided"]


def _band(value: float, error) -> str:
    if error is None:
        return f"{_ms(value)} (no held-out error: no {MODE} point of this engine was held out)"
    low, high = value * max(1 - error.median, 0.0), value * (1 + error.median)
    return (f"{_ms(value)}, {_ms(low)} to {_ms(high)} at the median held-out error {error.median:.0%} "
            f"(mean {error.mean:.0%}; measured / estimate {error.low:.2f}x to {error.high:.2f}x for 80% of the "
            f"{error.points:,} points)")


def _header(answer: dict) -> str:
    c = answer["constants"]
    return (f"Calibrated estimate, {answer['engine']} ({answer['mode']}, {answer['batch']:g} requests of ISL "
            f"{answer['isl']:,} and OSL {answer['osl']:,}): derived from reported data, the engine's constants fitted "
            f"on measured points ({answer['constants_table']}: fixed step {c.fixed_step * 1e3:.3g} ms, HBM fraction "
            f"{c.hbm_fraction:.3g}, FLOP fraction {c.flop_fraction:.3g}, {c.collective_latency * 1e6:.3g} us per "
            f"collective message, {c.layer_step * 1e6:.3g} us per layer and {c.sequence_step * 1e6:.3g} us per "
            f"sequence of a step, fp8 and fp4 weights read at 1 / {1 + c.fp8_weight_extra:.3g} and "
            f"1 / {1 + c.fp4_weight_extra:.3g} of the rate, those of a GEMM of N columns a GPU at 1 / (1 + "
            f"{c.half_rate_columns:.3g} / N), {c.first_token_fixed * 1e3:.3g} ms before a first "
            f"token, {c.wave_share:.3g} of the prefill wave), times its offsets "
            f"({answer['offsets_table']}: TPOT x{answer['offsets']['tpot']['factor']:.2f}, TTFT "
            f"x{answer['offsets']['ttft']['factor']:.2f}, prefill stretching the step "
            f"x{answer['offsets']['prefill_stretch']:.2f}); error band: {answer['held_out']} (cross-validation), "
            "never a bound")


def _refused(answer: dict) -> str:
    return f"Calibrated estimate ({answer['engine']}): none: {answer['refused']}."


def calibrated_lines(answer: dict | None) -> list[str]:
    """The answer as `kvwall regime` prints it; nothing without --engine."""
    if answer is None:
        return []
    if "refused" in answer:
        return [_refused(answer)]
    costs = answer["costs_s_per_token"]
    return [
        _header(answer),
        *at_bound_line(answer["engine"], answer["constants_at_bound"]),
        *(f"  {q.upper()}  {_band(answer[f'{q}_s'], answer[f'{q}_error'])}; datasheet estimate "
          f"{_ms(answer[f'{q}_datasheet_s'])}" for q in ("tpot", "ttft")),
        "  TPOT made of: " + ", ".join(f"{name} {_ms(seconds)}" for name, seconds in costs.items()),
    ]


def _short(value: float, error) -> str:
    if error is None:
        return _ms(value)
    return f"{_ms(value)} ({_ms(value * max(1 - error.median, 0.0))} to {_ms(value * (1 + error.median))})"


def calibrated_table(labels: list[str], answers: list[dict | None]) -> list[str]:
    """The answers of `kvwall fit`, one layout a line under one header; nothing without --engine."""
    given = [(label, answer) for label, answer in zip(labels, answers) if answer is not None]
    if not given:
        return []
    fitted = [answer for _, answer in given if "refused" not in answer]
    if not fitted:
        return [_refused(given[0][1])]
    first = fitted[0]
    held = first["tpot_error"] and first["ttft_error"]
    lines = [_header(first), *at_bound_line(first["engine"], first["constants_at_bound"]),
             f"  median held-out error: TPOT {first['tpot_error'].median:.0%}, TTFT {first['ttft_error'].median:.0%}"
             if held else "  no held-out error for this engine's agg points"]
    for label, answer in given:
        if "refused" in answer:
            lines.append(f"  {label}: none: {answer['refused']}")
        else:
            lines.append(f"  {label}: TPOT {_short(answer['tpot_s'], answer['tpot_error'])}, TTFT "
                         f"{_short(answer['ttft_s'], answer['ttft_error'])}; datasheet TPOT "
                         f"{_ms(answer['tpot_datasheet_s'])}")
    return lines
