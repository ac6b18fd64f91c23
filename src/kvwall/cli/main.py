"""The `kvwall` command: argument parsing and formatting; every number comes from kvwall.cli.answers and kvwall.cli.advice.

    kvwall footprint --model llama-3-70b --context 128k
    kvwall crossover --model llama-3-70b --batch 1 32
    kvwall regime --model llama-3-70b --device b200 --batch 32 --context 128k
    kvwall validate data/reported/serving-measurements.csv --output bounds.csv
    kvwall measure ...
    kvwall benchmark
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, replace
from pathlib import Path

from kvwall.cli import advice, answers, benchmark
from kvwall.cli import validate as validate_command
from kvwall.inputs.catalog import Catalog
from kvwall.formats import thousands, times, tokens
from kvwall.inputs.loader import SpecError, load_catalog, load_user_specs
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
    return value


def _points(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of points (examples: 1000000, 1e6)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


# ---- loading the catalogue -------------------------------------------------------------------------------------


def _catalog(args: argparse.Namespace) -> Catalog:
    """The config directory's catalogue plus the devices and models of every --specs file."""
    config = args.config
    if config is None:
        if not (DEFAULT_CONFIG / "devices.yaml").is_file():
            raise CommandError(
                "no config directory: run kvwall from the repository root (where config/ is) or pass --config DIR"
            )
        config = DEFAULT_CONFIG
    if not Path(config).is_dir():
        raise CommandError(f"--config {config}: not a directory")
    catalog = load_catalog(config)
    for path in args.specs:
        catalog = load_user_specs(path, catalog)
    return catalog


def _with_formats(catalog: Catalog, **formats: str | None) -> Catalog:
    """The catalogue with the storage formats or compute precision chosen on the command line (None: as configured);
    assumptions, as the defaults in config/assumptions.yaml are."""
    chosen = {name: value for name, value in formats.items() if value}
    return replace(catalog, assumptions=replace(catalog.assumptions, **chosen)) if chosen else catalog


def _pick(collection, item_id: str, kind: str):
    if item_id not in collection:
        known = ", ".join(sorted(collection))
        raise CommandError(f"unknown {kind} {item_id!r} (known {kind}s: {known}; add one with --specs FILE)")
    return collection[item_id]


def _context(args: argparse.Namespace, catalog: Catalog) -> tuple[float, str]:
    """The context in tokens, and how it was read (the size of a 'k' is an assumption)."""
    k = catalog.assumptions.tokens_per_k
    try:
        return parse_tokens(args.context, k=k), f"--context {args.context}, 1k = {k:g} tokens (assumption tokens_per_k)"
    except UnitError as err:
        raise CommandError(f"--context: {err}") from None


# ---- formatting ------------------------------------------------------------------------------------------------


def _show(q: answers.Quantity) -> str:
    """A quantity as the paper prints it: decimal GB, 13.4k tokens, TB/s, ms, 1.25x."""
    v, unit = q.value, q.unit
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
        return f"{v * 1e3:.1f} ms"
    if unit == "ratio":
        return times(2)(v)
    return f"{v:g}"


def _line(label: str, q: answers.Quantity) -> str:
    return f"  {label:<30} {_show(q):<28} {q.evidence:<10} {q.basis}"


def _json(obj) -> None:
    print(json.dumps(obj, indent=2, default=lambda o: asdict(o)))


# ---- subcommands -----------------------------------------------------------------------------------------------


def footprint(args: argparse.Namespace) -> int:
    """KV bytes per token, KV bytes of the batch at the context, and weights (SoK Eq. 1, section 1.2)."""
    catalog = _with_formats(_catalog(args), weight_dtype=args.weight_dtype)
    model = _pick(catalog.models, args.model, "model")
    context, context_basis = _context(args, catalog)
    dtypes = args.kv_dtype or [catalog.assumptions.kv_dtype]
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
    return 0


