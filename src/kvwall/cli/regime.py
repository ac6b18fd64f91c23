"""`kvwall regime`: the regime of a model deployed on devices at (b, s), every number behind it per device, the
paper's one-device frame under its own name (SoK sections 3.1-3.5) and the design rules of section 6.2: its parser
and its printer."""

from __future__ import annotations

import argparse

from kvwall.cli import advice, answers, calibrated, request, serving, show
from kvwall.cli.options import (CONTEXT_HELP, DEVICE_HELP, common, deployment_options, engine_option, format_option,
                                model_option, positive_int)
from kvwall.formats import times, tokens
from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.inputs.specs import Device


def register(subparsers) -> None:
    """Add `kvwall regime` to the command's subparsers."""
    p = subparsers.add_parser(
        "regime", parents=[common()], help="which regime, the numbers behind it, and what to do",
        description="The regime of a model deployed on one or more devices at batch b and context s (weight-bound, "
        "kv-bound or capacity-bound, SoK section 3.5, compute-bound where the FLOPs outlast the bytes, or does not "
        "fit), every number behind it per device (weights per part, KV, capacity under the engine's memory rule, "
        "s*(b), s_cap, step-time bound and estimate, collectives, TTFT, speedups of narrower formats); then the "
        "paper's one-device frame under its own name (bytes per step, AI against the ridge, bytes-only S(c)); and "
        "which of the eight design rules of section 6.2 apply.")
    model_option(p)
    p.add_argument("--device", required=True, help=DEVICE_HELP)
    p.add_argument("--batch", type=positive_int, required=True, help="sequences decoded together")
    p.add_argument("--context", required=True, help=CONTEXT_HELP)
    p.add_argument("--placement", choices=("striped", "pinned"), help="KV page placement (default: the evaluation's)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--compute-precision", metavar="PRECISION",
                   help="dense tensor rate the ridge and step time use, as config/devices.yaml names it: bf16, fp8 "
                   "(default: compute_precision of the assumptions)")
    deployment_options(p)
    engine_option(p)
    calibrated.length_options(p)
    p.set_defaults(func=run)


_POINT_LABELS = {
    "context": "context s",
    "batch": "batch b",
    "weight_bytes": "weights (resident)",
    "step_weight_bytes": "weight bytes per step",
    "kv_bytes_per_token": "KV per token",
    "kv_bytes_per_token_beyond_window": "KV per token beyond window",
    "step_kv_bytes": "KV bytes per step",
    "memory_needed": "memory needed",
    "hbm_capacity": "HBM capacity",
    "devices_needed": "devices needed",
    "traffic_crossover": "traffic crossover s*(b)",
    "capacity_crossover": "capacity crossover s_cap",
    "batch_capacity_crossover": "s_cap(b) for the batch",
    "arithmetic_intensity": "arithmetic intensity AI",
    "ridge_point": "ridge point I*",
    "striped_bandwidth": "bandwidth, striped pages",
    "pinned_bandwidth": "bandwidth, pinned pages",
    "bandwidth": "bandwidth used",
    "step_time": "step time",
    "speedup_int4": "bytes-only S(c), 4-bit KV",
    "speedup_int2": "bytes-only S(c), 2-bit KV",
}


def _headline(answer: serving.DeviceAnswer, device: Device) -> str:
    """The deployment's answer in one line: its regime and its time per output token, or why it does not fit."""
    if not answer.fits:
        return f"Regime: {answer.reason} (derived)"
    runs = answer.running_batch.value
    if runs == 0:
        return (f"Regime: {answer.regime} per device (derived): not one sequence fits beside the weights "
                f"({show.quantity(answer.kv_memory_per_device)} of KV memory per device); the step times below are of "
                "one sequence, for scale")
    at = f" at the {runs:g} sequences that run" if runs < answer.batch_asked else ""
    schedule = (f", {answer.microbatches.value:g} microbatches in flight through {answer.deployment.pipeline_parallel} "
                "stages" if answer.microbatches is not None else "")
    return (f"Regime: {answer.regime} per device{at} (derived); time per output token at least "
            f"{show.quantity(answer.step_time_bound)}, estimate {show.quantity(answer.step_time_estimate)}; at most "
            f"{show.quantity(answer.token_rate_bound)}{schedule}")


