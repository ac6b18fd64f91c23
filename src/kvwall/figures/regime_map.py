"""Figure 4: the three-regime map per model and device (SoK sections 3.4-3.5, 5.1) over (batch, context).

The traffic crossover s*(b) separates weight-bound from KV-bound steps; above the capacity crossover s_cap of one
sequence not even one sequence fits beside the weights (capacity-bound). Between s_cap(b) = s_cap / b and s_cap the
batch outgrows one device and is sharded (SoK Table 5 caption), staying in its traffic regime. The workloads W1-W4
(Table 6) are marked.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import ScalarFormatter

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.layout import AROUND, place
from kvwall.figures.style import REGIME_COLORS, new_figure, settle, token_axis
from kvwall.inputs.catalog import Catalog
from kvwall.model.regimes import CAPACITY_BOUND, KV_BOUND, WEIGHT_BOUND, capacity_crossover, traffic_crossover
from kvwall.model.roofline import resident_weight_bytes, step_weight_bytes
from kvwall.inputs.specs import Device, Model

#: Batches and contexts spanned by each panel.
BATCHES = np.geomspace(1, 256, 41)
CONTEXT_RANGE = (1e2, 1e7)

#: Where along the batch axis a regime's name is tried, in order (fractions of the drawn batches).
_LABEL_AT = (0.5, 0.3, 0.7, 0.15, 0.85, 0.4, 0.6)

#: How much darker a regime is drawn where its batch outgrows one device (sharded): its colour times 1 - SHADE.
SHADE = 0.22
#: The thin line that ties a workload label placed farther out to its point.
LEADER = {"arrowstyle": "-", "color": "#444444", "linewidth": 0.5, "shrinkA": 1, "shrinkB": 2}
#: Workload labels sit this close to their point at most (points), so a label never reads as another point's.
_NEAR = tuple(candidate for candidate in AROUND if max(abs(candidate[0]), abs(candidate[1])) <= 12)


def sharded_color(color: str) -> str:
    """A regime's colour where the batch is sharded, as the panels and the legend show it."""
    return to_hex(np.asarray(to_rgb(color)) * (1 - SHADE))


def crossovers(catalog: Catalog, model: Model, device: Device, batches=BATCHES) -> dict[str, np.ndarray]:
    """s*(b) = P w_p / (b 2 L n_kv d_h w_kv), s_cap(b) = (HBM - P w_p) / (b 2 L n_kv d_h w_kv) and s_cap = s_cap(1)
    (SoK section 3.4). s* uses the weights a step reads (the experts a batch touches, for MoE); s_cap every resident
    weight."""
    a = catalog.assumptions
    w_kv = a.kv_bytes_per_element
    resident = resident_weight_bytes(model, a.weight_bytes_per_param)
    b = np.asarray(batches, dtype=float)
    return {
        "traffic": traffic_crossover(model, step_weight_bytes(model, a.weight_bytes_per_param, b), w_kv, b),
        "batch_capacity": capacity_crossover(model, device.hbm_capacity, resident, w_kv, b),
        "capacity": np.full_like(b, float(capacity_crossover(model, device.hbm_capacity, resident, w_kv))),
    }


