"""The `kvwall` command: argument parsing and formatting; every number comes from kvwall.cli.answers and kvwall.cli.advice.

    kvwall footprint --model llama-3-70b --context 128k
    kvwall crossover --model llama-3-70b --batch 1 32
    kvwall regime --model llama-3-70b --device b200 --batch 32 --context 128k
    kvwall regime --model llama-3-70b --device h100-sxm --tp 4 --batch 32 --context 128k
    kvwall fit --model deepseek-v3 --device b200 --batch 64 --context 128k --weight-dtype native
    kvwall validate data/reported/serving-measurements.csv --output bounds.csv
    kvwall measure --quick
    kvwall template device model > my-hardware.yaml
    kvwall diff HEAD
    kvwall benchmark
    kvwall build --configfile mine.yaml --cores 4
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
from dataclasses import asdict, replace
from pathlib import Path

from kvwall.cli import advice, answers, benchmark, calibrated, catalogue, serving
from kvwall.cli.options import engine_option
from kvwall.cli.parser import OneLineParser
from kvwall.cli import build as build_command
from kvwall.cli import diff as diff_command
from kvwall.cli import plan as plan_command
from kvwall.cli import template as template_command
from kvwall.cli import validate as validate_command
from kvwall.inputs.catalog import Catalog
from kvwall.formats import thousands, times, tokens
from kvwall.inputs.deployment import Deployment, DeploymentError, checked_deployment, load_serving_inputs
from kvwall.inputs.loader import LARGEST, SpecError, load_catalog, load_user_specs
from kvwall.inputs.packaged import packaged_config_dir
from kvwall.inputs.plausibility import catalogue_findings
from kvwall.inputs.specs import Device, Model, WeightFormats
from kvwall.model.collectives import DomainError
from kvwall.model.fitting import MAX_DEVICES
from kvwall.model.equations import CAPACITY_EQUATION, TRAFFIC_EQUATION, crossover_equation
from kvwall.model.params import architecture_params
from kvwall.measure import command as measure_command
from kvwall.units import DTYPE_BYTES, UnitError, parse_tokens

#: The batch sizes of SoK Table 4, the default columns of `kvwall crossover`.
TABLE4_BATCHES = (1, 8, 32, 128, 256)
DEFAULT_CONFIG = Path("config")


class CommandError(Exception):
    """A mistake on the command line: printed as one line, exit status 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    if value > LARGEST["count"]:
        raise argparse.ArgumentTypeError(f"{text[:20]!r}{'...' if len(text) > 20 else ''} must be at most {LARGEST['count']:g}")
    return value


def _parameter_count(text: str) -> float:
    """A published parameter count (8.03e9): a whole number of at least 1 and at most LARGEST's count."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of parameters (examples: 8.03e9, 70553706496)") from None
    if not 1 <= value <= LARGEST["count"] or value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number from 1 to {LARGEST['count']:g}")
    return value


def _points(text: str) -> int:
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of points (examples: 1000000, 1e6)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


# ---- loading the catalogue -------------------------------------------------------------------------------------


def _catalog(args: argparse.Namespace) -> Catalog:
    """The config directory's catalogue plus the devices and models of every --specs file: --config DIR, else a
    checkout's ./config when present, else the catalogue shipped with kvwall."""
    config = args.config
    if config is None:
        config = DEFAULT_CONFIG if (DEFAULT_CONFIG / "devices.yaml").is_file() else packaged_config_dir()
    if not Path(config).is_dir():
        raise CommandError(f"--config {config}: not a directory")
    catalog = load_catalog(config)
    reference, files = catalog.devices, dict(catalog.files)
    for path in args.specs:
        before = set(catalog.models) | set(catalog.devices)
        catalog = load_user_specs(path, catalog)
        files.update({item: str(path) for item in (set(catalog.models) | set(catalog.devices)) - before})
    for finding in catalogue_findings(catalog.models, catalog.devices, reference, files, architecture_params):
        print(f"kvwall: {finding}", file=sys.stderr)
    if getattr(args, "hf_config", None):
        catalog, args.model = catalogue.with_hf_config(catalog, args.hf_config)
    elif hasattr(args, "hf_config") and not args.model:
        raise CommandError("give --model ID or --hf-config PATH")
    return catalog


def _with_formats(catalog: Catalog, **formats: str | None) -> Catalog:
    """The catalogue with the storage formats or compute precision chosen on the command line (None: as configured);
    assumptions, as the defaults in config/assumptions.yaml are."""
    chosen = {name: value for name, value in formats.items() if value}
    return replace(catalog, assumptions=replace(catalog.assumptions, **chosen)) if chosen else catalog


