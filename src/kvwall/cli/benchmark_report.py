"""`kvwall benchmark`: its parser and the report it prints, each figure against its target; the builds and timings
are kvwall.cli.benchmark's."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from kvwall.cli import benchmark, request, show
from kvwall.cli.options import common, points, positive_int


def register(subparsers) -> None:
    """Add `kvwall benchmark` to the command's subparsers."""
    p = subparsers.add_parser(
        "benchmark", parents=[common()], help="workflow build times and model throughput against targets",
        description="Build a temporary copy of the repository and time it: a cold build (--forceall), a no-op "
        "rebuild, and the contributor loop (a device and a model added to config/, then rebuilt); then the import "
        "floor and the vectorized model's grid throughput, each against its target. Takes minutes; prints each "
        "stage as it starts. All values measured on this machine.")
    p.add_argument("--repo", default=".", help="repository root holding the Snakefile (default: .)")
    p.add_argument("--cores", type=positive_int, default=4, help="Snakemake --cores for the builds (default 4)")
    p.add_argument("--points", type=points, default=1_000_000, help="(s, b) grid points for the throughput (default 1e6)")
    p.add_argument("--tests", action="store_true", help='also time pytest -m "not slow" and the whole test suite in the '
                   "checkout (minutes)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Cold and no-op build times against the floor, and the model's grid throughput, with PASS/MISS per target."""
    repo = Path(args.repo)
    if not (repo / "Snakefile").is_file():
        raise request.CommandError(f"{repo}: no Snakefile here; run from the repository root or pass --repo DIR")
    if args.config is None:
        args.config = repo / request.DEFAULT_CONFIG
    catalog = request.catalog_of(args)
    try:
        result = benchmark.run_benchmark(repo, catalog, cores=args.cores, points=args.points, tests=args.tests)
    except benchmark.BenchmarkError as err:
        print(f"kvwall: benchmark: {err}", file=sys.stderr)
        return 1
    met = result.targets()
    if args.json:
        show.as_json({"command": "benchmark", "evidence": "measured", "result": result, "floor": result.floor,
                      "targets": met})
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
