"""`kvwall plan`: how to serve a model on up to N devices under a TPOT (and TTFT) target (kvwall.plan.search).

Without --engine the time per output token is the step-time estimate of each layout (kvwall.model.step_time.device_step:
the memory time at the stated bandwidth efficiency, max'ed with the compute time, plus every collective), TTFT the
lower bound of one request's prompt (kvwall.model.first_token): both derived from the catalogue's specs and the
stated assumptions, no fitted constant. With --engine both are the engine's calibrated estimate times its offsets for
the model, device, layout and weight format (kvwall.plan.calibrated: the constants, offsets and held-out error band the
validation tables hold, derived from reported data), and the datasheet estimate's answer beside it; where the tables are not built, the command says so in one line. Every row gives the
memory per device at its batch, and the first the costs its TPOT is made of (kvwall.plan.breakdown). --mode disagg
plans a prefill and a decode pool (kvwall.plan.disagg); --mode both gives the agg and disagg answers and which
serves more tokens per second per device at the targets.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Callable

from kvwall.cli import request
from kvwall.cli.calibrated import at_bound_json, at_bound_line
from kvwall.cli.options import common, engine_option, format_option, model_option
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.inputs.specs import Device, Model
from kvwall.plan.breakdown import LayoutCosts, device_memory, layout_costs
from kvwall.plan.calibrated import PlanCalibration, planned_stretch, read_plan_calibration
from kvwall.plan.curves import plan_curves, prefill_layouts
from kvwall.plan.disagg import DisaggPoint, disagg_best
from kvwall.plan.search import PlanPoint, Workload, best_within, closest, frontier
from kvwall.units import GB, MS
from kvwall.validation.calibrated import CONSTANTS_TABLE, OFFSETS_TABLE, HeldOutError, NotCalibrated
from kvwall.validation.estimate_error import QUANTITIES

#: The most devices a plan may span, the layouts it prints, and those of the datasheet estimate beside a calibrated one.
MAX_PLAN_DEVICES = 128
SHOWN, SHOWN_BESIDE = 5, 3


class PlanError(ValueError):
    """A plan that cannot be asked for: a target that is not a positive time, a length that is not a token count."""


def _positive(name: str, kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a {'whole ' if kind is int else ''}number") from None
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{text[:20]!r}: {name} must be positive and finite")
        return value
    return parse


def workload_of(args: argparse.Namespace) -> Workload:
    """The requests and targets of the command line, targets in seconds."""
    return Workload(args.isl, args.osl, args.tpot_max / 1e3, None if args.ttft_max is None else args.ttft_max / 1e3)


def _memory_json(model: Model, d: Deployment, batch: int, workload: Workload, device: Device) -> dict:
    m = device_memory(model, d, batch, workload, device)
    return {"weight_gb_per_device": m.weights / GB, "kv_gb_per_device": m.kv / GB,
            "memory_gb_per_device": m.total / GB, "hbm_gb": m.hbm / GB}


def _memory(model: Model, d: Deployment, batch: int, workload: Workload, device: Device) -> str:
    m = device_memory(model, d, batch, workload, device)
    return f"{m.total / GB:.1f}/{m.hbm / GB:.0f} GB"


#: The prefill stretch of a layout's step at a batch in a mode (kvwall.plan.calibrated.planned_stretch, the plan's
#: workload and device bound).
StretchOf = Callable[[Deployment, int, str], float]


def _offsets_json(fit: PlanCalibration, model: Model, device: Device, d: Deployment, mode: str, batch: int,
                  stretch_of: StretchOf) -> dict:
    stretch = stretch_of(d, batch, mode)
    return {**{quantity.lower(): {"factor": fit.factor(quantity, model, device, d, mode, float(batch), stretch),
                                  "levels": fit.levels(quantity, model, device, d, mode, float(batch), stretch)}
               for quantity in QUANTITIES}, "prefill_stretch": stretch}


def _offsets_line(fit: PlanCalibration, model: Model, device: Device, d: Deployment, mode: str, batch: int,
                  stretch_of: StretchOf, what: str) -> str:
    """The offsets' factors of a layout at its batch and its step's prefill stretch, and the levels of
    tables/derived/serving_estimate_offsets they come from."""
    parts, stretch = [], stretch_of(d, batch, mode)
    for quantity in QUANTITIES:
        levels = fit.levels(quantity, model, device, d, mode, float(batch), stretch)
        shown = ", ".join(f"{level} x{factor:.2f}" for level, factor in levels.items())
        parts.append(f"{quantity} x{fit.factor(quantity, model, device, d, mode, float(batch), stretch):.2f}"
                     + (f" ({shown})" if levels else f" (no measured {mode} point of the engine and model)"))
    return (f"  offsets of {what} at {batch:,} in flight, prefill stretching its step x{stretch:.2f} "
            f"(tables/{OFFSETS_TABLE}): {'; '.join(parts)}")


def _row(p: PlanPoint, model: Model, device: Device, workload: Workload, ttft_key: str = "ttft_bound_ms",
         fit: PlanCalibration | None = None, stretch_of: StretchOf | None = None) -> dict:
    d = p.deployment
    row = {"devices": d.devices, "layout": d.label, "deployment": asdict(d), "batch": p.batch,
           "tpot_ms": p.tpot * 1e3, ttft_key: p.ttft * 1e3,
           "tokens_per_second_per_device": p.tokens_per_second_per_device,
           "tokens_per_second_per_user": p.tokens_per_second_per_user,
           **_memory_json(model, d, p.batch, workload, device)}
    return row if fit is None else {**row, "offsets": _offsets_json(fit, model, device, d, "agg", p.batch, stretch_of)}


def _stretch_of(fit: PlanCalibration | None, model: Model, device: Device, precision: str, serving,
                workload: Workload) -> StretchOf:
    """The prefill stretch of a layout's step at a batch in a mode, as the plan priced it."""
    def stretch_of(d: Deployment, batch: int, mode: str) -> float:
        return planned_stretch(fit, model, d, device, precision, serving, workload.decode_context, batch,
                               workload.input_tokens, workload.output_tokens, mode)
    return stretch_of


