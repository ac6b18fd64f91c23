"""`kvwall measure --profile`: a model's decode operations timed one by one on this machine's device, then the whole
step, set against the sum of its operations and the device's datasheet (class measured).

For every batch x context x format of the grid, each operation of kvwall.measure.operations is timed alone (its
realized bandwidth, bytes over time, and FLOP rate), then every layer's operations and the LM head run in order as
one step (on CUDA, one graph). The step over the sum of its operations says whether the operations, each timed
alone, price the step: their sum is what an estimate built on them would give. What a run cannot time is refused
in one line before anything is allocated: no torch, a format the device cannot multiply, a cache kind the profile
does not cover, inputs larger than the device's memory at the grid's largest point.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import numpy as np

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Model
from kvwall.measure.config import named_device
from kvwall.measure.fingerprint import fingerprint, load_average, worker_count
from kvwall.measure.operations import decode_operations, not_covered
from kvwall.measure.profile_grid import ProfileGrid
from kvwall.measure.torch_decode import _torch, torch_device, torch_installed
from kvwall.units import GB, MS, UNITS, US

#: Version of the profile record's layout (kvwall/inputs/schemas/profile_record.schema.yaml).
PROFILE_VERSION = 1
TFLOP_PER_S = UNITS["TFLOP/s"][1]


class ProfileRefused(Exception):
    """A profile that cannot run here: one line, before anything is allocated."""


def _input_bytes(model: Model, grid: ProfileGrid) -> float:
    """Bytes the largest point's operations hold at once: each operation's copies of its inputs."""
    from kvwall.measure.torch_operations import copies_for

    largest = decode_operations(model, max(grid.batches), max(grid.contexts), "bf16")
    return sum(copies_for(op) * op.moved_bytes for op in largest)


def refusals(model: Model, grid: ProfileGrid, device: str | None) -> list[str]:
    """Why the profile cannot run for ``model`` on ``device`` (None: no torch); empty when it can."""
    if device is None:
        return ["the profile times torch calls: install the extra (uv sync --frozen --extra torch)"]
    from kvwall.measure.torch_operations import format_refusal

    reasons = [f"{model.id}: {reason}" for reason in not_covered(model)]
    reasons += [f"--format {fmt}: {reason}" for fmt in grid.formats if (reason := format_refusal(fmt, device))]
    if not reasons:
        needed = _input_bytes(model, grid)
        free = _torch().cuda.mem_get_info()[0] if device == "cuda" else fingerprint()["memory_bytes"]
        if free is not None and needed > 0.8 * free:
            reasons.append(f"{model.id}: the inputs of batch {max(grid.batches)} at {max(grid.contexts):,} tokens take "
                           f"{needed / GB:.1f} GB, more than 80% of the {free / GB:.1f} GB free on the {device}")
    return reasons


def _median(times: list[float]) -> float:
    return float(np.median(times))


def _time_point(model: Model, batch: int, context: int, weight_format: str, grid: ProfileGrid, device: str,
                generator) -> dict:
    """Every operation of one point alone, then the whole step; raw times kept."""
    from kvwall.measure.torch_operations import TorchOperation, copies_for
    from kvwall.measure.torch_timing import Timer

    ops = decode_operations(model, batch, context, weight_format)
    runs = [TorchOperation(op, device, generator) for op in ops]
    try:
        rows = []
        for op, run in zip(ops, runs):
            calls = copies_for(op)
            timer = Timer(lambda run=run, calls=calls: [run() for _ in range(calls)], device)
            for _ in range(grid.warmup):
                timer.replay()
            times = [timer() / calls for _ in range(grid.repeats)]
            timer.close()
            median = _median(times)
            rows.append({"name": op.name, "kind": op.kind, "m": op.m, "n": op.n, "k": op.k, "groups": op.groups,
                         "context": op.context, "head_dim": op.head_dim, "weight_format": op.weight_format,
                         "count": op.count, "moved_bytes": op.moved_bytes, "flops": op.flops, "times_s": times,
                         "median_s": median, "gb_per_s": op.moved_bytes / median / GB,
                         "tflop_per_s": op.flops / median / TFLOP_PER_S})
        layers = {op.name: op.count for op in ops}

        def step():
            for layer in range(model.n_layers):
                for op, run in zip(ops, runs):
                    if op.name != "lm_head" and layer < layers[op.name]:
                        run()
            runs[-1]()

        timer = Timer(step, device)
        for _ in range(grid.warmup):
            timer.replay()
        step_times = [timer() for _ in range(grid.repeats)]
        timer.close()
        summed = sum(row["median_s"] * row["count"] for row in rows)
        step_median = _median(step_times)
        return {"batch": batch, "context": context, "weight_format": weight_format, "operations": rows,
                "step": {"times_s": step_times, "median_s": step_median, "timing": timer.timing},
                "sum_of_operations_s": summed, "step_over_sum": step_median / summed}
    finally:
        for run in runs:
            run.close()


def _spec(catalog: Catalog, device_specs: dict, device: str, name: str) -> dict | None:
    """The catalogue device the GPU's name names (config device_specs), with its datasheet rates."""
    spec = named_device(catalog, device_specs, name) if device == "cuda" else None
    return None if spec is None else {"device": spec.id, "hbm_bandwidth_gb_per_s": spec.hbm_bandwidth / GB,
                                      "dense_tflop_per_s": {fmt: rate / TFLOP_PER_S for fmt, rate in spec.dense_flops.items()}}


