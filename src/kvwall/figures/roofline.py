"""Figure 3: the roofline of each device (SoK section 3.3, Table 3) with the decode operating points of W1 and W2
(Table 6) across contexts: every point sits on the bandwidth slope, left of the ridge."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.inputs.catalog import Catalog
from kvwall.figures.layout import place
from kvwall.figures.style import colors, label_panel_grid, new_figure, settle, tokens_label
from kvwall.model.roofline import arithmetic_intensity, ridge_point, step_flops, step_kv_bytes, step_time, step_weight_bytes
from kvwall.inputs.specs import Device, Workload

#: Intensities the roof is drawn over, in FLOP/B.
INTENSITIES = np.geomspace(0.1, 3000, 200)

#: Contexts of the operating points, as multiples of the workload's context (128k: 8k ... 1M).
CONTEXT_MULTIPLES = 2.0 ** np.arange(-4, 4)

#: Where a ridge or operating-point label may go, in order: below right of its point, then around it.
LABEL_AT = ((6, -6, "left", "top"), (3, -4, "left", "top"), (-6, 6, "right", "bottom"), (6, 6, "left", "bottom"),
            (-6, -6, "right", "top"), (-3, -4, "right", "top"), (12, -12, "left", "top"), (-12, 12, "right", "bottom"))

#: The workloads whose operating points are drawn.
WORKLOADS = ("w1", "w2")


def roof(device: Device, precision: str, intensities=INTENSITIES) -> np.ndarray:
    """Attainable FLOP/s min(F, I beta_agg) at each intensity (SoK section 3.3)."""
    return np.minimum(device.dense_flops[precision], np.asarray(intensities) * device.hbm_bandwidth)


def operating_points(catalog: Catalog, device: Device, workload: Workload) -> dict[str, np.ndarray]:
    """Contexts, AI(s, b) and attained FLOP/s = step FLOPs / max(B / beta, F / F_peak) of one workload's decode steps."""
    a, model = catalog.assumptions, catalog.model
    contexts = workload.context * CONTEXT_MULTIPLES
    flops = step_flops(model, contexts, workload.batch)
    moved = step_weight_bytes(model, a.weight_bytes_per_param, workload.batch) + step_kv_bytes(
        model, contexts, workload.batch, a.kv_bytes_per_element
    )
    peak = device.dense_flops[a.compute_precision]
    return {
        "context": contexts,
        "intensity": arithmetic_intensity(model, contexts, workload.batch, a.weight_bytes_per_param, a.kv_bytes_per_element),
        "attained": flops / step_time(flops, moved, peak, device.hbm_bandwidth),
    }


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    precision = catalog.assumptions.compute_precision
    device_ids = list(inputs.selections["table3_devices"])
    device_colors = colors(device_ids)
    markers = dict(zip(WORKLOADS, ("o", "s")))

    columns = 2
    rows = -(-len(device_ids) // columns)
    fig = new_figure(9.0, 3.4 * rows, FIGURES["fig3_roofline"].evidence)
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False).ravel()
    labels = []
    for ax, d in zip(axes, device_ids):
        device = catalog.devices[d]
        ax.plot(INTENSITIES, roof(device, precision) / 1e12, color=device_colors[d], label=r"roof $\min(F, I\beta)$, device colour",
                gid=f"roof {d}")
        ridge = ridge_point(device, precision)
        ax.axvline(ridge, color=device_colors[d], linestyle="--", linewidth=0.8, gid=f"ridge {d}", label="ridge point $I^*$")
        labels.append(ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, device.dense_flops[precision] / 1e12), xytext=(3, -4),
                                  textcoords="offset points", ha="left", va="top", fontsize=6.5))
        anchor = int(np.flatnonzero(CONTEXT_MULTIPLES == 1.0)[0])
        for w in WORKLOADS:
            workload = catalog.workloads[w]
            points = operating_points(catalog, device, workload)
            span = f"{tokens_label(points['context'][0])} to {tokens_label(points['context'][-1])}"
            ax.plot(points["intensity"], points["attained"] / 1e12, marker=markers[w], markersize=3.5, color="black",
                    linestyle="-" if w == WORKLOADS[0] else ":", linewidth=0.8, gid=f"{w} {d}",
                    label=f"{w.upper()} (b={workload.batch}), s = {span}")
            at = (points["intensity"][anchor], points["attained"][anchor] / 1e12)
            ax.plot(*at, marker="o", markersize=8, markerfacecolor="none", markeredgecolor="#d62728", linestyle="none")
            labels.append(ax.annotate(f"{w.upper()} at s = {tokens_label(workload.context)}", at, xytext=(6, -6),
                                      textcoords="offset points", ha="left", va="top", fontsize=6.5, color="#d62728"))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{device.name}: β = {device.hbm_bandwidth / 1e12:g} TB/s, "
                     f"F = {device.dense_flops[precision] / 1e12:g} TFLOP/s {precision.upper()}")
    label_panel_grid(axes, len(device_ids), columns, "arithmetic intensity (FLOP/B)", "attained TFLOP/s (dense)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    fig.suptitle(f"{catalog.model.name} decode on the roofline, {catalog.assumptions.kv_dtype.upper()} KV", fontsize=9)
    settle(fig)
    for label in labels:
        place(label, LABEL_AT, keep_clear=labels)
    return fig