def _costs_json(costs: LayoutCosts) -> dict:
    return {"estimate": costs.estimate, "ms_per_output_token": {k: v / MS for k, v in costs.costs.items()},
            "share_of_tpot": {k: v / costs.tpot for k, v in costs.costs.items()}}


def _costs_line(costs: LayoutCosts, what: str = "the first") -> str:
    parts = ", ".join(f"{k} {v / MS:.1f} ({v / costs.tpot:.0%})" for k, v in costs.costs.items())
    return f"  costs of {what} ({costs.estimate} estimate, ms per output token): {parts}"


def _line(p: PlanPoint, memory: str) -> str:
    return (f"  {p.deployment.devices:>7}  {p.deployment.label:<20}{p.batch:>7}{p.tpot * 1e3:>9.1f} ms"
            f"{p.ttft * 1e3:>9.1f} ms{p.tokens_per_second_per_device:>13,.0f}{p.tokens_per_second_per_user:>12,.1f}"
            f"{memory:>16}")


def _band(band: HeldOutError | None, mode: str = "agg") -> str:
    if band is None:
        return f"no {mode} point held out"
    return (f"median error {band.median:.0%}, measured {band.low:.2f}x to {band.high:.2f}x the estimate at 80% "
            f"of {band.points:,} {mode} points")


def _scheme(band: HeldOutError | None) -> str:
    return "grouped 5-fold" if band is None else band.scheme


def _band_json(band: HeldOutError | None) -> dict | None:
    if band is None:
        return None
    return {"points": band.points, "median_error": band.median, "measured_over_estimate_p10": band.low,
            "measured_over_estimate_p90": band.high}


