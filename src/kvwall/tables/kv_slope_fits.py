"""The measured KV-slope table: one row per kernel of every committed record (tables/measured/kv_slope_fits.*)."""

from __future__ import annotations

from typing import Sequence

from kvwall.render import Column, Table, keyed

TABLE_ID = "kv_slope_fits"

_COLUMNS = (
    Column("record", "Record", printed=False),
    Column("platform", "Platform"),
    Column("device", "Device"),
    Column("model", "KV shapes"),
    Column("kernel", "Kernel"),
    Column("dtype", "KV dtype"),
    Column("n", "n", "measured", "int"),
    Column("intercept_ms", "a (ms)", "measured", "fixed2", "ms"),
    Column("slope_ms_per_gib", "b (ms/GiB)", "measured", "fixed2", "ms/GiB"),
    Column("slope_ci_low", "b 95% CI low", "measured", "fixed2", "ms/GiB"),
    Column("slope_ci_high", "b 95% CI high", "measured", "fixed2", "ms/GiB"),
    Column("r_squared", "R²", "measured", "fixed3"),
    Column("kv_bandwidth_gb_per_s", "KV bandwidth 1/b (GB/s)", "measured", "fixed1", "GB/s"),
    Column("copy_bandwidth_gb_per_s", "Copy bandwidth (GB/s)", "measured", "fixed1", "GB/s"),
    Column("copy_fraction", "1/b over copy", "measured", "fixed2", "ratio"),
    Column("largest_point_copy_fraction", "Largest point over copy", "measured", "fixed2", "ratio"),
    Column("compute_ceiling_gb_per_s", "Compute ceiling (GB/s)", "measured", "fixed1", "GB/s"),
    Column("roofline_binding", "Bound by", "measured"),
    Column("largest_point_roofline_fraction", "Largest point over bound", "measured", "fixed2", "ratio"),
    Column("no_overlap_gb_per_s", "No-overlap bound (GB/s)", "measured", "fixed1", "GB/s"),
    Column("slope_ratio", "b over first kernel's b", "measured", "fixed3", "ratio"),
    Column("valid", "Valid", "measured"),
)


def _platform(record: dict, device: str, entry: dict) -> str:
    platform = record["platform"]
    if device == "cuda":
        return f"{entry['name']} ({record['date']})"
    return f"{platform['cpu']}, {platform['cores']} cores ({record['date']})"


def _ceiling(entry: dict, kernel: str) -> float | None:
    """The compute ceiling measured for ``kernel`` on this device, None where none was."""
    ceiling = entry["compute_ceiling"]
    return ceiling["bandwidth_gb_per_s"] if ceiling and kernel in ceiling["applies_to"] else None


@keyed("record", "device", "kernel")
def kv_slope_table(records: Sequence[tuple[str, dict]]) -> Table:
    """Every kernel's fit in every record, in record then device then kernel order."""
    rows = []
    for stem, record in records:
        model = record["config"]["model"]
        for device, entry in record["devices"].items():
            layers = record["config"]["sweeps"][device]["layers"]
            for kernel, result in entry["kernels"].items():
                fit = result["fit"]
                rows.append({
                    "record": stem,
                    "platform": _platform(record, device, entry),
                    "device": device,
                    "model": f"{model['name']}, {layers} of {model['n_layers']} layers",
                    "kernel": kernel,
                    "dtype": entry["dtype"],
                    "n": fit["n"],
                    "intercept_ms": fit["intercept_ms"],
                    "slope_ms_per_gib": fit["slope_ms_per_gib"],
                    "slope_ci_low": fit["slope_ci_ms_per_gib"][0],
                    "slope_ci_high": fit["slope_ci_ms_per_gib"][1],
                    "r_squared": fit["r_squared"],
                    "kv_bandwidth_gb_per_s": fit["kv_bandwidth_gb_per_s"],
                    "copy_bandwidth_gb_per_s": entry["copy"]["bandwidth_gb_per_s"],
                    "copy_fraction": result["copy_fraction"],
                    "largest_point_copy_fraction": result["largest_point"]["copy_fraction"],
                    "compute_ceiling_gb_per_s": _ceiling(entry, kernel),
                    "roofline_binding": result["roofline"]["binding"],
                    "largest_point_roofline_fraction": result["roofline"]["largest_point_fraction"],
                    "no_overlap_gb_per_s": result["roofline"]["no_overlap_gb_per_s"],
                    "slope_ratio": result["slope_ratio"]["value"],
                    "valid": "yes" if result["valid"] and entry["valid"] else "no",
                })
    return Table(
        id=TABLE_ID,
        title="Measured KV slopes of decode attention, t = a + b · KV_GiB",
        caption="Per kernel: a decode step of attention timed over a batch × context grid (median of repeats per "
        "point) and fitted by least squares; b is the KV slope with its 95% confidence interval, 1/b the bandwidth "
        "at which the kernel streams KV (decimal GB/s). Copy bandwidth: a streaming copy on the same device in the same "
        "run, counting read plus write bytes. Compute ceiling: the KV bandwidth the numpy kernels' products reach on "
        "cache-resident tiles, i.e. with loads free; the roofline bound is the lower of copy and ceiling, and 'Bound by' "
        "names it; the no-overlap bound, 1 / (1/copy + 1/ceiling), is the best of a kernel that loads and multiplies in "
        "turn. A kernel is valid when no bandwidth exceeds the copy bandwidth or the "
        "device's specification. Raw timings and the platform of each run: data/measured/<record>.json.",
        columns=_COLUMNS,
        rows=tuple(rows),
        sources=tuple(f"data/measured/{stem}.json" for stem, _ in records),
    )
