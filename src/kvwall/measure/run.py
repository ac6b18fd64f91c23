"""One measurement run: every kernel of every device over its batch x context grid, with its bounds timed beside it.

Repeats are passes over the whole grid (smallest point first, then largest first, alternately), so a slow spell of
the machine falls on every point alike instead of on a few. At each visit all kernels of the device are set up for
the point, warmed up (not kept), and timed once each after one timed copy and one timed compute ceiling (where the
device has one), the kernel order rotating per pass.
Times are wall-clock (time.perf_counter) around a call that returns once the device has finished, except on CUDA,
where each step is one CUDA graph timed by CUDA events around its replay (kvwall.measure.torch_decode.GraphReplay);
each kernel's record names its timing.
"""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

from tqdm import tqdm

from kvwall.inputs.catalog import Catalog
from kvwall.measure.analysis import ceiling_summary, copy_summary, kernel_summary, ordering_check, point_summary
from kvwall.measure.config import MeasureConfig, Sweep, named_device
from kvwall.measure.fingerprint import cpu_steal_seconds, fingerprint, load_average, worker_count
from kvwall.measure.compute_ceiling import TILES_PER_WORKER
from kvwall.measure.kernels import DeviceBench, Step, kernels_by_device
from kvwall.measure.shape import DecodeShape, measured_kv_bytes
from kvwall.units import GB

#: Version of the record layout (kvwall/inputs/schemas/measured_record.schema.yaml).
RECORD_VERSION = 2
#: The time constant of the kernel's 1-minute load average, in seconds (an exponentially damped mean).
LOAD_WINDOW_S = 60.0


def load_flags(load: dict | None, workers: int, elapsed_s: float, max_load_per_cpu: float) -> list[str]:
    """Why the machine was too busy for the run: other work's 1-minute load average above ``max_load_per_cpu`` per
    CPU before the run, or after it once the run's own share is taken off (its ``workers`` busy for ``elapsed_s``
    raise the average by at most workers x (1 - exp(-elapsed / 60 s)))."""
    if load is None:
        return []
    own = workers * (1 - math.exp(-elapsed_s / LOAD_WINDOW_S))
    others = max(load["before"][0], load["after"][0] - own)
    limit = max_load_per_cpu * load["cpus"]
    if others <= limit:
        return []
    return [f"machine busy: a 1-minute load average of {others:.2f} from other work on {load['cpus']} CPUs, above "
            f"{limit:.2f} ({max_load_per_cpu:g} per CPU, validity.load_per_cpu of the measure settings)"]


def timed(step: Step) -> float:
    """Seconds of one call: the step's own clock where it keeps one (a CUDA graph's events), else the host's."""
    if hasattr(step, "elapsed"):
        return step.elapsed()
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def _spec(config: MeasureConfig, catalog: Catalog, device: str, name: str) -> dict | None:
    """The catalogue device whose name fragment (config device_specs) appears in the GPU's name."""
    spec = named_device(catalog, config.device_specs, name) if device == "cuda" else None
    return None if spec is None else {"device": spec.id, "hbm_bandwidth_gb_per_s": spec.hbm_bandwidth / GB}


def _time_device(config: MeasureConfig, sweep: Sweep, bench: DeviceBench, progress: tqdm,
                 device: str) -> tuple[dict, dict | None, dict[str, list[dict]]]:
    """Raw timings of the copy, the compute ceiling and every kernel at every point of ``sweep``, one repeat per pass."""
    shapes = [DecodeShape.of(config.model, sweep.layers, b, c, sweep.dtype) for b, c in sweep.points]
    for shape in shapes:
        if measured_kv_bytes(config.model, shape) != shape.kv_bytes:
            raise AssertionError(f"KV bytes of {shape} disagree with SoK Eq. 1")
    largest = max(shapes, key=lambda shape: shape.kv_bytes)
    kernels = bench.kernels
    builders = [kernel.prepare(largest) for kernel in kernels]
    copy = bench.copy(sweep.copy_buffer_bytes)
    ceiling = bench.ceiling(largest) if bench.ceiling else None
    copy_times = [[] for _ in shapes]
    ceiling_times = []
    times = [[[] for _ in shapes] for _ in kernels]
    try:
        for _ in range(sweep.warmup):
            copy()
            if ceiling:
                ceiling()
        for repeat in range(sweep.repeats):
            order = range(len(shapes)) if repeat % 2 == 0 else reversed(range(len(shapes)))
            for p in order:
                progress.set_postfix_str(f"{device} batch {shapes[p].batch} context {shapes[p].context}")
                steps = [build(shapes[p]) for build in builders]
                try:
                    for step in steps:
                        for _ in range(sweep.warmup):
                            step()
                    copy_times[p].append(timed(copy))
                    if ceiling:
                        ceiling_times.append(timed(ceiling))
                    for k in ((repeat + j) % len(kernels) for j in range(len(kernels))):
                        times[k][p].append(timed(steps[k]))
                finally:
                    for step in steps:
                        step.close()
                progress.update(1)
        all_copies = [t for point in copy_times for t in point]
        copy_record = {
            "buffer_bytes": sweep.copy_buffer_bytes,
            "bytes_counted": copy.bytes_counted,
            "counting": "each copy reads the buffer once and writes it once: 2 x buffer bytes (STREAM Copy); "
                        "write-allocate traffic is not counted",
            "times_s": all_copies,
            **copy_summary(all_copies, copy.bytes_counted),
        }
        ceiling_record = None if ceiling is None else {
            "applies_to": list(bench.ceiling_applies_to),
            "tile_tokens": config.tile_tokens,
            "tiles_per_worker": TILES_PER_WORKER,
            "bytes_counted": ceiling.bytes_counted,
            "flop_per_byte": ceiling.flop_per_byte,
            "counting": f"each worker multiplies {TILES_PER_WORKER} cache-resident K and V tiles of {config.tile_tokens} "
                        "tokens (scores, then weighted sum); KV bytes of those tiles over all workers",
            "times_s": ceiling_times,
            **ceiling_summary(ceiling_times, ceiling.bytes_counted, ceiling.flops_counted),
        }
        points = {
            kernel.name: [
                {"batch": shape.batch, "context": shape.context, "kv_bytes": shape.kv_bytes, "times_s": times[k][p],
                 "copy_times_s": copy_times[p], **point_summary(shape.kv_bytes, times[k][p], copy_times[p], copy.bytes_counted)}
                for p, shape in enumerate(shapes)
            ]
            for k, kernel in enumerate(kernels)
        }
    finally:
        copy.close()
        if ceiling:
            ceiling.close()
        for build in builders:
            build.close()
    return copy_record, ceiling_record, points