def _fit_json(fit: PlanCalibration, model: Model) -> dict:
    """The calibration an answer used: its constants, offsets and the held-out bands of the estimate it printed."""
    c = fit.calibrated
    (tpot, ttft), (disagg_tpot, disagg_ttft) = fit.bands("agg", model), fit.bands("disagg", model)
    return {"evidence": "derived from reported data", "engine": c.engine, "points": c.points,
            "constants": asdict(c.constants), "constants_at_bound": at_bound_json(c),
            "offsets": f"tables/{OFFSETS_TABLE}.csv",
            "held_out_agg": _scheme(tpot), "held_out_disagg": _scheme(disagg_tpot),
            "held_out_tpot": _band_json(tpot), "held_out_ttft": _band_json(ttft),
            "held_out_disagg_tpot": _band_json(disagg_tpot), "held_out_disagg_ttft": _band_json(disagg_ttft)}


def _print_table(say: Callable[[str], None], points: list[PlanPoint], ttft_header: str,
                 memory: Callable[[PlanPoint], str]) -> None:
    say(f"  {'devices':>7}  {'layout':<20}{'batch':>7}{'TPOT':>12}{ttft_header:>12}{'tok/s/device':>13}"
          f"{'tok/s/user':>12}{'mem/GPU':>16}")
    for p in points:
        say(_line(p, memory(p)))


def run(args: argparse.Namespace) -> int:
    """Search every layout and batch, print the best within the targets (or the closest), and the frontier's size;
    with --engine, by the engine's calibrated estimate, the datasheet estimate's best beside it."""
    catalog, model, device, precision = request.model_on_device(args)
    if args.gpus > MAX_PLAN_DEVICES:
        raise PlanError(f"--gpus {args.gpus}: at most {MAX_PLAN_DEVICES} devices are searched")
    serving = load_serving_inputs(catalog)
    workload = workload_of(args)
    try:
        fit = None if args.engine is None else read_plan_calibration(catalog, args.engine)
    except NotCalibrated as error:
        raise PlanError(f"--engine {args.engine}: {error}") from None
    if args.mode == "both":
        return _run_both(args, catalog, model, device, precision, serving, workload, fit)
    say = None if args.json else print
    answer = (_run_disagg if args.mode == "disagg" else _run_agg)(args, catalog, model, device, precision, serving,
                                                                  workload, fit, say)
    if args.json:
        print(json.dumps(answer, indent=2, allow_nan=False))
    return 0


def _head(args: argparse.Namespace, model: Model, device: Device, fit: PlanCalibration | None, mode: str,
          basis: str) -> dict:
    """What every answer's JSON begins with, whatever the mode."""
    return {"command": "plan", "mode": mode, "evidence": "derived" if fit is None else "derived from reported data",
            "model": model.id, "device": device.id, "gpus": args.gpus, "isl": args.isl, "osl": args.osl,
            "tpot_max_ms": args.tpot_max, "ttft_max_ms": args.ttft_max, "basis": basis}


def _targets(args: argparse.Namespace) -> str:
    return f"TPOT <= {args.tpot_max:g} ms" + ("" if args.ttft_max is None else f", TTFT <= {args.ttft_max:g} ms")


def _evidence(fit: PlanCalibration | None) -> str:
    return "all values derived" if fit is None else "derived from reported data (fitted constants)"


def _quiet(line: str) -> None:
    """Where the answer is JSON, its lines are not printed."""


