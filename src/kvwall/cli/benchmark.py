"""`kvwall benchmark`: the workflow's build times against their floor, and the throughput of the vectorized model.

The workflow is built in a temporary copy of the repository, so the working tree is never touched: a cold build, a
no-op rebuild as the README runs it (`snakemake --cores N`, which starts Snakemake and reads the workflow) and as
`kvwall build --cores N` runs it (which finds the checkout as its last build left it and starts nothing,
kvwall.cli.build), then the contributor loop, a device and a model added to config/ (the entries of `kvwall
template`) and rebuilt. The floor is what the jobs cannot avoid: one interpreter start importing the pipeline's
libraries per job, spread over the cores. Each stage is announced on stderr as it starts.
"""

from __future__ import annotations

import ast
import csv
import math
from importlib import metadata
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kvwall.cli.house import README_LINES, House, house_of
from kvwall.cli.template import ENTRIES, SOURCES
from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import traffic_compression
from kvwall.model.regimes import capacity_crossover, regime_index, speedup, traffic_crossover
from kvwall.model.roofline import arithmetic_intensity, resident_weight_bytes, step_kv_bytes, step_weight_bytes
from kvwall.model.step_time import device_step
from kvwall.inputs.deployment import Deployment, ServingInputs, load_serving_inputs
from kvwall.inputs.serving import SERVING_MEASUREMENTS
from kvwall.inputs.validation_map import VALIDATION_FILE
from kvwall.validation.run import validate, validate_file
from kvwall.plan.curves import plan_curves
from kvwall.plan.search import Workload, best_within, frontier
from kvwall.plan.proof import NEW_MODEL, PLANNED
from kvwall.validation.targets import FIT_SECONDS, assessment_seconds, scored

#: What a build needs even where git ignores it or there is no git checkout: these paths, where present.
WORKFLOW_PATHS = ("Snakefile", "workflow", "config", "notebooks", "data")
#: A notebook job's script (workflow/scripts/notebook.py) starts a kernel: a second interpreter, with these imports.
KERNEL_IMPORTS = ("ipykernel.kernelapp",)
#: The kind of a notebook job.
NOTEBOOK_KIND = "notebook"
#: Targets: a job kind's floor at most 0.5 s, a cold build within 1.3x the floor and 30 s, a device and a model added
#: and rebuilt within 10 s, a no-op rebuild within 1 s, at least 5e7 grid points per second, every reported serving
#: point held against its bounds in under 1 s.
KIND_FLOOR_SECONDS = 0.5
COLD_OVER_FLOOR = 1.3
COLD_SECONDS = 30.0
CONTRIBUTOR_LOOP_SECONDS = 10.0
NOOP_SECONDS = 1.0
POINTS_PER_SECOND = 5e7
VALIDATION_SECONDS = 1.0
#: `kvwall plan`'s search: every layout of PLAN_MODEL on up to PLAN_DEVICES of PLAN_DEVICE at every batch it holds
#: (at least PLAN_CANDIDATES of them) within PLAN_SECONDS, best and frontier included.
PLAN_MODEL, PLAN_DEVICE, PLAN_DEVICES = "deepseek-v3", "b200", 72
PLAN_WORKLOAD = Workload(input_tokens=8192, output_tokens=1024, tpot_max=0.05)
PLAN_CANDIDATES = 100_000
PLAN_SECONDS = 1.0
#: `kvwall plan --engine` against the measurements, from the cold build's tables/derived/plan_ranking_summary: at the
#: median TPOT limit of every measured group, the first layout of the estimate it prices with (PLAN_ESTIMATES: for a
#: measured model, and for a model left out of every fit) is the
#: measurements' in at least PLAN_TOP1 of the groups, and the median rank correlation is at least
#: PLAN_RANK_CORRELATION. The summary's other rows are printed beside it and held to no target: the datasheet
#: estimate and the constants without offsets, what kvwall ranks with less, and a second measurement of the same
#: points, what measuring again scores.
PLAN_RANKING_TABLE = "tables/derived/plan_ranking_summary.csv"
PLAN_RANKING_LIMIT = "median"
PLAN_TOP1, PLAN_RANK_CORRELATION = 0.70, 0.8
PLAN_ESTIMATES = (PLANNED, NEW_MODEL)
#: The calibrated estimate's held-out error against its targets (kvwall.validation.targets, new models first), from
#: the cold build's table; and the fit with every cross-validation scheme on the committed measurements, timed.
ESTIMATE_ERROR_TABLE = "tables/derived/serving_estimate_error.csv"
#: `kvwall measure --quick`, the whole command from its start, in at most this many seconds.
MEASURE_QUICK_SECONDS = 10.0
#: The contributor's tests (`pytest -m "not slow"`) and the whole suite, on 2 cores (`kvwall benchmark --tests`).
FAST_TESTS_SECONDS, ALL_TESTS_SECONDS = 60.0, 180.0
#: The deployment whose per-device step the grid evaluates beside the paper's one-device numbers.
GRID_DEPLOYMENT = Deployment(devices=4, tensor_parallel=4)
#: The KV width the grid quotes a speedup for (2-bit, SoK Table 5).
GRID_KV_BITS = 2.0
#: Grid points evaluated at once: 64k float64 values (512 KiB) per temporary, small enough to stay in cache.
GRID_BLOCK_POINTS = 65_536


