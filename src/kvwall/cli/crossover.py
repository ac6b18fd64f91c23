"""`kvwall crossover`: the traffic crossover s*(b) per batch (SoK Table 4) and the capacity crossover s_cap(b) on
each device (section 3.4), in the paper's frame and per device of a deployment, and with --context each device's
bytes, regime and step times: its parser and its printer."""

from __future__ import annotations

import argparse

from kvwall.cli import answers, request, serving, show
from kvwall.cli.options import common, deployment_options, engine_option, format_option, model_option, positive_int
from kvwall.formats import tokens
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.inputs.specs import Device, Model
from kvwall.model.equations import CAPACITY_EQUATION, TRAFFIC_EQUATION, crossover_equation

#: The batch sizes of SoK Table 4, the default columns of `kvwall crossover`.
TABLE4_BATCHES = (1, 8, 32, 128, 256)


def register(subparsers) -> None:
    """Add `kvwall crossover` to the command's subparsers."""
    p = subparsers.add_parser(
        "crossover", parents=[common()], help="traffic crossover s*(b) and capacity crossover s_cap",
        description="The traffic crossover s*(b) = P w_p / (b 2 L n_kv d_h w_kv), the context above which a decode "
        "step reads more KV than weights (SoK Table 4), and the capacity crossover s_cap(b) on each device, the "
        "context at which a batch no longer fits beside the weights (section 3.4), per batch size; per device of a "
        "deployment (--devices --tp --pp --ep --dp) too, and with --context, each device's bytes, regime and step "
        "times at that context, as `regime` gives them.")
    model_option(p)
    p.add_argument("--device", nargs="+", help="device id(s) for s_cap (default: every device)")
    p.add_argument("--batch", type=positive_int, nargs="+", default=list(TABLE4_BATCHES),
                   help="batch size(s) (default: SoK Table 4's 1 8 32 128 256)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--context", help="a context (e.g. 128k, 1M): adds, per device and batch, the weight and KV bytes, "
                   "memory needed against HBM, regime, step-time bound and estimate, collectives time, sequences that "
                   "fit and the smallest deployment that holds the batch")
    deployment_options(p)
    engine_option(p)
    p.set_defaults(func=run)


def _caps(row, widths) -> str:
    """The s_cap(b) cells of one row, one per device."""
    return "".join(f"{'cannot load' if q.value is None else tokens(q.value):<{widths[d]}}"
                   for d, q in row.capacity_crossover.items())


def run(args: argparse.Namespace) -> int:
    """s*(b) per batch (SoK Table 4) and s_cap(b) on each device (SoK section 3.4), in the paper's frame and per
    device of the deployment."""
    catalog = request.catalog_of(args)
    model = request.pick(catalog.models, args.model, "model")
    catalog = request.with_formats(catalog, weight_dtype=request.weight_dtype(args, model),
                                   kv_dtype=request.kv_dtype(args.kv_dtype, model))
    devices = ([request.pick(catalog.devices, d, "device") for d in args.device] if args.device
               else list(catalog.devices.values()))
    rows = [answers.crossovers(model, devices, b, catalog.assumptions) for b in args.batch]
    a = catalog.assumptions
    deployment = request.deployment_of(args, model, catalog)
    inputs = load_serving_inputs(catalog)
    memory = inputs.memory(args.engine)
    per_device = [serving.device_crossovers(model, devices, deployment, b, inputs, args.engine) for b in args.batch]
    at_context = _answers_at_context(args, catalog, model, devices, deployment, inputs)
    if args.json:
        show.as_json({"command": "crossover", "model": model.id, "weight_dtype": str(a.weight_dtype),
                      "kv_dtype": a.kv_dtype, "engine": memory.engine, "deployment": deployment,
                      "per_device": per_device, "per_device_at_context": at_context, "paper_frame": rows})
        return 0
    widths = {d.id: max(14, len(d.name) + 8) for d in devices}
    header = f"{'b':>6}  {'s*(b)':<28}" + "".join(f"{'s_cap(b) ' + d.name:<{widths[d.id] + 3}}" for d in devices).rstrip()
    widths = {d: w + 3 for d, w in widths.items()}
    print(f"{model.name}, {a.weight_dtype} weights and {a.kv_dtype} KV cache; all values derived")
    print(f"Per device, {deployment.label} ({deployment.devices} devices), {memory.name}'s memory rule: s*(b) of a "
          f"device's weight and KV shares, s_cap(b) where b sequences (ceil(b / DP) per replica) fill its KV memory, "
          f"{memory.rule} (assumption)")
    print(header)
    for row in per_device:
        print(f"{row.batch.value:>6g}  {show.quantity(row.traffic_crossover):<28}{_caps(row, widths)}".rstrip())
    print("Paper frame (SoK section 3.4: one device, every weight at w_p, HBM - P w_p for KV)")
    print(f"  s*(b)    {crossover_equation(model, TRAFFIC_EQUATION)}")
    print(f"  s_cap(b) {crossover_equation(model, CAPACITY_EQUATION)}")
    print(header)
    for row in rows:
        print(f"{row.batch.value:>6g}  {show.quantity(row.traffic_crossover):<28}{_caps(row, widths)}".rstrip())
    if at_context is None:
        print("Add --context S for each device's bytes, regime, step times and the smallest deployment that holds b.")
    else:
        extrapolation = request.paper_extrapolation(catalog, model, request.context_of(args, catalog)[0])
        if extrapolation:
            print(extrapolation)
        _print_answers_at_context(at_context, deployment, args.context)
    return 0