def _run_agg(args, catalog: Catalog, model: Model, device: Device, precision: str, serving, workload: Workload,
             fit: PlanCalibration | None, say: Callable[[str], None] | None) -> dict:
    """Every layout on the same devices, prefill and decode together; ``say`` prints the answer's lines (None: JSON
    only). Returns the answer's JSON."""
    say = say or _quiet
    memory = serving.memory(args.engine)
    a = catalog.assumptions
    datasheet = plan_curves(catalog, model, device, precision, args.gpus, workload, args.engine, serving)
    curves = datasheet if fit is None else plan_curves(catalog, model, device, precision, args.gpus, workload,
                                                       args.engine, serving, fit)
    best, edge = best_within(curves, workload), frontier(curves)
    nearest = None if best else closest(curves)
    beside = None if fit is None else best_within(datasheet, workload)
    capacity = f"capacity at isl + osl under {memory.rule}"
    datasheet_basis = (f"TPOT: the step-time estimate at isl + osl / 2 (hbm_bandwidth_efficiency "
                       f"{serving.hbm_bandwidth_efficiency:g}, collectives included); TTFT: the lower bound of one request")
    basis = f"{datasheet_basis}; {capacity}" if fit is None else (
        f"TPOT and TTFT: the calibrated estimate of {memory.engine} (constants fitted on {fit.calibrated.points:,} "
        f"measured points, tables/{CONSTANTS_TABLE}) times its offsets for the model, device, layout and weight "
        f"format (tables/{OFFSETS_TABLE}) at isl + osl / 2 with b requests in flight; {capacity}")
    ttft_key, ttft_header = ("ttft_bound_ms", "TTFT bound") if fit is None else ("ttft_ms", "TTFT")

    def costs_of(p: PlanPoint | None, with_fit: PlanCalibration | None) -> LayoutCosts | None:
        return None if p is None else layout_costs(model, p.deployment, p.batch, workload, device, precision,
                                                   serving, with_fit)

    stretch_of = _stretch_of(fit, model, device, precision, serving, workload)

    def row(p: PlanPoint, key: str = ttft_key, with_fit: PlanCalibration | None = fit) -> dict:
        return _row(p, model, device, workload, key, with_fit, stretch_of)

    def memory_of(p: PlanPoint) -> str:
        return _memory(model, p.deployment, p.batch, workload, device)

    costs = costs_of(best[0] if best else nearest, fit)
    beside_costs = costs_of(beside[0] if beside else None, None)
    answer = {**_head(args, model, device, fit, "agg", basis), "engine": memory.engine,
              "weight_dtype": str(a.weight_dtype), "kv_dtype": a.kv_dtype, "layouts_searched": len(curves),
              "best": [row(p) for p in best[:SHOWN]],
              "closest": None if nearest is None else row(nearest),
              "frontier": [row(p) for p in edge]}
    if costs is not None:
        (answer["best"] or [answer["closest"]])[0]["costs"] = _costs_json(costs)
    if fit is not None:
        answer["calibration"] = _fit_json(fit, model)
        answer["datasheet"] = {"evidence": "derived", "basis": datasheet_basis,
                               "best": [row(p, "ttft_bound_ms", None) for p in beside[:SHOWN]]}
        if beside_costs is not None:
            answer["datasheet"]["best"][0]["costs"] = _costs_json(beside_costs)
    targets, evidence = _targets(args), _evidence(fit)
    say(f"{model.name} on up to {args.gpus} x {device.name}, isl {args.isl:,}, osl {args.osl:,}, {targets}: "
          f"{a.weight_dtype} weights, {a.kv_dtype} KV; {len(curves)} layouts searched at every batch they hold; "
          f"{evidence}")
    say(f"  {basis}")
    if fit is not None:
        tpot, ttft = fit.bands("agg", model)
        say(f"  held out ({_scheme(tpot)}): TPOT {_band(tpot)}; TTFT {_band(ttft)}")
        for line in at_bound_line(fit.calibrated.engine, at_bound_json(fit.calibrated)):
            say(line)
    if not curves:
        say(f"  no layout of up to {args.gpus} device(s) holds one request of {workload.longest_context:,.0f} tokens")
        return answer
    if best:
        _print_table(say, best[:SHOWN], ttft_header, memory_of)
    else:
        say(f"  no layout meets {targets}; the closest (lowest TPOT, one sequence):")
        _print_table(say, [nearest], ttft_header, memory_of)
    say("  mem/GPU: a device's weights and its share of the batch's KV at isl + osl, over its HBM (GB)")
    say(_costs_line(costs))
    if fit is not None:
        first = best[0] if best else nearest
        say(_offsets_line(fit, model, device, first.deployment, "agg", first.batch, stretch_of, "the first"))
    say(f"  frontier: {len(edge)} points no other beats on both tokens/s per device and per user (--json lists them)")
    if fit is not None:
        say(f"  beside it, the datasheet estimate (no fitted constant; {datasheet_basis}):")
        if beside:
            _print_table(say, beside[:SHOWN_BESIDE], "TTFT bound", memory_of)
            say(_costs_line(beside_costs, "its first"))
        else:
            say(f"    no layout meets {targets}")
    return answer