def flags_of(record: dict) -> list[str]:
    """The reasons a profile's numbers cannot be right: an operation above its datasheet bandwidth or dense peak."""
    spec = record["device"]["spec"]
    if spec is None:
        return []
    flags = []
    for point in record["points"]:
        peak = spec["dense_tflop_per_s"].get(point["weight_format"])
        for row in point["operations"]:
            where = f"batch {point['batch']}, context {point['context']}, {point['weight_format']}: {row['name']}"
            if row["gb_per_s"] > spec["hbm_bandwidth_gb_per_s"]:
                flags.append(f"{where} moves {row['gb_per_s']:.0f} GB/s, above the datasheet's "
                             f"{spec['hbm_bandwidth_gb_per_s']:.0f} GB/s: its inputs were cached, not read")
            if peak is not None and row["tflop_per_s"] > peak:
                flags.append(f"{where} runs {row['tflop_per_s']:.0f} TFLOP/s, above the dense peak {peak:.0f}")
    return flags


def profile(model: Model, grid: ProfileGrid, catalog: Catalog, device_specs: dict, mode: str, seed: int = 0) -> dict:
    """Time the profile on this machine's device and return its record; ProfileRefused before any allocation."""
    device = torch_device() if torch_installed() else None
    reasons = refusals(model, grid, device)
    if reasons:
        raise ProfileRefused("; ".join(reasons))
    platform = fingerprint()
    name = platform["gpu"]["name"] if device == "cuda" else platform["cpu"]
    generator = _torch().Generator(device=device).manual_seed(seed)
    load_before, started = load_average(), time.perf_counter()
    points = [_time_point(model, b, c, fmt, grid, device, generator)
              for fmt in grid.formats for b in grid.batches for c in grid.contexts]
    elapsed = time.perf_counter() - started
    load_after = load_average()
    record = {
        "record_version": PROFILE_VERSION,
        "kind": "profile",
        "evidence": "measured",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "mode": mode,
        "platform": platform,
        "run": {"elapsed_s": elapsed, "workers": worker_count(),
                "load": None if load_before is None or load_after is None else
                {"cpus": worker_count(), "before": load_before, "after": load_after}},
        "model": {"id": model.id, "name": model.name},
        "grid": grid.as_record(),
        "device": {"kind": device, "name": name, "spec": _spec(catalog, device_specs, device, name),
                   "torch": _torch().__version__},
        "points": points,
    }
    record["flags"] = flags_of(record)
    record["valid"] = not record["flags"]
    return record


def summary_lines(record: dict) -> list[str]:
    """What `kvwall measure --profile` prints: per point, each operation's realized rates, and the step against the
    sum of its operations (all measured; a share of the datasheet derived from it)."""
    spec = record["device"]["spec"]
    lines = [f"kvwall measure --profile ({record['mode']}): {record['model']['name']} decode operations on "
             f"{record['device']['name']}; all times measured"]
    within = record["grid"]["step_within"]
    for point in record["points"]:
        lines.append(f"batch {point['batch']}, context {point['context']:,}, {point['weight_format']}: step "
                     f"{point['step']['median_s'] / MS:.3f} ms, sum of its operations {point['sum_of_operations_s'] / MS:.3f} ms "
                     f"({point['step_over_sum']:.2f}x; {'MET ' if abs(point['step_over_sum'] - 1) <= within else 'MISS'} "
                     f"within {within:.0%})")
        for row in point["operations"]:
            share = "" if spec is None else f" = {row['gb_per_s'] / spec['hbm_bandwidth_gb_per_s']:.0%} of the datasheet"
            lines.append(f"  {row['name']:16s} x{row['count']:<3d} {row['median_s'] / US:10.1f} us  "
                         f"{row['gb_per_s']:8.1f} GB/s{share}  {row['tflop_per_s']:8.2f} TFLOP/s")
    lines.extend(f"INVALID: {flag}" for flag in record["flags"])
    lines.append("valid profile" if record["valid"] else "INVALID profile: see the reasons above")
    return lines
