"""figures/measured_kv_slope.*: our decode-step times and fits per kernel, and our slopes beside the reported ones.

One panel per measured device of each committed record (points: median step time per sweep point, bars: the
range of repeats; lines: t = a + b * KV_GiB), then one panel of KV slopes b on a log axis: ours with their 95%
confidence intervals and the reported GB10 fits (config/reported/kv_slopes.yaml), each beside the slope its own
platform's copy bandwidth allows (1 GiB / copy bandwidth) and, for our numpy kernels, the slope their measured compute
ceiling allows. Measured and reported are told apart by colour, marker and label; the reported values are drawn as
their source states them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from kvwall.figures.layout import place
from kvwall.figures.style import EVIDENCE_COLORS, colors, id_color, new_figure, settle
from kvwall.inputs.reported import Reported
from kvwall.units import GB, GiB, to_base

#: Colour of the copy-bound mark and of the compute-ceiling mark (told apart by their markers, never by a kernel's
#: colour: each measured kernel keeps its id's colour in both panels).
BOUND_COLOR = "#555555"
_MS_PER_GIB = to_base(1.0, "ms/GiB")
#: Where a slope's label may go, in order: above it, above and to either side, below it.
SLOPE_LABEL_AT = ((0, 7, "center", "bottom"), (5, 7, "left", "bottom"), (-5, 7, "right", "bottom"), (0, -7, "center", "top"))


@dataclass(frozen=True)
class SlopeRow:
    """One row of the slope panel: a label, the slope (ms/GiB), its interval, the copy- and compute-bound slopes
    (None where no compute ceiling was measured), the class."""

    label: str
    kernel: str  # the id that keys the row's colour (a measured kernel; the reported fit's id)
    slope: float
    interval: tuple[float, float] | None
    copy_bound: float
    compute_bound: float | None
    evidence: str


def copy_bound_slope(copy_bandwidth_gb_per_s: float) -> float:
    """The KV slope of a kernel streaming at the copy bandwidth: 1 GiB / bandwidth, in ms/GiB."""
    return GiB / (copy_bandwidth_gb_per_s * GB) * 1e3


def _device_label(record: dict, device: str, entry: dict) -> str:
    name = entry["name"] if device == "cuda" else f"{record['platform']['cpu']}, {record['platform']['cores']} cores"
    return f"{name}, {record['date']}"


def measured_rows(records: Sequence[tuple[str, dict]]) -> list[SlopeRow]:
    rows = []
    for _, record in records:
        for device, entry in record["devices"].items():
            bound = copy_bound_slope(entry["copy"]["bandwidth_gb_per_s"])
            ceiling = entry["compute_ceiling"]
            for kernel, result in entry["kernels"].items():
                fit = result["fit"]
                compute = copy_bound_slope(ceiling["bandwidth_gb_per_s"]) if ceiling and kernel in ceiling["applies_to"] else None
                rows.append(SlopeRow(f"{kernel}\n{_device_label(record, device, entry)}", kernel, fit["slope_ms_per_gib"],
                                     tuple(fit["slope_ci_ms_per_gib"]), bound, compute, "measured"))
    return rows


def reported_rows(reported: Mapping[str, Reported], platform: str, fits: Sequence[str]) -> list[SlopeRow]:
    bound = copy_bound_slope(reported[f"{platform}.copy-bandwidth"].value / GB)
    return [
        SlopeRow(f"{reported[f'fit.{fit}.framework'].text}\nreported, {platform.upper()}", fit,
                 reported[f"fit.{fit}.slope"].value / _MS_PER_GIB, None, bound, None, "reported")
        for fit in fits
    ]


def _line_text(intercept: float, slope: float) -> str:
    """t = b·KV + a as text with both units, the sign of a written out: 58.5 ms/GiB · KV − 0.04 ms."""
    return f"{slope:.1f} ms/GiB · KV {'+' if intercept >= 0 else '−'} {abs(intercept):.2f} ms"


def _fit_panel(ax, record: dict, device: str, entry: dict) -> None:
    palette = colors(list(entry["kernels"]))
    top = max(p["kv_gib"] for k in entry["kernels"].values() for p in k["points"])
    grid = np.linspace(0.0, top * 1.05, 50)
    for kernel, result in entry["kernels"].items():
        points = result["points"]
        x = np.array([p["kv_gib"] for p in points])
        median = np.array([p["median_ms"] for p in points])
        low = median - np.array([min(p["times_s"]) for p in points]) * 1e3
        high = np.array([max(p["times_s"]) for p in points]) * 1e3 - median
        fit = result["fit"]
        ax.errorbar(x, median, yerr=[low, high], fmt="o", ms=3.5, capsize=2, color=palette[kernel], lw=0.8)
        ax.plot(grid, fit["intercept_ms"] + fit["slope_ms_per_gib"] * grid, color=palette[kernel],
                label=f"{kernel}: {_line_text(fit['intercept_ms'], fit['slope_ms_per_gib'])}, R² {fit['r_squared']:.4f}")
    sweep = record["config"]["sweeps"][device]
    model = record["config"]["model"]
    ax.set_title(f"measured: {_device_label(record, device, entry)}", loc="left")
    ax.set_xlabel(f"KV read per step (GiB; {model['name']}, {sweep['layers']} of {model['n_layers']} layers, {entry['dtype']})")
    ax.set_ylabel("decode attention step (ms)")
    ax.set_xlim(-top * 0.04, top * 1.05)  # the first x label clear of the first y label
    ax.set_ylim(0.0, 1.3 * max(max(p["times_s"]) for k in entry["kernels"].values() for p in k["points"]) * 1e3)
    ax.legend(loc="upper left", fontsize=6)


def _slope_panel(ax, rows: Sequence[SlopeRow]) -> None:
    y = np.arange(len(rows))[::-1]
    for position, row in zip(y, rows):
        measured = row.evidence == "measured"
        color = id_color(row.kernel) if measured else EVIDENCE_COLORS["reported"]
        if row.interval is not None:
            ax.errorbar(row.slope, position, xerr=[[row.slope - row.interval[0]], [row.interval[1] - row.slope]],
                        fmt="o", ms=5, capsize=3, color=color)
        else:
            ax.plot(row.slope, position, "D", ms=5, mfc="white", mec=color, mew=1.4)
        ax.plot(row.copy_bound, position, "|", ms=12, mew=1.6, color=BOUND_COLOR)
        if row.compute_bound is not None:
            ax.plot(row.compute_bound, position, "x", ms=6, mew=1.4, color=BOUND_COLOR)
        ax.annotate(f"{row.slope:.2f} ms/GiB ({'measured here, 95% CI' if measured else row.evidence})",
                    (row.slope, position), textcoords="offset points",
                    xytext=(0, 7), ha="center", fontsize=6.5, color=color, gid="slope label")
    ax.plot([], [], "D", mfc="white", mec=EVIDENCE_COLORS["reported"], color=EVIDENCE_COLORS["reported"],
            label="reported (GB10)")
    ax.plot([], [], "|", ms=10, mew=1.6, color=BOUND_COLOR, label="copy bound of that platform: 1 GiB / copy bandwidth")
    if any(row.compute_bound is not None for row in rows):
        ax.plot([], [], "x", ms=6, mew=1.4, color=BOUND_COLOR,
                label="compute bound of numpy's products: 1 GiB / compute ceiling")
    ax.set_xscale("log")
    ax.set_yticks(y, [row.label for row in rows], fontsize=6.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("KV slope b (ms/GiB, log scale); lower is faster")
    ax.set_title("KV slopes: measured here and reported", loc="left")
    ax.set_xlim(min(min(r.slope, r.copy_bound) for r in rows) / 1.6, max(r.slope for r in rows) * 3)
    ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1)
    ax.grid(axis="y", visible=False)


def kv_slope_figure(records: Sequence[tuple[str, dict]], reported: Mapping[str, Reported], platform: str,
                    fits: Sequence[str]) -> Figure:
    """Fit panels for every (record, device), then the slope panel."""
    panels = [(record, device, entry) for _, record in records for device, entry in record["devices"].items()]
    figure = new_figure(4.6 * (len(panels) + 1), 4.2, "measured, reported")
    axes = figure.subplots(1, len(panels) + 1, squeeze=False)[0]
    for ax, (record, device, entry) in zip(axes, panels):
        _fit_panel(ax, record, device, entry)
    _slope_panel(axes[-1], measured_rows(records) + reported_rows(reported, platform, fits))
    settle(figure)
    labels = [text for text in axes[-1].texts if text.get_gid() == "slope label"]
    for label in labels:
        place(label, SLOPE_LABEL_AT, keep_clear=labels)
    return figure
