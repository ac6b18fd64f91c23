"""`kvwall plan`: how to serve a model on up to N devices under a TPOT (and TTFT) target (kvwall.plan.search).

The time per output token is the step-time estimate of each layout (kvwall.model.step_time.device_step: the memory
time at the stated bandwidth efficiency, max'ed with the compute time, plus every collective), TTFT the lower bound
of one request's prompt (kvwall.model.first_token): both derived from the catalogue's specs and the stated
assumptions, no fitted constant.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Callable

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.specs import Device, Model
from kvwall.model.sharding import resident_weight_bytes_per_device
from kvwall.plan.curves import plan_curves
from kvwall.plan.search import PlanPoint, Workload, best_within, closest, frontier

#: The most devices a plan may span, and the layouts it prints.
MAX_PLAN_DEVICES = 128
SHOWN = 5


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


def _row(p: PlanPoint, model: Model) -> dict:
    d = p.deployment
    return {"devices": d.devices, "layout": d.label, "deployment": asdict(d), "batch": p.batch,
            "tpot_ms": p.tpot * 1e3, "ttft_bound_ms": p.ttft_bound * 1e3,
            "tokens_per_second_per_device": p.tokens_per_second_per_device,
            "tokens_per_second_per_user": p.tokens_per_second_per_user,
            "weight_gb_per_device": resident_weight_bytes_per_device(model, d) / 1e9}


def _line(p: PlanPoint) -> str:
    return (f"  {p.deployment.devices:>7}  {p.deployment.label:<20}{p.batch:>7}{p.tpot * 1e3:>9.1f} ms"
            f"{p.ttft_bound * 1e3:>9.1f} ms{p.tokens_per_second_per_device:>13,.0f}{p.tokens_per_second_per_user:>12,.1f}")


def run(args: argparse.Namespace, model_on_device: Callable[[argparse.Namespace], tuple[Catalog, Model, Device, str]]) -> int:
    """Search every layout and batch, print the best within the targets (or the closest), and the frontier's size."""
    catalog, model, device, precision = model_on_device(args)
    if args.gpus > MAX_PLAN_DEVICES:
        raise PlanError(f"--gpus {args.gpus}: at most {MAX_PLAN_DEVICES} devices are searched")
    serving = load_serving_inputs(catalog)
    memory = serving.memory(args.engine)
    a = catalog.assumptions
    workload = workload_of(args)
    curves = plan_curves(catalog, model, device, precision, args.gpus, workload, args.engine, serving)
    best, edge = best_within(curves, workload), frontier(curves)
    nearest = None if best else closest(curves)
    basis = (f"TPOT: the step-time estimate at isl + osl / 2 (hbm_bandwidth_efficiency {serving.hbm_bandwidth_efficiency:g}, "
             f"collectives included); TTFT: the lower bound of one request; capacity at isl + osl under {memory.rule}")
    if args.json:
        print(json.dumps({
            "command": "plan", "evidence": "derived", "model": model.id, "device": device.id, "engine": memory.engine,
            "weight_dtype": str(a.weight_dtype), "kv_dtype": a.kv_dtype, "gpus": args.gpus,
            "isl": args.isl, "osl": args.osl, "tpot_max_ms": args.tpot_max, "ttft_max_ms": args.ttft_max,
            "basis": basis, "layouts_searched": len(curves),
            "best": [_row(p, model) for p in best[:SHOWN]],
            "closest": None if nearest is None else _row(nearest, model),
            "frontier": [_row(p, model) for p in edge]}, indent=2, allow_nan=False))
        return 0
    targets = f"TPOT <= {args.tpot_max:g} ms" + ("" if args.ttft_max is None else f", TTFT <= {args.ttft_max:g} ms")
    print(f"{model.name} on up to {args.gpus} x {device.name}, isl {args.isl:,}, osl {args.osl:,}, {targets}: "
          f"{a.weight_dtype} weights, {a.kv_dtype} KV; {len(curves)} layouts searched at every batch they hold; "
          "all values derived")
    print(f"  {basis}")
    header = (f"  {'devices':>7}  {'layout':<20}{'batch':>7}{'TPOT':>12}{'TTFT bound':>12}{'tok/s/device':>13}"
              f"{'tok/s/user':>12}")
    if not curves:
        print(f"  no layout of up to {args.gpus} device(s) holds one request of {workload.longest_context:,.0f} tokens")
        return 0
    if best:
        print(header)
        for p in best[:SHOWN]:
            print(_line(p))
    else:
        print(f"  no layout meets {targets}; the closest (lowest TPOT, one sequence):")
        print(header)
        print(_line(nearest))
    print(f"  frontier: {len(edge)} points no other beats on both tokens/s per device and per user (--json lists them)")
    return 0


def register(subparsers, parents: list, model_on_device, format_option: Callable[[str], dict],
             engine_option: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add `kvwall plan` to the command's subparsers."""
    p = subparsers.add_parser(
        "plan", parents=parents, help="the best deployments of a model on up to N devices under a latency target",
        description="Every layout (TP x PP x DP, experts over EP) of a model on 1 to N devices that the engines run, "
        "at every batch it holds at the longest context of a request: the ones whose TPOT estimate meets --tpot-max "
        "(and whose TTFT bound meets --ttft-max), most tokens per second per device first, and the frontier of "
        "tokens/s per device against tokens/s per user. Where none meets the targets, the closest is shown.")
    p.add_argument("--model", required=True, help="model id of config/models.yaml")
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
    p.set_defaults(func=lambda args: run(args, model_on_device))