def _weight_dtype(args: argparse.Namespace, model) -> str | WeightFormats | None:
    """The --weight-dtype asked for, with ``native`` read as the formats the model's checkpoint ships its parts in."""
    if args.weight_dtype != "native":
        return args.weight_dtype
    if model.weight_format is None:
        raise CommandError(f"--weight-dtype native: {model.id} records no weight_format in config/models.yaml")
    return model.weight_format


def _kv_dtype(text: str | None, model) -> str | None:
    """A --kv-dtype, with ``native`` read as the KV format the model's checkpoint states (kv_cache_quant_algo)."""
    if text != "native":
        return text
    if model.kv_format is None:
        raise CommandError(f"--kv-dtype native: {model.id} records no kv_format (its checkpoint states no KV cache "
                           "format, kv_cache_quant_algo)")
    return model.kv_format


def _warn_beyond_context(model: Model, context: float, text: str) -> None:
    """One warning line where the context exceeds the model's maximum (max_context, max_position_embeddings)."""
    if model.max_context and context > model.max_context:
        print(f"kvwall: warning: --context {text}: {thousands(context)} tokens exceed the {thousands(model.max_context)} "
              f"{model.name} is configured for (max_context, max_position_embeddings); the answer extrapolates its "
              "architecture", file=sys.stderr)


def _deployment(args: argparse.Namespace, model, catalog: Catalog) -> Deployment:
    """The deployment of --devices --tp --pp --ep --dp (devices default to TP x PP x DP), checked against the model."""
    tp, pp, ep, dp = args.tp, args.pp, args.ep, args.dp
    devices = args.devices if args.devices is not None else tp * pp * dp
    a = catalog.assumptions
    try:
        return checked_deployment(model, Deployment(devices, tp, pp, ep, dp, a.weight_dtype, a.kv_dtype))
    except DeploymentError as err:
        raise CommandError(str(err)) from None


def _precision(catalog: Catalog, device) -> str:
    precision = catalog.assumptions.compute_precision
    if precision not in device.dense_flops:
        raise CommandError(f"compute precision {precision} (--compute-precision, or compute_precision of the "
                           f"assumptions): {device.name} lists no dense rate for it (it lists "
                           f"{', '.join(sorted(device.dense_flops)) or 'none: its datasheet states no dense rate'})")
    return precision


def _pick(collection, item_id: str, kind: str):
    by_hf_id = {item.hf_id: item for item in collection.values() if getattr(item, "hf_id", None)}
    if item_id in by_hf_id and item_id not in collection:
        return by_hf_id[item_id]
    if item_id not in collection:
        close = difflib.get_close_matches(item_id, list(collection), n=3)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise CommandError(f"unknown {kind} {item_id!r} ({hint}known {kind}s: {', '.join(sorted(collection))}; "
                           "add one with --specs FILE)")
    return collection[item_id]


def _context(args: argparse.Namespace, catalog: Catalog) -> tuple[float, str]:
    """The context in tokens, and how it was read (the size of a 'k' is an assumption)."""
    k = catalog.assumptions.tokens_per_k
    try:
        context = parse_tokens(args.context, k=k)
    except UnitError as err:
        raise CommandError(f"--context: {err}") from None
    if not context <= LARGEST["tokens"] or context != int(context):
        raise CommandError(f"--context {args.context[:20]!r}: must be a whole number of tokens, at most {LARGEST['tokens']:g}")
    return context, f"--context {args.context}, 1k = {k:g} tokens (assumption tokens_per_k)"


# ---- formatting ------------------------------------------------------------------------------------------------


def _show(q: answers.Quantity) -> str:
    """A quantity as the paper prints it: decimal GB, 13.4k tokens, TB/s, ms, 1.25x."""
    v, unit = q.value, q.unit
    if v is None:
        return "cannot load (weights exceed HBM)" if unit == "tokens" else "none"
    if unit == "tokens":
        return "cannot load (weights exceed HBM)" if v < 0 else f"{tokens(v)} ({thousands(v)} tokens)"
    if unit == "bytes/token":
        return f"{thousands(v)} B/token ({v / 1e6:.2f} MB)"
    if unit == "bytes":
        return f"{v / 1e9:,.1f} GB" if v >= 1e8 else f"{thousands(v)} B"
    if unit == "bytes/s":
        return f"{v / 1e12:.2f} TB/s"
    if unit == "FLOP/byte":
        return f"{v:.1f} FLOP/B"
    if unit == "s":
        return f"{v * 1e3:.1f} ms" if v >= 1e-3 or v == 0 else f"{v * 1e6:.1f} us"
    if unit == "ratio":
        return times(2)(v)
    if unit == "tokens/s":
        return f"{v:,.0f} tokens/s"
    return thousands(v) if v >= 1e6 else f"{v:g}"