def _regions(bounds: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Lower and upper context of each regime at every batch of the panel, clipped to the drawn range."""
    low, high = CONTEXT_RANGE
    s_cap = np.clip(bounds["capacity"], low, high)
    kv_floor = np.clip(np.minimum(bounds["traffic"], s_cap), low, high)
    return {WEIGHT_BOUND: (np.full_like(s_cap, low), kv_floor), KV_BOUND: (kv_floor, s_cap), CAPACITY_BOUND: (s_cap, np.full_like(s_cap, high))}


def _region_labels(ax, regions: dict[str, tuple[np.ndarray, np.ndarray]]) -> list:
    """Each regime's name, at the middle (in decades of context) of its band; placed later by _place_labels."""
    labels = []
    for name, (lower, upper) in regions.items():
        anchors = []
        for fraction in _LABEL_AT:
            i = int(fraction * (len(BATCHES) - 1))
            if upper[i] > lower[i]:
                anchors.append((BATCHES[i], float(np.sqrt(lower[i] * upper[i]))))
        if anchors:
            label = ax.annotate(name, anchors[0], xytext=(0, 0), textcoords="offset points", fontsize=6.5, ha="center",
                                va="center", color="#333333", style="italic")
            labels.append((label, anchors))
    return labels


def _workload_groups(catalog: Catalog) -> dict[tuple[int, float], list[str]]:
    """Workload ids by (batch, context), so workloads at one point share one marker (W1 and W4)."""
    groups: dict[tuple[int, float], list[str]] = {}
    for w in catalog.workloads.values():
        groups.setdefault((w.batch, w.context), []).append(w.id.upper())
    return groups


def _shade(ax, regions: dict[str, tuple[np.ndarray, np.ndarray]], sharded_from: np.ndarray, name: str) -> None:
    """One regime's band: its colour below ``sharded_from``, its sharded colour above it."""
    lower, upper = regions[name]
    split = np.clip(sharded_from, lower, upper)
    ax.fill_between(BATCHES, lower, split, color=REGIME_COLORS[name], linewidth=0, gid=f"region {name}")
    if np.any(upper > split):
        ax.fill_between(BATCHES, split, upper, color=sharded_color(REGIME_COLORS[name]), linewidth=0,
                        gid=f"region {name}, sharded")


def _panel(ax, catalog: Catalog, model: Model, device: Device) -> tuple[list, list]:
    """Draw one panel; return its workload labels and its region labels (with their candidate anchors), to place."""
    region_labels: list = []
    bounds = crossovers(catalog, model, device)
    regions = _regions(bounds)
    loads = bounds["capacity"][0] > 0
    low, s_cap = CONTEXT_RANGE[0], bounds["capacity"]
    sharded_from = np.clip(bounds["batch_capacity"], low, s_cap) if loads else np.full_like(s_cap, CONTEXT_RANGE[1])
    for name in (WEIGHT_BOUND, KV_BOUND):
        _shade(ax, regions, sharded_from, name)
    lower, upper = regions[CAPACITY_BOUND]  # above s_cap not one sequence fits: nothing to shard
    ax.fill_between(BATCHES, lower, upper, color=REGIME_COLORS[CAPACITY_BOUND], linewidth=0, gid=f"region {CAPACITY_BOUND}")
    if loads:  # s* is drawn only where the weights load: elsewhere no step runs to be weight- or KV-bound
        ax.plot(BATCHES, bounds["traffic"], color="black", linewidth=1.0, gid=f"traffic {model.id} {device.id}")
        ax.plot(BATCHES, s_cap, color="black", linestyle="--", linewidth=1.0, gid=f"capacity {model.id} {device.id}")
        ax.plot(BATCHES, bounds["batch_capacity"], color="#555555", linestyle=":", linewidth=1.0,
                gid=f"batch capacity {model.id} {device.id}")
        region_labels = _region_labels(ax, regions)
    else:
        ax.text(0.5, 0.3, "weights exceed HBM:\ncannot be loaded", transform=ax.transAxes, ha="center", va="center",
                fontsize=6.5, style="italic")
    workload_labels = []
    for (batch, context), names in _workload_groups(catalog).items():
        ax.plot(batch, context, marker="o", markersize=3.5, color="black", linestyle="none",
                gid=f"{'+'.join(names)} {model.id} {device.id}")
        workload_labels.append(ax.annotate(", ".join(names), (batch, context), xytext=(4, 3), textcoords="offset points",
                                           ha="left", va="bottom", fontsize=6))
    return workload_labels, region_labels


def _place_labels(workload_labels: list, region_labels: list) -> None:
    """Workload labels first, each beside its point; then each region's name where it fits, or not at all."""
    for label in workload_labels:  # beside its point; where nothing near is clear, farther out with a leader line
        if not place(label, _NEAR, keep_clear=workload_labels) and place(label, AROUND, keep_clear=workload_labels):
            label.axes.annotate("", label.xy, xytext=label.get_position(), textcoords="offset points", arrowprops=LEADER)
    placed = list(workload_labels)
    for label, anchors in region_labels:
        if place(label, ((0, 0, "center", "center"),), keep_clear=placed, anchors=anchors):
            placed.append(label)
        else:
            label.remove()


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    model_ids = list(inputs.selections["table4_models"])
    device_ids = list(inputs.selections["capacity_devices"])
    fig = new_figure(2.45 * len(device_ids) + 0.4, 2.2 * len(model_ids) + 0.7, FIGURES["fig4_regime_map"].evidence)
    axes = fig.subplots(len(model_ids), len(device_ids), sharex=True, sharey=True, squeeze=False)
    to_place = []
    for row, m in enumerate(model_ids):
        for col, d in enumerate(device_ids):
            model, device, ax = catalog.models[m], catalog.devices[d], axes[row, col]
            to_place.append(_panel(ax, catalog, model, device))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlim(BATCHES[0] / 1.3, BATCHES[-1] * 1.3)
            ax.set_ylim(*CONTEXT_RANGE)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            token_axis(ax.yaxis)
            ax.grid(False)
            ax.set_title(f"{model.name} on {device.name}", fontsize=7.5)
            if row == len(model_ids) - 1:
                ax.set_xlabel("batch b")
            if col == 0:
                ax.set_ylabel("context s (tokens)")
    handles = [Patch(color=REGIME_COLORS[r], label=r) for r in (WEIGHT_BOUND, KV_BOUND, CAPACITY_BOUND)]
    handles += [
        Patch(color=sharded_color(REGIME_COLORS[WEIGHT_BOUND]), label="weight-bound, batch sharded over devices"),
        Patch(color=sharded_color(REGIME_COLORS[KV_BOUND]), label="kv-bound, batch sharded over devices"),
        axes[0, 0].plot([], [], color="black", label="traffic crossover $s^*(b)$")[0],
        axes[0, 0].plot([], [], color="black", linestyle="--", label=r"capacity crossover $s_{\mathrm{cap}}$ (one sequence)")[0],
        axes[0, 0].plot([], [], color="#555555", linestyle=":",
                        label=r"$s_{\mathrm{cap}}(b) = s_{\mathrm{cap}} / b$: above it the batch is sharded")[0],
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3)
    fig.suptitle(f"Three regimes of decode ({catalog.assumptions.weight_dtype.upper()} weights, "
                 f"{catalog.assumptions.kv_dtype.upper()} KV, per device)", fontsize=9)
    settle(fig)
    for workload_labels, region_labels in to_place:
        _place_labels(workload_labels, region_labels)
    return fig