def _answers_at_context(args: argparse.Namespace, catalog: Catalog, model: Model, devices: list[Device],
                        deployment: Deployment, inputs) -> list[serving.AnswerAtContext] | None:
    """Per device and batch at --context: the deployment's per-device answer; None without --context."""
    if args.context is None:
        return None
    context, _ = request.context_of(args, catalog)
    a = catalog.assumptions
    precisions = {device.id: request.precision_of(catalog, device) for device in devices}
    found = serving.answers_at_context(model, devices, deployment, args.batch, context, inputs, precisions,
                                       a.weight_dtype, a.kv_dtype, args.engine)
    request.warn_beyond_context(model, context, args.context, catalog)
    return found


def _ms(q: answers.Quantity | None) -> str:
    """A step time in milliseconds, or a dash where there is none."""
    return f"{'-':>10}" if q is None else f"{q.value * 1e3:>7.2f} ms"


def _print_answers_at_context(found: list[serving.AnswerAtContext], deployment: Deployment, context: str) -> None:
    """One line per device and batch: bytes, memory against HBM, regime, step times, collectives, fit, smallest."""
    print(f"At context {context}, per device of {deployment.label} ({deployment.devices} devices); step times at the "
          "batch that runs, the rest wait (`kvwall regime` gives every number with its basis)")
    width = max(len(f.device_name) for f in found)
    print(f"  {'device':<{width}}  {'b':>5}{'runs':>6}  {'weights':>9}{'KV':>10}{'needed / HBM':>18}  {'regime':<15}"
          f"{'bound':>10}{'estimate':>10}{'collect.':>10}{'fit':>6}  smallest that holds b")
    for f in found:
        n = f.numbers
        needed = f"{n['memory_needed_per_device'].value / 1e9:.1f} / {n['hbm_capacity'].value / 1e9:.0f} GB"
        print(f"  {f.device_name:<{width}}  {f.batch:>5}{n['running_batch'].value:>6g}  "
              f"{n['weight_bytes_per_device'].value / 1e9:>6.1f} GB"
              f"{n['kv_bytes_per_device'].value / 1e9:>7.1f} GB{needed:>18}  {f.regime:<15}"
              f"{_ms(n['step_time_bound'])}{_ms(n['step_time_estimate'])}{_ms(n['collectives_time'])}"
              f"{n['sequences_that_fit'].value:>6g}  {show.where(f.smallest_fitting_deployment)}")
    if any(f.reason is not None for f in found):
        print("  does not fit: the weights leave no KV memory on a device of the layout (no step times); "
              "`kvwall regime` says how many devices they need.")
    if any(f.reason is None and f.numbers["running_batch"].value == 0 for f in found):
        print("  runs 0: not one sequence fits beside the weights; its step times are those of one sequence, for scale.")