def _line(label: str, q: answers.Quantity) -> str:
    return f"  {label:<30} {_show(q):<28} {q.evidence:<10} {q.basis}"


def _json(obj) -> None:
    try:
        print(json.dumps(obj, indent=2, default=lambda o: asdict(o), allow_nan=False))  # strict JSON: no Infinity, NaN
    except ValueError:
        raise CommandError("an answer is not a finite number and cannot be written as JSON") from None


# ---- subcommands -----------------------------------------------------------------------------------------------


def footprint(args: argparse.Namespace) -> int:
    """KV bytes per token, KV bytes of the batch at the context, and weights (SoK Eq. 1, section 1.2)."""
    catalog = _catalog(args)
    model = _pick(catalog.models, args.model, "model")
    catalog = _with_formats(catalog, weight_dtype=_weight_dtype(args, model))
    context, context_basis = _context(args, catalog)
    dtypes = [_kv_dtype(d, model) for d in args.kv_dtype] if args.kv_dtype else [catalog.assumptions.kv_dtype]
    _warn_beyond_context(model, context, args.context)
    dtype_basis = "--kv-dtype" if args.kv_dtype else "kv_dtype (assumption)"
    weights = answers.weights(model, catalog.assumptions)
    rows = [answers.footprint(model, context, args.batch, dtype, dtype_basis) for dtype in dtypes]
    if args.json:
        _json({"command": "footprint", "model": model.id, "context": answers.stated(context, "tokens", context_basis),
               "batch": answers.stated(args.batch, "count", "the batch asked for"), "weights": weights, "kv": rows})
        return 0
    print(f"{model.name}: batch {args.batch}, context {tokens(context)} ({thousands(context)} tokens)")
    print(_line("weights", weights))
    for row in rows:
        print(_line(f"KV per token, {row.kv_dtype}", row.kv_bytes_per_token))
        print(_line(f"KV of batch x context, {row.kv_dtype}", row.kv_bytes))
    if model.attention.state_bytes:
        print(_line("state per sequence", answers.state(model, catalog.assumptions)))
    return 0


def _caps(row, widths) -> str:
    return "".join(f"{'cannot load' if q.value is None else tokens(q.value):<{widths[d]}}"
                   for d, q in row.capacity_crossover.items())


def crossover(args: argparse.Namespace) -> int:
    """s*(b) per batch (SoK Table 4) and s_cap(b) on each device (SoK section 3.4), in the paper's frame and per
    device of the deployment."""
    catalog = _catalog(args)
    model = _pick(catalog.models, args.model, "model")
    catalog = _with_formats(catalog, weight_dtype=_weight_dtype(args, model), kv_dtype=_kv_dtype(args.kv_dtype, model))
    devices = [_pick(catalog.devices, d, "device") for d in args.device] if args.device else list(catalog.devices.values())
    rows = [answers.crossovers(model, devices, b, catalog.assumptions) for b in args.batch]
    a = catalog.assumptions
    deployment = _deployment(args, model, catalog)
    inputs = load_serving_inputs(catalog)
    memory = inputs.memory(args.engine)
    per_device = [serving.device_crossovers(model, devices, deployment, b, inputs, args.engine) for b in args.batch]
    at_context = _answers_at_context(args, catalog, model, devices, deployment, inputs)
    if args.json:
        _json({"command": "crossover", "model": model.id, "weight_dtype": str(a.weight_dtype), "kv_dtype": a.kv_dtype,
               "engine": memory.engine, "deployment": deployment, "per_device": per_device,
               "per_device_at_context": at_context, "paper_frame": rows})
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
        print(f"{row.batch.value:>6g}  {_show(row.traffic_crossover):<28}{_caps(row, widths)}".rstrip())
    print("Paper frame (SoK section 3.4: one device, every weight at w_p, HBM - P w_p for KV)")
    print(f"  s*(b)    {crossover_equation(model, TRAFFIC_EQUATION)}")
    print(f"  s_cap(b) {crossover_equation(model, CAPACITY_EQUATION)}")
    print(header)
    for row in rows:
        print(f"{row.batch.value:>6g}  {_show(row.traffic_crossover):<28}{_caps(row, widths)}".rstrip())
    if at_context is None:
        print("Add --context S for each device's bytes, regime, step times and the smallest deployment that holds b.")
    else:
        _print_answers_at_context(at_context, deployment, args.context)
    return 0