def crossover(args: argparse.Namespace) -> int:
    """s*(b) per batch (SoK Table 4) and s_cap(b) on each device (SoK section 3.4)."""
    catalog = _with_formats(_catalog(args), weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype)
    model = _pick(catalog.models, args.model, "model")
    devices = [_pick(catalog.devices, d, "device") for d in args.device] if args.device else list(catalog.devices.values())
    rows = [answers.crossovers(model, devices, b, catalog.assumptions) for b in args.batch]
    a = catalog.assumptions
    if args.json:
        _json({"command": "crossover", "model": model.id, "weight_dtype": a.weight_dtype, "kv_dtype": a.kv_dtype, "rows": rows})
        return 0
    print(f"{model.name}, {a.weight_dtype} weights and {a.kv_dtype} KV cache; all values derived")
    print(f"  s*(b)    {answers.crossover_equation(model, answers.TRAFFIC_EQUATION)}")
    print(f"  s_cap(b) {answers.crossover_equation(model, answers.CAPACITY_EQUATION)}")
    widths = {d.id: max(14, len(d.name) + 8) for d in devices}
    print(f"{'b':>6}  {'s*(b)':<28}" + "".join(f"{'s_cap ' + d.name:<{widths[d.id]}}" for d in devices).rstrip())
    for row in rows:
        caps = "".join(f"{'cannot load' if q.value < 0 else tokens(q.value):<{widths[d]}}" for d, q in row.capacity_crossover.items())
        print(f"{row.batch.value:>6g}  {_show(row.traffic_crossover):<28}{caps}".rstrip())
    return 0


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
    "speedup_int4": "speedup, 4-bit KV",
    "speedup_int2": "speedup, 2-bit KV",
}


def regime(args: argparse.Namespace) -> int:
    """The regime of a model on a device at (b, s), the numbers behind it, and the design rules (SoK section 6.2)."""
    catalog = _with_formats(_catalog(args), weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype,
                            compute_precision=args.compute_precision)
    model = _pick(catalog.models, args.model, "model")
    device = _pick(catalog.devices, args.device, "device")
    precision = catalog.assumptions.compute_precision
    if precision not in device.dense_flops:
        raise CommandError(f"compute precision {precision} (--compute-precision, or compute_precision of the "
                           f"assumptions): {device.name} lists no dense rate for it (it lists "
                           f"{', '.join(sorted(device.dense_flops))})")
    context, context_basis = _context(args, catalog)
    placement = args.placement or catalog.evaluation.placement
    point = answers.operating_point(model, device, args.batch, context, catalog.assumptions, placement, context_basis)
    rules = advice.design_rules(point)
    if args.json:
        _json({"command": "regime", "model": model.id, "device": device.id, "placement": placement,
               "regime": point.regime, "numbers": point.numbers(), "design_rules": rules})
        return 0
    ai, ridge = point.arithmetic_intensity.value, point.ridge_point.value
    print(f"{model.name} on {device.name} ({placement} pages), batch {args.batch}, context {tokens(context)}")
    roofline = f"{ridge / ai:.0f}x below the ridge" if ai < ridge else "above the ridge, compute-bound at"
    print(f"Regime: {point.regime} (derived); AI {ai:.1f} FLOP/B is {roofline} {ridge:.0f} FLOP/B")
    if point.devices_needed.value > 1:
        print(f"Capacity: {_show(point.memory_needed)} of weights and KV against {_show(point.hbm_capacity)} per "
              f"{device.name}: sharded over {point.devices_needed.value:g} devices (derived)")
    print()
    for name, q in point.numbers().items():
        print(_line(_POINT_LABELS[name], q))
    print()
    print("Design rules (SoK section 6.2); [x] applies here")
    for rule in rules:
        print(f"  [{'x' if rule.applies else ' '}] {rule.number}. {rule.statement}")
        print(f"       {rule.advice}")
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
        result = benchmark.run_benchmark(repo, catalog, cores=args.cores, points=args.points)
    except benchmark.BenchmarkError as err:
        print(f"kvwall: benchmark: {err}", file=sys.stderr)
        return 1
    met = result.targets()
    if args.json:
        _json({"command": "benchmark", "evidence": "measured", "result": result, "floor": result.floor, "targets": met})
        return 0
    print(f"kvwall benchmark: {result.jobs} jobs, --cores {result.cores}, {result.parallelism} at once on this machine; "
          "all values measured")
    ratio = f"{result.cold_build / result.floor:.2f} x floor" if result.floor else "no jobs counted"
    print(f"  cold build (--forceall)   {result.cold_build:8.2f} s  ({ratio})")
    print(f"  no-op rebuild             {result.noop_build:8.2f} s")
    print(f"  floor                     {result.floor:8.2f} s  ({result.import_time:.2f} s interpreter + imports "
          f"x {result.jobs} jobs / {result.parallelism})")
    print(f"  grid throughput           {result.grid_throughput:8.3g} points/s  ({result.grid_points:,} (s, b) points: "
          "AI, s*, regime, speedup)")
    print("Targets")
    for target, ok in met.items():
        print(f"  {'PASS' if ok else 'MISS'}  {target}")
    return 0