class BenchmarkError(RuntimeError):
    """A build of the temporary copy failed."""


@dataclass(frozen=True)
class KindFloor:
    """One job kind of the cold build: how many jobs it ran and what each cannot go below (interpreter and imports, s)."""

    kind: str
    jobs: int
    seconds: float


@dataclass(frozen=True)
class RankingScore:
    """One estimate's layout ranking against the measurements at one TPOT limit (kvwall.plan.proof)."""

    estimate: str
    limit: str
    groups: int
    top1_agreement: float
    median_rank_correlation: float
    top1_interval: tuple[float, float] = (math.nan, math.nan)
    against_second: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # the difference, its interval


@dataclass(frozen=True)
class BenchmarkResult:
    """Measured times (s) and rate (points/s) of one benchmark run, with the job count and cores used."""

    cold_build: float
    noop_build: float
    contributor_loop: float
    loop_jobs: int
    load_average: float  # the machine's 1-minute load average before the builds: other work slows every time
    kind_floors: tuple[KindFloor, ...]
    cores: int
    grid_points: int
    grid_throughput: float
    validation_rows: int
    validation_time: float  # s, every row of SERVING_MEASUREMENTS evaluated once it is read
    measure_quick: float = 0.0  # s, `kvwall measure --quick` from the command's start to its exit
    measure_quick_valid: bool = False  # whether that run called itself valid (a busy machine makes it refuse)
    plan_candidates: int = 0  # (layout, batch) points `kvwall plan` evaluated
    plan_time: float = 0.0  # s, the search, best and frontier included
    plan_ranking: tuple[RankingScore, ...] = ()  # the cold build's plan_ranking_summary
    estimate_error: tuple[tuple[str, bool], ...] = ()  # each error target of the cold build's table, and whether met
    estimate_fit_time: float = math.nan  # s, every engine's fit and every cross-validation scheme
    fast_tests: float | None = None  # s, `pytest -m "not slow"` in the checkout (with --tests)
    all_tests: float | None = None  # s, the whole suite in the checkout (with --tests)
    extras: tuple[str, ...] = ()  # the optional extras installed in the environment measured (installed_extras)
    noop_kvwall_build: float = math.nan  # s, the no-op rebuild as `kvwall build --cores N` runs it (its stamp found)
    # CPU seconds (user and system, every process of the build) beside the wall times above: what other work on the
    # machine does not change as it changes the wall time
    build_cpu: tuple[float, float, float, float] = (math.nan,) * 4  # cold, no-op, kvwall build's no-op, contributor loop
    house: House | None = None  # the README's length, the strict site build, the import circles

    @property
    def parallelism(self) -> int:
        """Jobs that can run at once: the cores asked for, at most the machine's CPUs."""
        return max(1, min(self.cores, os.cpu_count() or 1))

    @property
    def jobs(self) -> int:
        """Jobs of the cold build."""
        return sum(kind.jobs for kind in self.kind_floors)

    @property
    def floor(self) -> float:
        """Every job's floor (its kind's interpreter and imports), spread over the cores that can run at once."""
        return sum(kind.jobs * kind.seconds for kind in self.kind_floors) / self.parallelism

    def targets(self) -> dict[str, bool]:
        """Each target and whether it is met."""
        return {
            f"every job kind's floor <= {KIND_FLOOR_SECONDS:g} s": all(k.seconds <= KIND_FLOOR_SECONDS for k in self.kind_floors),
            f"cold build <= {COLD_OVER_FLOOR:g} x floor": self.cold_build <= COLD_OVER_FLOOR * self.floor,
            f"cold build <= {COLD_SECONDS:g} s": self.cold_build <= COLD_SECONDS,
            f"device and model added, rebuild <= {CONTRIBUTOR_LOOP_SECONDS:g} s": self.contributor_loop <= CONTRIBUTOR_LOOP_SECONDS,
            f"no-op rebuild <= {NOOP_SECONDS:g} s": self.noop_build <= NOOP_SECONDS,
            f"no-op rebuild, kvwall build <= {NOOP_SECONDS:g} s": self.noop_kvwall_build <= NOOP_SECONDS,
            f"grid throughput >= {POINTS_PER_SECOND:.0e} points/s".replace("e+0", "e"): self.grid_throughput >= POINTS_PER_SECOND,
            f"validation of every serving point < {VALIDATION_SECONDS:g} s": self.validation_time < VALIDATION_SECONDS,
            f"kvwall measure --quick <= {MEASURE_QUICK_SECONDS:g} s": self.measure_quick <= MEASURE_QUICK_SECONDS,
            f"plan search of >= {PLAN_CANDIDATES:.0e} candidates < {PLAN_SECONDS:g} s".replace("e+0", "e"):
                self.plan_candidates >= PLAN_CANDIDATES and self.plan_time < PLAN_SECONDS,
            **{target: ok for score in self.plan_ranking
               if score.limit == PLAN_RANKING_LIMIT and score.estimate in PLAN_ESTIMATES
               for target, ok in (
                   (f"plan picks the measured first layout ({score.estimate}, {score.limit} TPOT limit) >= "
                    f"{PLAN_TOP1:.0%}", score.top1_agreement >= PLAN_TOP1),
                   (f"plan's median rank correlation ({score.estimate}, {score.limit} TPOT limit) >= "
                    f"{PLAN_RANK_CORRELATION:g}", score.median_rank_correlation >= PLAN_RANK_CORRELATION))},
            **dict(self.estimate_error),
            f"the fit and every cross-validation scheme ({self.estimate_fit_time:.1f} s) < {FIT_SECONDS:g} s":
                self.estimate_fit_time < FIT_SECONDS,
            **({f"README <= {README_LINES} lines ({self.house.readme_lines})": self.house.readme_lines <= README_LINES,
                "mkdocs build --strict clean" + ("" if self.house.docs_strict is not None else " (MkDocs not installed)"):
                    bool(self.house.docs_strict),
                f"no import circle among kvwall's modules ({self.house.import_circles})": self.house.import_circles == 0}
               if self.house is not None else {}),
            **({f'pytest -m "not slow" <= {FAST_TESTS_SECONDS:g} s': self.fast_tests <= FAST_TESTS_SECONDS,
                f"the whole test suite <= {ALL_TESTS_SECONDS:g} s": self.all_tests <= ALL_TESTS_SECONDS}
               if self.fast_tests is not None and self.all_tests is not None else {}),
        }


    def measured(self) -> dict[str, str]:
        """What each build target was measured at, by the target's name in targets()."""
        floor = f"{self.cold_build / self.floor:.2f} x floor" if self.floor else "no jobs counted"
        cold, noop, noop_kvwall, loop = self.build_cpu
        slowest = max(self.kind_floors, key=lambda kind: kind.seconds, default=None)
        return {
            f"every job kind's floor <= {KIND_FLOOR_SECONDS:g} s":
                f"{slowest.kind} {slowest.seconds:.2f} s, the slowest" if slowest else "no jobs counted",
            f"cold build <= {COLD_OVER_FLOOR:g} x floor": floor,
            f"cold build <= {COLD_SECONDS:g} s": f"{self.cold_build:.1f} s, {cold:.1f} s of CPU",
            f"device and model added, rebuild <= {CONTRIBUTOR_LOOP_SECONDS:g} s":
                f"{self.contributor_loop:.1f} s, {loop:.1f} s of CPU",
            f"no-op rebuild <= {NOOP_SECONDS:g} s":
                f"{self.noop_build:.2f} s, {noop:.2f} s of CPU, `snakemake --cores {self.cores}`",
            f"no-op rebuild, kvwall build <= {NOOP_SECONDS:g} s":
                f"{self.noop_kvwall_build:.2f} s, {noop_kvwall:.2f} s of CPU, `kvwall build --cores {self.cores}`",
        }

    def target_lines(self) -> list[str]:
        """One line per target: PASS or MISS, the target and, for the builds, what was measured."""
        measured = self.measured()
        return [f"{'PASS' if ok else 'MISS'}  {target}" + (f": {measured[target]}" if target in measured else "")
                for target, ok in self.targets().items()]