def _answers_at_context(args: argparse.Namespace, catalog: Catalog, model: Model, devices: list[Device],
                        deployment: Deployment, inputs) -> list[serving.AnswerAtContext] | None:
    """Per device and batch at --context: the deployment's per-device answer; None without --context."""
    if args.context is None:
        return None
    context, _ = _context(args, catalog)
    a = catalog.assumptions
    precisions = {device.id: _precision(catalog, device) for device in devices}
    found = serving.answers_at_context(model, devices, deployment, args.batch, context, inputs, precisions,
                                       a.weight_dtype, a.kv_dtype, args.engine)
    _warn_beyond_context(model, context, args.context)
    return found


def _where(smallest: Deployment | None) -> str:
    if smallest is None:
        return f"none of up to {MAX_DEVICES}"
    return "one device" if smallest.devices == 1 else f"{smallest.label} on {smallest.devices}"


def _ms(q: answers.Quantity | None) -> str:
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
              f"{n['sequences_that_fit'].value:>6g}  {_where(f.smallest_fitting_deployment)}")
    if any(f.reason is not None for f in found):
        print("  does not fit: the weights leave no KV memory on a device of the layout (no step times); "
              "`kvwall regime` says how many devices they need.")
    if any(f.reason is None and f.numbers["running_batch"].value == 0 for f in found):
        print("  runs 0: not one sequence fits beside the weights; its step times are those of one sequence, for scale.")


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


def _model_on_device(args: argparse.Namespace) -> tuple[Catalog, Model, Device, str]:
    """The catalogue with the formats asked for, the model and device named, and the compute precision to use."""
    catalog = _catalog(args)
    model = _pick(catalog.models, args.model, "model")
    catalog = _with_formats(catalog, weight_dtype=_weight_dtype(args, model), kv_dtype=_kv_dtype(args.kv_dtype, model),
                            compute_precision=args.compute_precision)
    device = _pick(catalog.devices, args.device, "device")
    return catalog, model, device, _precision(catalog, device)


def _headline(answer: serving.DeviceAnswer, device: Device) -> str:
    """The deployment's answer in one line: its regime and its time per output token, or why it does not fit."""
    if not answer.fits:
        return f"Regime: {answer.reason} (derived)"
    runs = answer.running_batch.value
    if runs == 0:
        return (f"Regime: {answer.regime} per device (derived): not one sequence fits beside the weights "
                f"({_show(answer.kv_memory_per_device)} of KV memory per device); the step times below are of one "
                "sequence, for scale")
    at = f" at the {runs:g} sequences that run" if runs < answer.batch_asked else ""
    schedule = (f", {answer.microbatches.value:g} microbatches in flight through {answer.deployment.pipeline_parallel} "
                "stages" if answer.microbatches is not None else "")
    return (f"Regime: {answer.regime} per device{at} (derived); time per output token at least "
            f"{_show(answer.step_time_bound)}, estimate {_show(answer.step_time_estimate)}; at most "
            f"{_show(answer.token_rate_bound)}{schedule}")