# ---- parser ----------------------------------------------------------------------------------------------------


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="DIR", help="config directory with devices.yaml, models.yaml, ... "
                        "(default: ./config when present)")
    common.add_argument("--specs", metavar="PATH", action="append", default=[],
                        help="YAML file adding devices and/or models in the format of config/; repeatable")
    common.add_argument("--json", action="store_true", help="machine-readable output, each number with its evidence class")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kvwall", description="The KV cache memory wall, from specs (SoK arXiv:2609.30854).")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    common = [_common()]
    context_help = "context length in tokens: 131072, 128k, 1M, 1e6 (k per config/assumptions.yaml tokens_per_k)"

    def format_option(stored: str) -> dict:
        return {"choices": sorted(DTYPE_BYTES), "metavar": "DTYPE",
                "help": f"{stored} storage format: {', '.join(DTYPE_BYTES)} (default: {stored}_dtype of the assumptions)"}

    p = subparsers.add_parser("footprint", parents=common, help="KV bytes per token and per batch, and weights (Eq. 1)")
    p.add_argument("--model", required=True)
    p.add_argument("--context", default="128k", help=context_help + "; default 128k")
    p.add_argument("--batch", type=_positive_int, default=1)
    p.add_argument("--kv-dtype", nargs="+", choices=sorted(DTYPE_BYTES), metavar="DTYPE",
                   help=f"KV storage format(s): {', '.join(DTYPE_BYTES)} (default: kv_dtype of the assumptions)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.set_defaults(func=footprint)

    p = subparsers.add_parser("crossover", parents=common, help="traffic crossover s*(b) and capacity crossover s_cap")
    p.add_argument("--model", required=True)
    p.add_argument("--device", nargs="+", help="device id(s) for s_cap (default: every device)")
    p.add_argument("--batch", type=_positive_int, nargs="+", default=list(TABLE4_BATCHES),
                   help="batch size(s) (default: SoK Table 4's 1 8 32 128 256)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.set_defaults(func=crossover)

    p = subparsers.add_parser("regime", parents=common, help="which regime, the numbers behind it, and what to do")
    p.add_argument("--model", required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--batch", type=_positive_int, required=True)
    p.add_argument("--context", required=True, help=context_help)
    p.add_argument("--placement", choices=("striped", "pinned"), help="KV page placement (default: the evaluation's)")
    p.add_argument("--weight-dtype", **format_option("weight"))
    p.add_argument("--kv-dtype", **format_option("kv"))
    p.add_argument("--compute-precision", metavar="PRECISION",
                   help="dense tensor rate the ridge and step time use, as config/devices.yaml names it: bf16, fp8 "
                   "(default: compute_precision of the assumptions)")
    p.set_defaults(func=regime)

    measure_command.register(subparsers)
    validate_command.register(subparsers, common, _catalog)

    p = subparsers.add_parser("benchmark", parents=common, help="workflow build times and model throughput against targets")
    p.add_argument("--repo", default=".", help="repository root holding the Snakefile (default: .)")
    p.add_argument("--cores", type=_positive_int, default=4)
    p.add_argument("--points", type=_points, default=1_000_000, help="(s, b) grid points for the throughput (default 1e6)")
    p.set_defaults(func=run_benchmark)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit status (2 on bad input, with one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except SpecError as err:
        print(f"kvwall: {err}", file=sys.stderr)
    except CommandError as err:
        print(f"kvwall: {err}", file=sys.stderr)
    except BrokenPipeError:  # output piped into a reader that stopped early (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 2