def _repository_files(repo: Path) -> list[str]:
    """Files of ``repo`` that git tracks or would track (not ignored); empty outside a git checkout."""
    try:
        listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                 cwd=repo, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return []
    return [name for name in listing.stdout.decode().split("\0") if name]


def copy_workflow(repo: Path, destination: Path) -> None:
    """Copy the repository's files (ignored ones aside) and its workflow, config, notebooks and data into ``destination``."""
    for name in _repository_files(repo):
        source = repo / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    for name in WORKFLOW_PATHS:
        source = repo / name
        if source.is_dir():
            shutil.copytree(source, destination / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.is_file():
            shutil.copy2(source, destination / name)


def _children_cpu() -> float:
    """CPU seconds (user and system) of every child process this one has waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(command: list[str], folder: Path, name: str) -> tuple[float, float, str]:
    """Run ``command`` in ``folder``; return its wall time, its CPU seconds (its processes', all of them) and its
    output. BenchmarkError, naming the command as ``name``, if it fails."""
    cpu, start = _children_cpu(), time.perf_counter()
    run = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - cpu
    log = run.stdout + run.stderr
    if run.returncode != 0:
        raise BenchmarkError(f"`{name}` failed:\n{log[-2000:]}")
    return elapsed, cpu, log


def _snakemake(folder: Path, cores: int, *extra: str) -> tuple[float, float, str]:
    """Run Snakemake in ``folder``; return the wall time, the CPU seconds and its log. BenchmarkError if it fails."""
    return _timed([sys.executable, "-m", "snakemake", "--cores", str(cores), *extra], folder,
                  f"snakemake --cores {cores} {' '.join(extra)}")


def _kvwall_build(folder: Path, cores: int) -> tuple[float, float]:
    """Run `kvwall build --cores N` in ``folder`` as a user runs it; return its wall time and CPU seconds.
    BenchmarkError if it fails."""
    command = [sys.executable, "-c", "import sys; from kvwall.cli.main import main; sys.exit(main())",
               "build", "--cores", str(cores)]
    elapsed, cpu, _ = _timed(command, folder, f"kvwall build --cores {cores}")
    return elapsed, cpu


def add_device_and_model(folder: Path) -> None:
    """Add `kvwall template`'s device and model to config/devices.yaml and config/models.yaml in ``folder``."""
    for kind, file in (("device", "devices.yaml"), ("model", "models.yaml")):
        path = folder / "config" / file
        text = path.read_text(encoding="utf-8")
        if "\nsources:\n" not in text:
            raise BenchmarkError(f"{path}: no top-level 'sources:' to add the {kind}'s source to")
        entry = ENTRIES[kind].split("\n", 1)[1]  # the entry without its 'devices:' / 'models:' line
        path.write_text(text.replace("\nsources:\n", "\nsources:\n" + SOURCES[kind], 1) + entry, encoding="utf-8")


def jobs_run(log: str) -> int:
    """Jobs a Snakemake run finished, from the build's one line per job (``[3/54] rule: output``, the kvwall logger
    of profiles/default), leaving out the target rule ``all``."""
    return sum(rule != "all" for rule in re.findall(r"^\[\d+/\d+\] ([^:\s]+): ", log, flags=re.MULTILINE))


def job_kinds(run_log: str) -> Counter[str]:
    """Jobs of a build per kind, from Snakemake's run log (.snakemake/log/): the job script its rule lists as an
    input (``workflow/scripts/<kind>.py``), else the rule's name (the target rule ``all`` aside)."""
    kinds: Counter[str] = Counter()
    for rule, inputs in re.findall(r"^(?:local)?rule (\S+):\n    input: (.*)$", run_log, flags=re.MULTILINE):
        script = re.search(r"(?:^|, )workflow/scripts/(\w+)\.py(?:,|$)", inputs)
        if script:
            kinds[script[1]] += 1
        elif rule != "all":
            kinds[rule] += 1  # a ``script:`` rule does not list its script: it runs workflow/scripts/<rule>.py
    return kinds


def script_imports(script: Path) -> tuple[str, ...]:
    """The modules a job script imports at its top level, which every job of its kind pays before it works; a script
    a ``script:`` rule runs (it reads the global ``snakemake``) also pays for Snakemake's preamble, snakemake.script."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    run_by_snakemake = any(isinstance(node, ast.Name) and node.id == "snakemake" for node in ast.walk(tree))
    modules = ["snakemake.script"] if run_by_snakemake else []
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module)
    return tuple(modules)


def installed_extras(distribution: str = "kvwall") -> tuple[str, ...]:
    """The optional extras of ``distribution`` (pyproject.toml) whose every package is installed: the benchmark's
    figures hold for the environment it ran in, and an extra's packages may change every job's imports."""
    needed: dict[str, list[str]] = {extra: [] for extra in metadata.metadata(distribution).get_all("Provides-Extra") or ()}
    for requirement in metadata.requires(distribution) or ():
        extra = re.search(r"""extra\s*==\s*['"]([^'"]+)['"]""", requirement)
        if extra and extra[1] in needed:
            needed[extra[1]].append(re.match(r"[A-Za-z0-9_.-]+", requirement)[0])

    def installed(name: str) -> bool:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return False
        return True

    return tuple(extra for extra, names in needed.items() if names and all(installed(name) for name in names))


def kind_floors(repo: Path, kinds: Counter[str]) -> tuple[KindFloor, ...]:
    """Each job kind's floor: a fresh interpreter importing what its script imports (a notebook's also starts its
    kernel's), the fastest of a few runs."""
    def seconds(kind: str) -> float:
        script = repo / "workflow" / "scripts" / f"{kind}.py"
        kernel = import_time(KERNEL_IMPORTS) if kind == NOTEBOOK_KIND else 0.0
        return import_time(script_imports(script) if script.is_file() else ()) + kernel
    return tuple(KindFloor(kind, jobs, seconds(kind)) for kind, jobs in sorted(kinds.items()))


def _run_log(folder: Path) -> str:
    """The newest Snakemake run log of ``folder``."""
    logs = sorted((folder / ".snakemake" / "log").glob("*.snakemake.log"))
    return logs[-1].read_text(encoding="utf-8") if logs else ""


def import_time(modules: tuple[str, ...], repeats: int = 5) -> float:
    """Seconds for a fresh interpreter to start and import ``modules``: the fastest of ``repeats``, as a floor is what
    a job cannot go below (the median of a few runs moves with whatever else the machine does)."""
    statement = "; ".join(f"import {m}" for m in modules)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def evaluate_grid(catalog: Catalog, serving: ServingInputs, contexts: np.ndarray, batches: np.ndarray) -> dict[str, np.ndarray]:
    """AI, s*, regime (its index in REGIMES) and 2-bit speedup of the evaluation model and device at every (s, b) point
    (SoK sections 3.1-3.5), and the per-device step-time bound and estimate of the model at TP 4 (collectives
    included). ``contexts`` and ``batches`` broadcast against each other: a column of contexts and a row of batches
    evaluate their outer product, as a sweep over (s, b) does."""
    a, model, device = catalog.assumptions, catalog.model, catalog.device
    step = device_step(model, GRID_DEPLOYMENT, contexts, batches, device.hbm_bandwidth,
                       device.dense_flops[a.compute_precision], serving.link_of(device),
                       serving.collective_latency, serving.activation_bytes, serving.hbm_bandwidth_efficiency)
    weights = step_weight_bytes(model, a.weight_bytes_per_param, batches)
    s_star = traffic_crossover(model, weights, a.kv_bytes_per_element, batches)
    s_cap = capacity_crossover(model, device.hbm_capacity, resident_weight_bytes(model, a.weight_bytes_per_param), a.kv_bytes_per_element)
    kv = step_kv_bytes(model, contexts, batches, a.kv_bytes_per_element)
    return {
        "arithmetic_intensity": arithmetic_intensity(model, contexts, batches, a.weight_bytes_per_param, a.kv_bytes_per_element),
        "traffic_crossover": s_star,
        "regime": regime_index(contexts, s_star, s_cap),
        "speedup": speedup(weights, kv, traffic_compression(a.kv_bits, GRID_KV_BITS)),
        "step_time_bound": step.bound,
        "step_time_estimate": step.estimate,
    }


def sweep_grid(catalog: Catalog, serving: ServingInputs, contexts: np.ndarray, batches: np.ndarray,
               workers: int = 1) -> dict[str, np.ndarray]:
    """evaluate_grid over the outer product of 1-D ``contexts`` and ``batches``, one (len(contexts), len(batches))
    array per quantity. The contexts are taken GRID_BLOCK_POINTS at a time, so every temporary stays in cache and
    is reused rather than faulted in from the OS; ``workers`` threads share the blocks (numpy releases the GIL)."""
    rows = max(1, GRID_BLOCK_POINTS // max(1, batches.size))
    column, row = np.asarray(contexts, dtype=float)[:, np.newaxis], np.asarray(batches, dtype=float)[np.newaxis, :]
    first = evaluate_grid(catalog, serving, column[:rows], row)
    grid = {name: np.empty((column.shape[0], row.shape[1]), dtype=values.dtype) for name, values in first.items()}

    def store(start: int, block: dict[str, np.ndarray]) -> None:
        for name, values in block.items():
            grid[name][start:start + rows] = values

    store(0, first)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda start: store(start, evaluate_grid(catalog, serving, column[start:start + rows], row)),
                      range(rows, column.shape[0], rows)))
    return grid


def grid_throughput(catalog: Catalog, points: int = 1_000_000, repeats: int = 5, workers: int = 1) -> float:
    """Grid points per second: the best of ``repeats`` sweeps (sweep_grid, ``workers`` threads) of a square (s, b)
    grid of about ``points`` points."""
    side = max(1, round(points**0.5))
    contexts, batches = np.logspace(3, 7, side), np.arange(1, side + 1, dtype=float)
    best, serving = float("inf"), load_serving_inputs(catalog)
    for _ in range(repeats):
        start = time.perf_counter()
        sweep_grid(catalog, serving, contexts, batches, workers)
        best = min(best, time.perf_counter() - start)
    return side * side / best


def validation_time(repo: Path, catalog: Catalog, repeats: int = 3) -> tuple[int, float]:
    """Rows of the reported serving measurements and the best of ``repeats`` times to evaluate them all (points,
    bounds, diagnoses, fits and format pairs), the file already read and validated."""
    rows, vmap, _ = validate_file(repo / SERVING_MEASUREMENTS, Path(catalog.files["devices"]).parent / VALIDATION_FILE,
                                  catalog, strict=False)
    serving = load_serving_inputs(catalog)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        validate(rows, catalog, vmap, serving, strict=False)
        best = min(best, time.perf_counter() - start)
    return len(rows), best


def test_suite_times(repo: Path) -> tuple[float, float]:
    """The wall times of the contributor's tests (`pytest -m "not slow"`) and of the whole suite, run in ``repo`` as
    the README runs them; a failing suite stops the benchmark."""
    times = []
    for selection in (["-m", "not slow"], []):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection], cwd=repo,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise BenchmarkError(f"pytest {' '.join(selection)} failed: {done.stdout.strip().splitlines()[-1:]}")
    return times[0], times[1]