def run(args: argparse.Namespace) -> int:
    """The regime of a model on a device at (b, s) under a deployment, the numbers behind it, the paper's one-device
    frame under its own name, and the design rules (SoK section 6.2)."""
    catalog, model, device, precision = request.model_on_device(args)
    context, context_basis = request.context_of(args, catalog)
    placement = args.placement or catalog.evaluation.placement
    point = answers.operating_point(model, device, args.batch, context, catalog.assumptions, placement, context_basis)
    deployment = request.deployment_of(args, model, catalog)
    inputs = load_serving_inputs(catalog)
    per_device = serving.device_answer(model, device, deployment, args.batch, context, inputs, precision, args.engine)
    a = catalog.assumptions
    smallest = serving.smallest_fitting(model, device, args.batch, context, inputs, precision, a.weight_dtype,
                                        a.kv_dtype, args.engine)
    rules = advice.design_rules(point, per_device, smallest)
    request.warn_beyond_context(model, context, args.context, catalog)
    estimate = calibrated.calibrated_answer(args, catalog, model, device, deployment, precision)
    if args.json:
        show.as_json({"command": "regime", "model": model.id, "device": device.id, "engine": per_device.engine.engine,
                      "calibrated_estimate": estimate,
                      "deployment": deployment, "regime": per_device.regime, "reason": per_device.reason,
                      "per_device": per_device.numbers(), "compute_bound": per_device.compute_bound,
                      "kv_format_speedups": per_device.kv_format_speedups,
                      "weight_format_speedups": per_device.weight_format_speedups,
                      "compute_bound_formats": per_device.compute_bound_formats,
                      "smallest_fitting_deployment": smallest,
                      "paper_frame": {"placement": placement, "regime": point.regime, "numbers": point.numbers()},
                      "design_rules": rules})
        return 0
    d = deployment
    layout = f"{d.devices} x {device.name}" + (f", {d.label}" if d.devices > 1 else "")
    print(f"{model.name} on {layout}, batch {args.batch}, context {tokens(context)}: {d.weight_format} weights, "
          f"{d.kv_format} KV, {per_device.engine.name}'s memory rule")
    print(_headline(per_device, device))
    for line in calibrated.calibrated_lines(estimate):
        print(line)
    print()
    _print_device_answer(per_device, device, smallest, precision)
    print()
    ai, ridge = point.arithmetic_intensity.value, point.ridge_point.value
    roofline = f"{ridge / ai:.0f}x below the ridge" if ai < ridge else "above the ridge, compute-bound at"
    print(f"Paper frame (SoK sections 3.1-3.5: one device, every weight read whole at w_p, HBM - P w_p for KV, "
          f"bytes-only S(c); {placement} pages): regime {point.regime}; AI {ai:.1f} FLOP/B is {roofline} "
          f"{ridge:.0f} FLOP/B")
    extrapolation = request.paper_extrapolation(catalog, model, context)
    if extrapolation:
        print(extrapolation)
    if point.devices_needed.value > 1:
        print(f"  Capacity: {show.quantity(point.memory_needed)} of weights and KV against "
              f"{show.quantity(point.hbm_capacity)} per {device.name}: {point.devices_needed.value:g} devices' worth, "
              "sharded evenly (derived)")
    for name, q in point.numbers().items():
        print(show.line(_POINT_LABELS[name], q))
    print()
    print("Design rules (SoK section 6.2) on the deployment's answer; [x] applies here")
    for rule in rules:
        print(f"  [{'x' if rule.applies else ' '}] {rule.number}. {rule.statement}")
        print(f"       {rule.advice}")
    return 0


_DEVICE_LABELS = {
    "devices": "devices",
    "scale_up_domains": "scale-up domains spanned",
    "kv_heads_per_device": "KV heads per device",
    "kv_replication": "KV replication over TP",
    "weight_bytes_per_device": "weights per device (resident)",
    "step_weight_bytes_per_device": "weight bytes read per step",
    "active_params_per_token": "parameters per token",
    "experts_touched_per_layer": "experts touched per layer",
    "kv_bytes_per_device": "KV bytes per device",
    "kv_bytes_across_deployment": "KV across the deployment",
    "memory_needed_per_device": "memory needed per device",
    "hbm_capacity": "HBM capacity",
    "kv_memory_per_device": "KV memory per device",
    "devices_for_the_weights": "devices the weights need",
    "sequences_that_fit": "sequences that fit",
    "running_batch": "batch that runs",
    "microbatches": "microbatches in flight",
    "traffic_crossover_per_device": "s*(b) per device",
    "deployment_capacity_crossover": "s_cap per device",
    "memory_time": "memory time",
    "compute_time": "compute time",
    "collectives_time": "collectives time",
    "tensor_parallel_bytes": "TP bytes sent per step",
    "expert_parallel_bytes": "EP bytes sent per step",
    "pipeline_parallel_bytes": "PP bytes sent per step",
    "step_time_bound": "step time, lower bound",
    "step_time_estimate": "step time, estimate",
    "token_rate_bound": "token rate, from the bound",
    "token_rate_estimate": "token rate, from the estimate",
    "time_per_output_token_bound": "TPOT, from the bound",
    "time_per_output_token_estimate": "TPOT, from the estimate",
    "first_token_bound": "TTFT of one request, bound",
}


def _print_device_answer(answer: serving.DeviceAnswer, device, smallest: Deployment | None, precision: str) -> None:
    """The per-device section of `kvwall regime`: bytes, capacity, regime, the two step times and format speedups."""
    d = answer.deployment
    print(f"Per device of {d.label} ({d.devices} x {device.name}), {answer.engine.rule}:")
    for name, q in answer.numbers().items():
        if q is not None:
            print(show.line(_DEVICE_LABELS[name], q))
    if not answer.fits:
        print(f"  No step times: {answer.reason}.")
    elif answer.running_batch.value == 0:
        print("  Not one sequence fits beside the weights: the step times are those of one sequence, for scale.")
    if answer.compute_bound:
        print(f"  The step is compute-bound with {d.weight_format} weights and {d.kv_format} KV: its FLOPs over the "
              f"dense {precision} peak exceed its bytes over the bandwidth, so no narrower format shortens it.")
    elif answer.fits:
        print("  The step is memory-bound: its bytes over the bandwidth take longer than its FLOPs.")
    for kind, speedups in (("KV", answer.kv_format_speedups), ("weight", answer.weight_format_speedups)):
        if speedups:
            listed = ", ".join(f"{fmt} {times(2)(q.value)}" for fmt, q in speedups.items())
            print(f"  Speedup of a narrower {kind} format (step-time bound ratio; 1 where compute binds): {listed}")
    if answer.compute_bound_formats:
        print(f"  Compute binds the step with {', '.join(answer.compute_bound_formats)}: past that precision a "
              "narrower format saves nothing.")
    print(f"  Smallest deployment on {device.name} that holds the batch (fewest devices, then the lowest step-time "
          f"bound): {show.where(smallest)}" + ("" if smallest is None or smallest.devices == 1 else " devices"))