def _pools(p: DisaggPoint) -> str:
    return f"{p.prefill_instances} x {p.prefill.label} | {p.decode_instances} x {p.decode.label}"


def _disagg_row(p: DisaggPoint, ttft_key: str, memory: Callable[[DisaggPoint], dict]) -> dict:
    return {"devices": p.devices, "prefill": {"instances": p.prefill_instances, "layout": p.prefill.label,
                                              "deployment": asdict(p.prefill)},
            "decode": {"instances": p.decode_instances, "layout": p.decode.label, "deployment": asdict(p.decode),
                       **memory(p)},
            "batch": p.batch, "tpot_ms": p.tpot * 1e3, ttft_key: p.ttft * 1e3,
            "tokens_per_second_per_device": p.tokens_per_second_per_device,
            "tokens_per_second_per_user": p.tokens_per_second_per_user}


def _print_disagg(say: Callable[[str], None], points: list[DisaggPoint], ttft_header: str,
                  memory: Callable[[DisaggPoint], str]) -> None:
    say(f"  {'devices':>7}  {'prefill | decode instances':<34}{'batch':>7}{'TPOT':>12}{ttft_header:>12}"
          f"{'tok/s/device':>13}{'tok/s/user':>12}{'decode mem/GPU':>16}")
    for p in points:
        say(f"  {p.devices:>7}  {_pools(p):<34}{p.batch:>7}{p.tpot * 1e3:>9.1f} ms{p.ttft * 1e3:>9.1f} ms"
              f"{p.tokens_per_second_per_device:>13,.0f}{p.tokens_per_second_per_user:>12,.1f}{memory(p):>16}")