def measure_quick_time(repo: Path) -> tuple[float, bool]:
    """The wall time of `kvwall measure --quick` as a user runs it (a new interpreter, its imports, the run, the
    record written to a temporary folder), and whether the run called itself valid (exit status 0)."""
    with tempfile.TemporaryDirectory(prefix="kvwall-measure-") as folder:
        start = time.perf_counter()
        command = "import sys; from kvwall.cli.main import main; sys.exit(main())"
        run = subprocess.run([sys.executable, "-c", command, "measure", "--quick", "--no-progress", "--output", folder],
                             cwd=repo, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
    if run.returncode not in (0, 1) or "record: " not in run.stdout:
        raise BenchmarkError(f"kvwall measure --quick failed: {run.stderr.strip()[-500:]}")
    return elapsed, run.returncode == 0


def plan_search_time(catalog: Catalog, repeats: int = 3) -> tuple[int, float]:
    """(layout, batch) points of `kvwall plan`'s search of PLAN_MODEL on up to PLAN_DEVICES, and the fastest of
    ``repeats`` searches with the best and the frontier (s)."""
    catalog = replace(catalog, assumptions=replace(catalog.assumptions, weight_dtype="fp8", kv_dtype="fp8"))
    model, device = catalog.models[PLAN_MODEL], catalog.devices[PLAN_DEVICE]
    times, points = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        curves = plan_curves(catalog, model, device, "fp8", PLAN_DEVICES, PLAN_WORKLOAD)
        best_within(curves, PLAN_WORKLOAD), frontier(curves)
        times.append(time.perf_counter() - start)
        points = sum(c.batches.size for c in curves)
    return points, min(times)


def plan_ranking(built: Path) -> tuple[RankingScore, ...]:
    """Every estimate and limit of the plan ranking summary a build wrote under ``built``."""
    with open(built / PLAN_RANKING_TABLE, newline="") as table:
        return tuple(RankingScore(row["estimate"], row["limit"], int(row["groups"]), float(row["top1_agreement"]),
                                  float(row["median_rank_correlation"]),
                                  tuple(_number(row[c]) for c in ("top1_low", "top1_high")),
                                  tuple(_number(row[c]) for c in ("against_second", "against_second_low",
                                                                  "against_second_high")))
                     for row in csv.DictReader(table))


def estimate_targets(built: Path) -> tuple[tuple[str, bool], ...]:
    """Each error target of the estimate error table a build wrote under ``built``, and whether it is met."""
    return scored(pd.read_csv(built / ESTIMATE_ERROR_TABLE))


def estimate_fit_time(repo: Path, catalog: Catalog) -> float:
    """Seconds every engine's fit and every cross-validation scheme take on the committed measurements."""
    rows, vmap, validation = validate_file(repo / SERVING_MEASUREMENTS,
                                           Path(catalog.files["devices"]).parent / VALIDATION_FILE, catalog)
    return assessment_seconds(validation.understood, rows, vmap.tokens_per_step,
                              load_serving_inputs(catalog).collective_latency, vmap.offset_pseudo_count, vmap.families)


def _number(cell: str) -> float:
    """A CSV cell as a number, NaN where it is empty."""
    return float(cell) if cell else math.nan


def _stage(text: str) -> None:
    print(f"kvwall benchmark: {text}", file=sys.stderr, flush=True)


def run_benchmark(repo: Path, catalog: Catalog, cores: int = 4, points: int = 1_000_000, tests: bool = False,
                  progress: Callable[[str], None] = _stage) -> BenchmarkResult:
    """Cold build, no-op rebuild and contributor loop of a temporary copy of ``repo``, the import floor, the grid
    throughput and, with ``tests``, the test suites' times; ``progress`` is told each stage as it starts."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="kvwall-benchmark-") as folder:
        copy = Path(folder)
        progress("copying the repository")
        copy_workflow(repo, copy)
        progress("cold build (--forceall), every job; this takes minutes")
        cold, cold_cpu, _ = _snakemake(copy, cores, "--forceall")
        kinds = job_kinds(_run_log(copy))
        ranking, estimate_error = plan_ranking(copy), estimate_targets(copy)
        progress(f"cold build took {cold:.1f} s; no-op rebuild")
        noop, noop_cpu, _ = _snakemake(copy, cores)
        progress(f"no-op rebuild took {noop:.2f} s; the same through kvwall build, twice (the first leaves its stamp)")
        _kvwall_build(copy, cores)
        noop_kvwall, noop_kvwall_cpu = _kvwall_build(copy, cores)
        progress(f"no-op kvwall build took {noop_kvwall:.2f} s; adding a device and a model, rebuilding")
        add_device_and_model(copy)
        loop, loop_cpu, loop_log = _snakemake(copy, cores)
        progress(f"contributor loop took {loop:.1f} s; interpreter floor, grid throughput, validation")
    rows, validation = validation_time(repo, catalog)
    progress("the estimate's fit and every cross-validation scheme")
    fit_time = estimate_fit_time(repo, catalog)
    progress("kvwall measure --quick")
    quick, quick_valid = measure_quick_time(repo)
    progress("kvwall plan's search")
    plan_candidates, plan_time = plan_search_time(catalog)
    if tests:
        progress('pytest -m "not slow", then the whole suite')
    fast_tests, all_tests = test_suite_times(repo) if tests else (None, None)
    progress("the README, the documentation site (mkdocs build --strict) and the import circles")
    house = house_of(repo)
    return BenchmarkResult(
        cold_build=cold,
        noop_build=noop,
        noop_kvwall_build=noop_kvwall,
        build_cpu=(cold_cpu, noop_cpu, noop_kvwall_cpu, loop_cpu),
        contributor_loop=loop,
        loop_jobs=jobs_run(loop_log),
        load_average=load,
        extras=installed_extras(),
        kind_floors=kind_floors(repo, kinds),
        cores=cores,
        grid_points=round(points**0.5) ** 2,
        grid_throughput=grid_throughput(catalog, points, workers=max(1, min(cores, os.cpu_count() or 1))),
        validation_rows=rows,
        validation_time=validation,
        measure_quick=quick,
        measure_quick_valid=quick_valid,
        plan_candidates=plan_candidates,
        plan_time=plan_time,
        plan_ranking=ranking,
        estimate_error=estimate_error,
        estimate_fit_time=fit_time,
        fast_tests=fast_tests,
        all_tests=all_tests,
        house=house,
    )
