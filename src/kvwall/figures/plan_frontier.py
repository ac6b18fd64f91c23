"""The frontier `kvwall plan` derives (tokens/s per GPU against tokens/s per user) with the engines' measured points
on top, one panel per model (kvwall.plan.frontiers): the datasheet frontier and each measured engine's calibrated one
with the band its held-out TPOT error gives (derived lines, the band shaded), reported markers, never one colour."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from kvwall.figures.serving import engine_name
from kvwall.figures.style import EVIDENCE_COLORS, new_figure, settle
from kvwall.inputs.catalog import Catalog


#: A marker per engine, so that engines measured on one panel never share one, and a line style per engine for its
#: calibrated frontier.
ENGINE_MARKERS = {"sglang": "s", "trtllm": "^", "vllm": "o"}
ENGINE_LINES = {"sglang": ":", "trtllm": "--", "vllm": "-."}
#: The colour of a calibrated frontier and its band: derived from reported data, neither datasheet nor measurement.
CALIBRATED_COLOR = "#2e8540"


#: On log-log axes a frontier is drawn through points at least this far apart (in decades) along either axis: a
#: fraction of a pixel at the figure's size, where a frontier holds thousands of points a few ulps apart.
DRAWN_STEP_DECADES = 0.002


def drawn(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of a curve worth drawing on log-log axes: its first and last, and between them each point at
    least DRAWN_STEP_DECADES from the last one kept along either axis."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size <= 2:
        return x, y
    lx, ly = np.log10(x), np.log10(y)
    kept, last = [0], 0
    for i in range(1, x.size - 1):
        if abs(lx[i] - lx[last]) >= DRAWN_STEP_DECADES or abs(ly[i] - ly[last]) >= DRAWN_STEP_DECADES:
            kept.append(i)
            last = i
    kept.append(x.size - 1)
    return x[kept], y[kept]


def draw(panels: Sequence, catalog: Catalog) -> Figure:
    """``panels``: kvwall.plan.frontiers.FrontierPanel, each drawn on log-log axes."""
    fig = new_figure(2.9 * max(len(panels), 1) + 0.4, 3.8, "derived frontier, reported measurements")
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for ax, panel in zip(axes, panels):
        ax.plot(*drawn(panel.frontier_per_user, panel.frontier_per_gpu), "-", color=EVIDENCE_COLORS["derived"],
                label="kvwall plan's frontier at datasheet rates (derived)")
        for engine, edge in panel.calibrated.items():
            per_user, per_gpu = drawn([p.tokens_per_second_per_user for p in edge.points],
                                      [p.tokens_per_second_per_device for p in edge.points])
            # measured = estimate x r, r within the band: both rates divide by r
            ax.fill(np.r_[per_user / edge.low, (per_user / edge.high)[::-1]],
                    np.r_[per_gpu / edge.low, (per_gpu / edge.high)[::-1]], color=CALIBRATED_COLOR, alpha=0.12,
                    linewidth=0, label="80% of measured points' band, held out")
            ax.plot(per_user, per_gpu, ENGINE_LINES.get(engine, "-"), color=CALIBRATED_COLOR, linewidth=1.0,
                    label=f"{engine_name(engine)}, calibrated (derived from reported)")
        for engine, (per_user, per_gpu) in panel.measured.items():
            ax.plot(per_user, per_gpu, ENGINE_MARKERS.get(engine, "D"), mfc="none", ms=4, color=EVIDENCE_COLORS["reported"],
                    label=f"{engine_name(engine)}, measured (reported)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("tokens/s per user")
        ax.set_ylabel("tokens/s per GPU")
        ax.set_title(f"{catalog.models[panel.model].name} on up to {panel.devices} x "
                     f"{catalog.devices[panel.device].name}\n{panel.weight_format.upper()} weights, 1,024 in / 1,024 out",
                     fontsize=8)
        ax.grid(alpha=0.3, which="both")
    entries = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(list(entries.values()), list(entries), fontsize=7, loc="outside lower center", ncols=2)
    fig.suptitle("What kvwall plan derives against what the engines measured (frontiers: derived; band: the held-out "
                 "error; points: reported)", fontsize=9)
    return settle(fig)