def measure(config: MeasureConfig, catalog: Catalog, progress: bool = True) -> dict:
    """Run the benchmark on this machine and return its record (see kvwall/inputs/schemas/measured_record.schema.yaml)."""
    workers = worker_count()
    platform = fingerprint()
    devices = kernels_by_device(config, workers)
    total = sum(len(config.sweeps[d].points) * config.sweeps[d].repeats for d in devices)
    load_before = load_average()
    started, steal_before = time.perf_counter(), cpu_steal_seconds()
    results = {}
    with tqdm(total=total, desc="kvwall measure", unit="point", disable=not progress) as bar:
        for device, bench in devices.items():
            sweep = config.sweeps[device]
            copy, ceiling, points = _time_device(config, sweep, bench, bar, device)
            name = platform["cpu"] if device == "cpu" else platform["gpu"]["name"]
            spec = _spec(config, catalog, device, name)
            spec_bandwidth = spec["hbm_bandwidth_gb_per_s"] if spec else None
            copy_flags = []
            if spec_bandwidth is not None and copy["bandwidth_gb_per_s"] > spec_bandwidth:
                copy_flags.append(f"copy bandwidth {copy['bandwidth_gb_per_s']:.1f} GB/s exceeds the specification {spec_bandwidth:.1f} GB/s")
            summaries = {}
            for kernel in bench.kernels:
                bounded = ceiling is not None and kernel.name in ceiling["applies_to"]
                summary = kernel_summary(points[kernel.name], copy["bandwidth_gb_per_s"], spec_bandwidth, config.confidence,
                                         config.targets, ceiling["bandwidth_gb_per_s"] if bounded else None,
                                         min_r_squared=config.min_r_squared, max_spread=config.max_spread,
                                         min_growth=config.min_batch_growth)
                summaries[kernel.name] = {"layout": kernel.layout, "library": kernel.library, "timing": kernel.timing,
                                          "points": points[kernel.name], **summary}
            for name, flags in ordering_check(summaries).items():
                summaries[name]["flags"] = summaries[name]["flags"] + flags
                summaries[name]["valid"] = False
            reference = bench.kernels[0].name
            for entry in summaries.values():
                entry["slope_ratio"] = {"reference": reference, "value": entry["fit"]["slope_ms_per_gib"] / summaries[reference]["fit"]["slope_ms_per_gib"]}
            results[device] = {
                "name": name, "spec": spec, "dtype": sweep.dtype, "copy": copy, "compute_ceiling": ceiling, "flags": copy_flags,
                "valid": not copy_flags and all(k["valid"] for k in summaries.values()), "kernels": summaries,
            }
    steal_after, elapsed, load_after = cpu_steal_seconds(), time.perf_counter() - started, load_average()
    load = None if load_before is None or load_after is None else {"cpus": workers, "before": load_before, "after": load_after}
    run_flags = load_flags(load, workers, elapsed, config.max_load_per_cpu)
    model = config.model
    return {
        "record_version": RECORD_VERSION,
        "evidence": "measured",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "mode": config.mode,
        "platform": platform,
        "run": {
            "elapsed_s": elapsed,
            "cpu_steal_s": None if steal_before is None else steal_after - steal_before,
            "workers": workers,
            "load": load,
            "flags": run_flags,
        },
        "config": {
            "file": config.file,
            "model": {"id": model.id, "name": model.name, "n_layers": model.n_layers, "n_q_heads": model.n_q_heads,
                      "n_kv_heads": model.n_kv_heads, "head_dim": model.head_dim},
            "block_size": config.block_size,
            "tile_tokens": config.tile_tokens,
            "seed": config.seed,
            "confidence": config.confidence,
            "targets": dict(config.targets),
            "sweeps": {device: config.sweeps[device].as_record() for device in devices},
        },
        "devices": results,
        "valid": not run_flags and all(d["valid"] for d in results.values()),
    }
