"""`kvwall fit`: the deployments of a model on a device that hold a batch at a context, per device count the layout
with the lowest step-time bound: its parser and its printer."""

from __future__ import annotations

import argparse

from kvwall.cli import calibrated, request, serving, show
from kvwall.cli.options import CONTEXT_HELP, common, engine_option, format_option, model_option, positive_int
from kvwall.formats import tokens
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.model.fitting import MAX_DEVICES


def register(subparsers) -> None:
    """Add `kvwall fit` to the command's subparsers."""
    p = subparsers.add_parser(
        "fit", parents=[common()], help="deployments of a model on a device that hold a batch at a context",
        description="The deployments (devices = TP x PP x DP, experts over EP) of a model on a device that keep every "
        "sequence of the batch resident at the context: for each device count up to 64, fewest first, the layout "
        "with the lowest step-time bound, with its per-device regime, bound and estimate.")
    model_option(p)
    p.add_argument("--device", required=True, help="device id of config/devices.yaml")
    p.add_argument("--batch", type=positive_int, required=True, help="sequences to keep resident at once")
    p.add_argument("--context", required=True, help=CONTEXT_HELP)
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--compute-precision", metavar="PRECISION",
                   help="dense tensor rate the step-time bound uses: bf16, fp8 (default: compute_precision of the assumptions)")
    engine_option(p)
    calibrated.length_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The deployments of a model on a device that hold the batch at the context: per device count, fewest first, the
    layout with the lowest step-time bound."""
    catalog, model, device, precision = request.model_on_device(args)
    context, _ = request.context_of(args, catalog)
    a = catalog.assumptions
    inputs = load_serving_inputs(catalog)
    found = serving.fitting_deployments(model, device, args.batch, context, inputs, precision, a.weight_dtype,
                                        a.kv_dtype, args.engine)
    request.warn_beyond_context(model, context, args.context, catalog)
    estimates = [calibrated.calibrated_answer(args, catalog, model, device, f.deployment, precision) for f in found]
    linked = device.scale_up is not None
    alone = "" if linked else (f"{device.name} has no scale-up link in {inputs.file_of(device)}: only one device is "
                               "tried")
    if args.json:
        show.as_json({"command": "fit", "model": model.id, "device": device.id, "weight_dtype": str(a.weight_dtype),
                      "kv_dtype": a.kv_dtype, "engine": inputs.memory(args.engine).engine, "scale_up_link": linked,
                      "deployments": [{"deployment": f.deployment, "regime": f.regime, **f.numbers(),
                                       "calibrated_estimate": e} for f, e in zip(found, estimates)]})
        return 0
    print(f"{model.name} on {device.name}, batch {args.batch}, context {tokens(context)}, {a.weight_dtype} weights, "
          f"{a.kv_dtype} KV, {inputs.memory(args.engine).rule}: per device count that holds every sequence, fewest "
          "first, the layout with the lowest step-time bound; all values derived")
    extrapolation = request.paper_extrapolation(catalog, model, context)
    if extrapolation:
        print(extrapolation)
    if alone:
        print(f"  {alone}.")
    if not found:
        print(f"  none of up to {MAX_DEVICES if linked else 1} device{'s' if linked else ''} holds the batch")
        return 0
    print(f"  {'devices':>7}{'domains':>9}  {'layout':<20}{'weights/dev':>12}{'KV/dev':>11}  {'regime':<15}{'bound':>9}"
          f"{'estimate':>10}")
    for f in found:
        print(f"  {f.deployment.devices:>7}{f.scale_up_domains.value:>9g}  {f.deployment.label:<20}"
              f"{f.weight_bytes_per_device.value / 1e9:>9.1f} GB{f.kv_bytes_per_device.value / 1e9:>8.1f} GB  "
              f"{f.regime:<15}{f.step_time_bound.value * 1e3:>6.1f} ms{f.step_time_estimate.value * 1e3:>7.1f} ms")
    print("  domains: the scale-up domains the devices fill (assumption fabric); collectives between them go at the "
          "scale-out rate, in the estimate only")
    for line in calibrated.calibrated_table([f"{f.deployment.devices} x {f.deployment.label}" for f in found], estimates):
        print(line)
    return 0
