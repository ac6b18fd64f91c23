"""A record in words: per device its bounds, per kernel the fit and how far it is from the bounds and the targets."""

from __future__ import annotations


def _fraction(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def summary_lines(record: dict) -> list[str]:
    """What `kvwall measure` prints after a run (all values measured)."""
    model = record["config"]["model"]
    lines = [f"kvwall measure ({record['mode']}): {model['name']} KV shapes, {record['platform']['cpu']}, "
             f"{record['platform']['cores']} cores; all values measured"]
    run = record["run"]
    load = run.get("load")
    if load:
        lines.append(f"machine: load average {' '.join(f'{v:.2f}' for v in load['before'])} before, "
                     f"{' '.join(f'{v:.2f}' for v in load['after'])} after (1, 5, 15 min) on {load['cpus']} CPUs; "
                     f"run {run['elapsed_s']:.1f} s")
    for device, entry in record["devices"].items():
        sweep = record["config"]["sweeps"][device]
        copy = entry["copy"]
        spec = f"; spec {entry['spec']['hbm_bandwidth_gb_per_s']:.0f} GB/s ({entry['spec']['device']})" if entry["spec"] else ""
        lines.append(f"{device}: {entry['name']}, {sweep['layers']} of {model['n_layers']} layers in {entry['dtype']}; "
                     f"copy bandwidth {copy['bandwidth_gb_per_s']:.1f} GB/s (2 x {copy['buffer_bytes'] / 2**20:.0f} MiB per copy, "
                     f"median of {len(copy['times_s'])}){spec}")
        ceiling = entry["compute_ceiling"]
        if ceiling:
            lines.append(f"  compute ceiling of {', '.join(ceiling['applies_to'])}: {ceiling['bandwidth_gb_per_s']:.1f} GB/s "
                         f"of KV ({ceiling['gflop_per_s']:.0f} GFLOP/s at {ceiling['flop_per_byte']:g} FLOP/B, "
                         f"cache-resident tiles, median of {len(ceiling['times_s'])})")
        for name, kernel in entry["kernels"].items():
            fit = kernel["fit"]
            low, high = fit["slope_ci_ms_per_gib"]
            bandwidth = "no bandwidth (slope not positive)" if fit["kv_bandwidth_gb_per_s"] is None else \
                f"KV bandwidth {fit['kv_bandwidth_gb_per_s']:.1f} GB/s = {_fraction(kernel['copy_fraction'])} of copy"
            lines.append(f"  {name:18s} t = {fit['intercept_ms']:.2f} + {fit['slope_ms_per_gib']:.2f} * KV_GiB ms "
                         f"(slope {100 * fit['confidence']:.0f}% CI {low:.2f} to {high:.2f}), R^2 {fit['r_squared']:.4f}, "
                         f"n {fit['n']}; {bandwidth}; slope / {kernel['slope_ratio']['reference']} "
                         f"{kernel['slope_ratio']['value']:.3f}")
            top = kernel["largest_point"]
            lines.append(f"  {'':18s} largest point {top['kv_gib']:.2f} GiB: {top['bandwidth_gb_per_s']:.1f} GB/s = "
                         f"{_fraction(top['copy_fraction'])} of the copy bandwidth beside it")
            roof = kernel["roofline"]
            no_overlap = "" if roof["no_overlap_gb_per_s"] is None else \
                f"; {roof['no_overlap_gb_per_s']:.1f} GB/s if loads and products never overlap"
            lines.append(f"  {'':18s} roofline bound {roof['bandwidth_gb_per_s']:.1f} GB/s ({roof['binding']}-bound): "
                         f"largest point at {_fraction(roof['largest_point_fraction'])} of it{no_overlap}")
            for target, check in kernel["targets"].items():
                lines.append(f"  {'':18s} {'MET ' if check['met'] else 'MISS'} {target} >= {check['target']:g} "
                             f"(got {check['value']:.3f})")
            if "repeat_spread" in kernel:
                lines.append(f"  {'':18s} repeats spread {100 * kernel['repeat_spread']:.0f}% of their median at a typical point")
            if kernel.get("batch_growth") is not None:
                lines.append(f"  {'':18s} at a fixed context the step grows {100 * kernel['batch_growth']:.0f}% as fast as "
                             "its KV bytes with the batch")
            lines.extend(f"  {'':18s} INVALID: {flag}" for flag in kernel["flags"])
        lines.extend(f"  INVALID: {flag}" for flag in entry["flags"])
    lines.extend(f"INVALID: {flag}" for flag in run.get("flags", []))
    lines.append("valid run" if record["valid"] else "INVALID run: see the reasons marked INVALID above")
    return lines