def _run_disagg(args, catalog: Catalog, model: Model, device: Device, precision: str, serving, workload: Workload,
                fit: PlanCalibration | None, say: Callable[[str], None] | None) -> dict:
    """Prefill and decode pools on up to --gpus devices (kvwall.plan.disagg), best first; with --engine by the
    calibrated estimate, the datasheet estimate's best beside it. ``say`` prints the answer's lines (None: JSON
    only). Returns the answer's JSON."""
    say = say or _quiet
    def best(with_fit):
        decodes = plan_curves(catalog, model, device, precision, args.gpus, workload, args.engine, serving, with_fit,
                              "disagg")
        prefills = prefill_layouts(catalog, model, device, precision, args.gpus, workload, args.engine, serving, with_fit)
        return disagg_best(prefills, decodes, workload, args.gpus)
    found = best(fit)
    beside = None if fit is None else best(None)
    datasheet_basis = ("TPOT: the decode pool's step-time estimate at isl + osl / 2; TTFT: the lower bound of one "
                       "prompt on a prefill replica, which it keeps busy as long")
    basis = datasheet_basis if fit is None else (
        f"TPOT and TTFT: the calibrated estimate of {fit.calibrated.engine} as disagg points (constants fitted on "
        f"{fit.calibrated.points:,} measured points, times the offsets of tables/{OFFSETS_TABLE}): the decode pool's "
        "step without prefills, a prefill replica's fixed cost and one prompt")
    ttft_key, ttft_header = ("ttft_bound_ms", "TTFT bound") if fit is None else ("ttft_ms", "TTFT")
    targets = _targets(args)
    stretch_of = _stretch_of(fit, model, device, precision, serving, workload)
    costs = None if not found else layout_costs(model, found[0].decode, found[0].batch, workload, device, precision,
                                                serving, fit, "disagg")

    def memory_json(p: DisaggPoint) -> dict:
        return _memory_json(model, p.decode, p.batch, workload, device)

    def memory_of(p: DisaggPoint) -> str:
        return _memory(model, p.decode, p.batch, workload, device)

    answer = {**_head(args, model, device, fit, "disagg", basis),
              "best": [_disagg_row(p, ttft_key, memory_json) for p in found[:SHOWN]]}
    if fit is not None:
        for p, row in zip(found, answer["best"]):
            row["prefill"]["offsets"] = _offsets_json(fit, model, device, p.prefill, "disagg", 1, stretch_of)
            row["decode"]["offsets"] = _offsets_json(fit, model, device, p.decode, "disagg", p.batch, stretch_of)
    if costs is not None:
        answer["best"][0]["decode"]["costs"] = _costs_json(costs)
    if fit is not None:
        answer["calibration"] = _fit_json(fit, model)
        answer["datasheet"] = {"evidence": "derived", "basis": datasheet_basis,
                               "best": [_disagg_row(p, "ttft_bound_ms", memory_json) for p in beside[:SHOWN]]}
    say(f"{model.name}, disaggregated, on up to {args.gpus} x {device.name}, isl {args.isl:,}, osl {args.osl:,}, "
          f"{targets}: prefill and decode pools, tokens/s per device over both; "
          f"{_evidence(fit)}")
    say(f"  {basis}; queueing and the KV's transfer between the pools not priced")
    if fit is not None:
        tpot, ttft = fit.bands("disagg", model)
        say(f"  held out ({_scheme(tpot)}): TPOT {_band(tpot, 'disagg')}; TTFT {_band(ttft, 'disagg')}")
        for line in at_bound_line(fit.calibrated.engine, at_bound_json(fit.calibrated)):
            say(line)
    if found:
        _print_disagg(say, found[:SHOWN], ttft_header, memory_of)
        say("  decode mem/GPU: a decode device's weights and its share of the batch's KV at isl + osl, over its HBM (GB)")
        say(_costs_line(costs, "the first's decode pool"))
        if fit is not None:
            say(_offsets_line(fit, model, device, found[0].decode, "disagg", found[0].batch,
                              stretch_of, "the first's decode pool"))
    else:
        say(f"  no pair of pools on up to {args.gpus} device(s) meets {targets}")
    if fit is not None:
        say("  beside it, the datasheet estimate (no fitted constant):")
        if beside:
            _print_disagg(say, beside[:SHOWN_BESIDE], "TTFT bound", memory_of)
        else:
            say(f"    no pair of pools meets {targets}")
    return answer


def winner(agg: dict, disagg: dict) -> dict:
    """Which mode serves more tokens per second per device at the targets: each mode's first within them (none where
    it meets none), and the mode whose first serves more (None where neither meets them; agg on a tie to 9
    significant digits, as it needs no transfer between pools)."""
    rates = {mode: answer["best"][0]["tokens_per_second_per_device"] if answer["best"] else None
             for mode, answer in (("agg", agg), ("disagg", disagg))}
    met = {mode: rate for mode, rate in rates.items() if rate is not None}
    best = None if not met else max(met, key=lambda mode: (float(f"{met[mode]:.9g}"), mode == "agg"))
    return {"tokens_per_second_per_device": rates, "mode": best,
            "ratio": None if len(met) < 2 else met[best] / min(met.values())}