def regime(args: argparse.Namespace) -> int:
    """The regime of a model on a device at (b, s) under a deployment, the numbers behind it, the paper's one-device
    frame under its own name, and the design rules (SoK section 6.2)."""
    catalog, model, device, precision = _model_on_device(args)
    context, context_basis = _context(args, catalog)
    placement = args.placement or catalog.evaluation.placement
    point = answers.operating_point(model, device, args.batch, context, catalog.assumptions, placement, context_basis)
    deployment = _deployment(args, model, catalog)
    inputs = load_serving_inputs(catalog)
    per_device = serving.device_answer(model, device, deployment, args.batch, context, inputs, precision, args.engine)
    a = catalog.assumptions
    smallest = serving.smallest_fitting(model, device, args.batch, context, inputs, precision, a.weight_dtype,
                                        a.kv_dtype, args.engine)
    rules = advice.design_rules(point, per_device, smallest)
    _warn_beyond_context(model, context, args.context)
    estimate = calibrated.calibrated_answer(args, catalog, model, device, deployment, precision)
    if args.json:
        _json({"command": "regime", "model": model.id, "device": device.id, "engine": per_device.engine.engine,
               "calibrated_estimate": estimate,
               "deployment": deployment, "regime": per_device.regime, "reason": per_device.reason,
               "per_device": per_device.numbers(), "compute_bound": per_device.compute_bound,
               "kv_format_speedups": per_device.kv_format_speedups,
               "weight_format_speedups": per_device.weight_format_speedups,
               "compute_bound_formats": per_device.compute_bound_formats, "smallest_fitting_deployment": smallest,
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
    if point.devices_needed.value > 1:
        print(f"  Capacity: {_show(point.memory_needed)} of weights and KV against {_show(point.hbm_capacity)} per "
              f"{device.name}: {point.devices_needed.value:g} devices' worth, sharded evenly (derived)")
    for name, q in point.numbers().items():
        print(_line(_POINT_LABELS[name], q))
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
            print(_line(_DEVICE_LABELS[name], q))
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
          f"bound): {_where(smallest)}" + ("" if smallest is None or smallest.devices == 1 else " devices"))


def fit(args: argparse.Namespace) -> int:
    """The deployments of a model on a device that hold the batch at the context: per device count, fewest first, the
    layout with the lowest step-time bound."""
    catalog, model, device, precision = _model_on_device(args)
    context, _ = _context(args, catalog)
    a = catalog.assumptions
    inputs = load_serving_inputs(catalog)
    found = serving.fitting_deployments(model, device, args.batch, context, inputs, precision, a.weight_dtype,
                                        a.kv_dtype, args.engine)
    _warn_beyond_context(model, context, args.context)
    estimates = [calibrated.calibrated_answer(args, catalog, model, device, f.deployment, precision) for f in found]
    linked = device.scale_up is not None
    alone = "" if linked else (f"{device.name} has no scale-up link in {inputs.file_of(device)}: only one device is "
                               "tried")
    if args.json:
        _json({"command": "fit", "model": model.id, "device": device.id, "weight_dtype": str(a.weight_dtype),
               "kv_dtype": a.kv_dtype, "engine": inputs.memory(args.engine).engine, "scale_up_link": linked,
               "deployments": [{"deployment": f.deployment, "regime": f.regime, **f.numbers(),
                                "calibrated_estimate": e} for f, e in zip(found, estimates)]})
        return 0
    print(f"{model.name} on {device.name}, batch {args.batch}, context {tokens(context)}, {a.weight_dtype} weights, "
          f"{a.kv_dtype} KV, {inputs.memory(args.engine).rule}: per device count that holds every sequence, fewest "
          "first, the layout with the lowest step-time bound; all values derived")
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


def run_benchmark(args: argparse.Namespace) -> int:
    """Cold and no-op build times against the floor, and the model's grid throughput, with PASS/MISS per target."""
    repo = Path(args.repo)
    if not (repo / "Snakefile").is_file():
        raise CommandError(f"{repo}: no Snakefile here; run from the repository root or pass --repo DIR")
    if args.config is None:
        args.config = repo / DEFAULT_CONFIG
    catalog = _catalog(args)
    try:
        result = benchmark.run_benchmark(repo, catalog, cores=args.cores, points=args.points, tests=args.tests)
    except benchmark.BenchmarkError as err:
        print(f"kvwall: benchmark: {err}", file=sys.stderr)
        return 1
    met = result.targets()
    if args.json:
        _json({"command": "benchmark", "evidence": "measured", "result": result, "floor": result.floor, "targets": met})
        return 0
    print(f"kvwall benchmark: {result.jobs} jobs, --cores {result.cores}, {result.parallelism} at once on this machine; "
          f"all values measured; load average {result.load_average:.2f} before the builds")
    print(f"  environment: {'extras ' + ', '.join(result.extras) + ' installed' if result.extras else 'no extras installed'}"
          " (`uv run --frozen --extra jupyter kvwall benchmark` measures with the jupyter extra)")
    ratio = f"{result.cold_build / result.floor:.2f} x floor" if result.floor else "no jobs counted"
    print(f"  cold build (--forceall)   {result.cold_build:8.2f} s  ({ratio})")
    print(f"  device and model added    {result.contributor_loop:8.2f} s  ({result.loop_jobs} jobs rerun)")
    print(f"  no-op rebuild             {result.noop_build:8.2f} s  (`snakemake --cores {result.cores}`)")
    print(f"  no-op, kvwall build       {result.noop_kvwall_build:8.2f} s  (its stamp of the last build found: "
          "Snakemake not started)")
    print(f"  floor                     {result.floor:8.2f} s  (each job's interpreter and imports, "
          f"over {result.parallelism} at once)")
    for kind in result.kind_floors:
        print(f"    {kind.kind:<28} {kind.seconds:5.2f} s x {kind.jobs} jobs")
    print(f"  grid throughput           {result.grid_throughput:8.3g} points/s  ({result.grid_points:,} (s, b) points "
          f"in blocks of {benchmark.GRID_BLOCK_POINTS:,} over {result.parallelism} threads: AI, s*, regime, speedup, "
          "TP 4 step-time bound and estimate)")
    print(f"  validation                {result.validation_time:8.3f} s  ({result.validation_rows:,} reported serving points: "
          "deployment, bounds, estimate, realizations, regime, format pairs)")
    print(f"  kvwall measure --quick    {result.measure_quick:8.2f} s  (the command as run, record included; the run "
          f"{'called itself valid' if result.measure_quick_valid else 'refused to call itself valid'})")
    print(f"  kvwall plan's search      {result.plan_time:8.3f} s  ({result.plan_candidates:,} (layout, batch) points of "
          f"{benchmark.PLAN_MODEL} on up to {benchmark.PLAN_DEVICES} {benchmark.PLAN_DEVICE}, best and frontier "
          "included)")
    for score in result.plan_ranking:
        low, high = score.top1_interval
        difference, below, above = score.against_second
        against = ("" if math.isnan(difference) else
                   f"; less a second measurement {difference * 100:+.1f} pp, 90% interval {below * 100:+.1f} to "
                   f"{above * 100:+.1f} pp")
        print(f"  plan ranking              {score.top1_agreement:8.1%}    first layouts agree (90% interval {low:.1%} to "
              f"{high:.1%}{against}), median rank correlation {score.median_rank_correlation:.2f} ({score.estimate}, "
              f"{score.limit} TPOT limit, {score.groups} groups)")
    if result.fast_tests is not None:
        print(f'  pytest -m "not slow"       {result.fast_tests:8.1f} s')
        print(f"  the whole test suite      {result.all_tests:8.1f} s")
    print("Targets")
    for line in result.target_lines():
        print(f"  {line}")
    return 0


# ---- parser ----------------------------------------------------------------------------------------------------


def _catalogue_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--config", metavar="DIR", help="config directory with devices.yaml, models.yaml, ... "
                         "(default: ./config when present, else the catalogue shipped with kvwall)")
    options.add_argument("--specs", metavar="PATH", action="append", default=[],
                         help="YAML file adding devices and/or models in the format of config/ (header evidence: spec "
                         "and sources:, then devices: and/or models:); repeatable. Example: examples/my-hardware.yaml; "
                         "a skeleton: kvwall template device model")
    return options


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, parents=[_catalogue_options()])
    common.add_argument("--json", action="store_true", help="machine-readable output, each number with its evidence class")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="kvwall", description="The KV cache memory wall, from specs (SoK arXiv:2609.30854): ask for a model's KV "
        "footprint, its crossovers and its regime on a device; measure the KV slope; review a rebuild. Every number "
        "is printed with its evidence class and the equation or source behind it.",
        epilog="Run from the repository root (where config/ is) or pass --config DIR. 'kvwall COMMAND --help' "
        "explains each command.")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    common = [_common()]
    context_help = "context length in tokens: 131072, 128k, 1M, 1e6 (k per config/assumptions.yaml tokens_per_k)"

    def model_option(p: argparse.ArgumentParser) -> None:
        group = p.add_mutually_exclusive_group()
        group.add_argument("--model", help="model id of the catalogue, or its Hugging Face id (meta-llama/Llama-3.1-70B)")
        group.add_argument("--hf-config", metavar="PATH",
                           help="a published config.json to answer for directly (parameter count derived from it)")

    def format_option(stored: str) -> dict:
        if stored == "weight":
            return {"choices": [*sorted(DTYPE_BYTES), "native"], "metavar": "DTYPE",
                    "help": f"weight storage format of every part: {', '.join(DTYPE_BYTES)}, or native (the formats "
                            "the model's checkpoint ships each part in, weight_format of config/models.yaml) "
                            "(default: weight_dtype of the assumptions)"}
        return {"choices": [*sorted(DTYPE_BYTES), "native"], "metavar": "DTYPE",
                "help": f"{stored} storage format: {', '.join(DTYPE_BYTES)}, or native (the KV format the model's "
                        "checkpoint states, kv_format of config/models.yaml) (default: kv_dtype of the assumptions)"}

    def deployment_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--devices", type=_positive_int, metavar="N",
                       help="devices the model is deployed on; must equal TP x PP x DP (default: TP x PP x DP)")
        p.add_argument("--tp", type=_positive_int, default=1, metavar="T",
                       help="tensor-parallel degree: heads and matrices of each layer split over T devices (default 1)")
        p.add_argument("--pp", type=_positive_int, default=1, metavar="P",
                       help="pipeline stages: the layers split over P stages run one after the other (default 1)")
        p.add_argument("--ep", type=_positive_int, default=1, metavar="E",
                       help="expert-parallel degree: the routed experts spread over E devices; must divide the "
                            "experts and TP x DP (default 1)")
        p.add_argument("--dp", type=_positive_int, default=1, metavar="D",
                       help="attention data-parallel degree: the sequences split over D attention replicas (default 1)")

    device_help = "device id from config/devices.yaml or a --specs file (for example b200)"
    p = subparsers.add_parser(
        "footprint", parents=common, help="KV bytes per token and per batch, and weights (Eq. 1)",
        description="KV bytes per token (SoK Eq. 1: 2 L n_kv d_h w_kv, MLA L (d_c + d_r) w_kv, window layers capped), "
        "the KV bytes of a batch at a context, and the model's resident weight bytes (section 1.2), for one or "
        "more KV storage formats.")
    model_option(p)
    p.add_argument("--context", default="128k", help=context_help + "; default 128k")
    p.add_argument("--batch", type=_positive_int, default=1, help="sequences in the batch (default 1)")
    p.add_argument("--kv-dtype", nargs="+", choices=[*sorted(DTYPE_BYTES), "native"], metavar="DTYPE",
                   help=f"KV storage format(s): {', '.join(DTYPE_BYTES)}, or native (the checkpoint's, kv_format of "
                        "config/models.yaml) (default: kv_dtype of the assumptions)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.set_defaults(func=footprint)

    p = subparsers.add_parser(
        "crossover", parents=common, help="traffic crossover s*(b) and capacity crossover s_cap",
        description="The traffic crossover s*(b) = P w_p / (b 2 L n_kv d_h w_kv), the context above which a decode "
        "step reads more KV than weights (SoK Table 4), and the capacity crossover s_cap(b) on each device, the "
        "context at which a batch no longer fits beside the weights (section 3.4), per batch size; per device of a "
        "deployment (--devices --tp --pp --ep --dp) too, and with --context, each device's bytes, regime and step "
        "times at that context, as `regime` gives them.")
    model_option(p)
    p.add_argument("--device", nargs="+", help="device id(s) for s_cap (default: every device)")
    p.add_argument("--batch", type=_positive_int, nargs="+", default=list(TABLE4_BATCHES),
                   help="batch size(s) (default: SoK Table 4's 1 8 32 128 256)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--context", help="a context (e.g. 128k, 1M): adds, per device and batch, the weight and KV bytes, "
                   "memory needed against HBM, regime, step-time bound and estimate, collectives time, sequences that "
                   "fit and the smallest deployment that holds the batch")
    deployment_options(p)
    engine_option(p)
    p.set_defaults(func=crossover)

    p = subparsers.add_parser(
        "regime", parents=common, help="which regime, the numbers behind it, and what to do",
        description="The regime of a model deployed on one or more devices at batch b and context s (weight-bound, "
        "kv-bound or capacity-bound, SoK section 3.5, compute-bound where the FLOPs outlast the bytes, or does not "
        "fit), every number behind it per device (weights per part, KV, capacity under the engine's memory rule, "
        "s*(b), s_cap, step-time bound and estimate, collectives, TTFT, speedups of narrower formats); then the "
        "paper's one-device frame under its own name (bytes per step, AI against the ridge, bytes-only S(c)); and "
        "which of the eight design rules of section 6.2 apply.")
    model_option(p)
    p.add_argument("--device", required=True, help=device_help)
    p.add_argument("--batch", type=_positive_int, required=True, help="sequences decoded together")
    p.add_argument("--context", required=True, help=context_help)
    p.add_argument("--placement", choices=("striped", "pinned"), help="KV page placement (default: the evaluation's)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--compute-precision", metavar="PRECISION",
                   help="dense tensor rate the ridge and step time use, as config/devices.yaml names it: bf16, fp8 "
                   "(default: compute_precision of the assumptions)")
    deployment_options(p)
    engine_option(p)
    calibrated.length_options(p)
    p.set_defaults(func=regime)

    p = subparsers.add_parser(
        "fit", parents=common, help="deployments of a model on a device that hold a batch at a context",
        description="The deployments (devices = TP x PP x DP, experts over EP) of a model on a device that keep every "
        "sequence of the batch resident at the context: for each device count up to 64, fewest first, the layout "
        "with the lowest step-time bound, with its per-device regime, bound and estimate.")
    p.add_argument("--model", required=True, help="model id of config/models.yaml")
    p.add_argument("--device", required=True, help="device id of config/devices.yaml")
    p.add_argument("--batch", type=_positive_int, required=True, help="sequences to keep resident at once")
    p.add_argument("--context", required=True, help=context_help)
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--compute-precision", metavar="PRECISION",
                   help="dense tensor rate the step-time bound uses: bf16, fp8 (default: compute_precision of the assumptions)")
    engine_option(p)
    calibrated.length_options(p)
    p.set_defaults(func=fit)

    p = subparsers.add_parser(
        "import", parents=[_catalogue_options()], help="a published config.json as a config/models.yaml entry (stdout, or --into)",
        description="Read a Hugging Face config.json (and a quantized checkpoint's hf_quant_config.json) and write "
        "the model entry in config/models.yaml's format, every value with the config key it came from as its "
        "source; a config kvwall cannot model is refused with the file, the key and the reason (exit status 2).")
    p.add_argument("paths", nargs="+", metavar="PATH", help="config.json file(s), named org--model_config.json or with --hf-id")
    p.add_argument("--into", metavar="FILE", help="append the entry to this models file (config/models.yaml) instead")
    p.add_argument("--params-nominal", type=_parameter_count, metavar="COUNT",
                   help="the parameter count the model card publishes (checked against the derived count)")
    p.add_argument("--params-source", metavar="TEXT", help="where --params-nominal is published (model card address)")
    p.add_argument("--hf-id", help="Hugging Face id org/model when the file name does not carry it")
    p.add_argument("--id", dest="model_id", help="catalogue id (default: the model name lowercased)")
    p.set_defaults(func=lambda a: catalogue.import_configs(_catalog(a), a.paths, a.into, a.params_nominal, a.params_source,
                                                           a.hf_id, a.model_id))

    p = subparsers.add_parser(
        "list", parents=[_catalogue_options()], help="catalogue ids with names and key numbers",
        description="The ids of the catalogue's models, devices or storage formats, with their names and key numbers "
        "(the checkout's config/ when present, else the catalogue shipped with kvwall).")
    p.add_argument("what", choices=("models", "devices", "formats"), help="what to list")
    p.set_defaults(func=lambda a: catalogue.list_catalogue(_catalog(a), a.what))

    measure_command.register(subparsers)
    validate_command.register(subparsers, common, _catalog)
    plan_command.register(subparsers, common, _model_on_device, format_option, engine_option)
    diff_command.register(subparsers)
    template_command.register(subparsers)
    subparsers.add_parser("build", help="snakemake, with every --configfile checked by kvwall before Snakemake reads it",
                          description=build_command.USAGE, add_help=False)

    p = subparsers.add_parser(
        "benchmark", parents=common, help="workflow build times and model throughput against targets",
        description="Build a temporary copy of the repository and time it: a cold build (--forceall), a no-op "
        "rebuild, and the contributor loop (a device and a model added to config/, then rebuilt); then the import "
        "floor and the vectorized model's grid throughput, each against its target. Takes minutes; prints each "
        "stage as it starts. All values measured on this machine.")
    p.add_argument("--repo", default=".", help="repository root holding the Snakefile (default: .)")
    p.add_argument("--cores", type=_positive_int, default=4, help="Snakemake --cores for the builds (default 4)")
    p.add_argument("--points", type=_points, default=1_000_000, help="(s, b) grid points for the throughput (default 1e6)")
    p.add_argument("--tests", action="store_true", help='also time pytest -m "not slow" and the whole test suite in the '
                   "checkout (minutes)")
    p.set_defaults(func=run_benchmark)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status (2 on bad input, with one line on stderr)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build"]:  # every later argument is Snakemake's, which kvwall's parser does not know
        return build_command.run(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except SpecError as err:
        print(f"kvwall: {err}", file=sys.stderr)
    except (CommandError, DomainError, plan_command.PlanError) as err:
        print(f"kvwall: {err}", file=sys.stderr)
    except BrokenPipeError:  # output piped into a reader that stopped early (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 2