def _run_both(args, catalog: Catalog, model: Model, device: Device, precision: str, serving, workload: Workload,
              fit: PlanCalibration | None) -> int:
    """The agg and the disagg answers, each as its own mode gives it, and which serves more per device."""
    say = None if args.json else print
    agg = _run_agg(args, catalog, model, device, precision, serving, workload, fit, say)
    if say:
        say("")
    disagg = _run_disagg(args, catalog, model, device, precision, serving, workload, fit, say)
    won = winner(agg, disagg)
    if args.json:
        answer = {**_head(args, model, device, fit, "both", agg["basis"]), "agg": agg, "disagg": disagg, "winner": won}
        del answer["basis"]
        print(json.dumps(answer, indent=2, allow_nan=False))
        return 0
    rates = won["tokens_per_second_per_device"]
    shown = ", ".join(f"{mode} {'none meets the targets' if rate is None else f'{rate:,.0f}'}"
                      for mode, rate in rates.items())
    estimate = "the datasheet estimate, which prices no prefill in agg" if fit is None else \
        f"the calibrated estimate of {fit.calibrated.engine}, which prices prefill in both"
    print("")
    if won["mode"] is None:
        print(f"both modes: neither meets {_targets(args)} on up to {args.gpus} device(s)")
    else:
        ratio = "" if won["ratio"] is None else f", {won['ratio']:.2f}x the other"
        print(f"both modes, tok/s per device of each first at {_targets(args)} ({estimate}): {shown}; "
              f"{won['mode']} serves more{ratio}")
    return 0


def register(subparsers) -> None:
    """Add `kvwall plan` to the command's subparsers."""
    p = subparsers.add_parser(
        "plan", parents=[common()], help="the best deployments of a model on up to N devices under a latency target",
        description="Every layout (TP x PP x DP, experts over EP) of a model on 1 to N devices that the engines run, "
        "at every batch it holds at the longest context of a request: the ones whose TPOT estimate meets --tpot-max "
        "(and whose TTFT bound meets --ttft-max), most tokens per second per device first, and the frontier of "
        "tokens/s per device against tokens/s per user. Where none meets the targets, the closest is shown. With "
        "--engine, TPOT and TTFT are that engine's calibrated estimate (the constants and held-out error band of the "
        "validation tables, tables/derived/serving_engine_constants and serving_estimate_error), the datasheet "
        "estimate's answer beside it.")
    model_option(p)
    p.add_argument("--device", required=True, help="device id of config/devices.yaml")
    p.add_argument("--gpus", type=_positive("--gpus", int), required=True, metavar="N",
                   help=f"devices the deployment may use, at most {MAX_PLAN_DEVICES}; every count from 1 to N is searched")
    p.add_argument("--isl", type=_positive("--isl", int), required=True, metavar="TOKENS", help="prompt tokens per request")
    p.add_argument("--osl", type=_positive("--osl", int), required=True, metavar="TOKENS", help="output tokens per request")
    p.add_argument("--tpot-max", type=_positive("--tpot-max", float), required=True, metavar="MS",
                   help="the longest time per output token a user may see, in milliseconds")
    p.add_argument("--ttft-max", type=_positive("--ttft-max", float), metavar="MS",
                   help="the longest time to first token, in milliseconds (checked against its lower bound)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--compute-precision", metavar="PRECISION",
                   help="dense tensor rate the step time uses: bf16, fp8 (default: compute_precision of the assumptions)")
    engine_option(p)
    p.add_argument("--mode", choices=("agg", "disagg", "both"), default="agg",
                   help="agg: prefill and decode on the same devices; disagg: a prefill pool and a decode pool, their "
                        "instances sized from the devices; both: the two answers one after the other and which "
                        "serves more tokens per second per device at the targets (--json: agg, disagg and winner) "
                        "(default: agg)")
    p.set_defaults(func=run)
