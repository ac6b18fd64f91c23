"""The regime map per device of a deployment over (batch, context): Llama-3-70B on H100 at TP 1, 2, 4 and 8, and
DeepSeek-V3 on B200 at TP 8 without and with attention data parallelism (DP 8, experts over all 8 devices).

Each panel shades the regime of one device on its shares, bounded by its s*(b) and s_cap
(kvwall.model.capacity.device_traffic_crossover, deployment_capacity_crossover, the crossovers device_regime uses);
the line marks the largest batch the deployment holds at each context (to its right the rest of the sequences wait),
drawn as the longest context at which b sequences are held, the s_cap of ceil(b / DP) sequences on a device.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import REGIME_COLORS, new_figure, settle, token_axis
from kvwall.inputs.deployment import Deployment, checked_deployment, load_serving_inputs
from kvwall.model.capacity import deployment_capacity_crossover, device_traffic_crossover
from kvwall.model.regimes import CAPACITY_BOUND, KV_BOUND, WEIGHT_BOUND

BATCHES = np.geomspace(1, 256, 49)
CONTEXTS = np.geomspace(1e3, 1e7, 81)

#: (model, device, deployment degrees TP, DP, EP) of each panel.
PANELS = (
    ("llama-3-70b", "h100-sxm", 1, 1, 1),
    ("llama-3-70b", "h100-sxm", 2, 1, 1),
    ("llama-3-70b", "h100-sxm", 4, 1, 1),
    ("llama-3-70b", "h100-sxm", 8, 1, 1),
    ("deepseek-v3", "b200", 8, 1, 1),
    ("deepseek-v3", "b200", 1, 8, 8),
)


def panel_bounds(inputs: FigureInputs, model_id: str, device_id: str, tp: int, dp: int, ep: int):
    """Model, device, deployment, the lower and upper context of each regime at every batch, and the longest
    context held at every batch, for one panel; weights in the checkpoint's format where the model records one."""
    catalog = inputs.catalog
    model, device = catalog.models[model_id], catalog.devices[device_id]
    a, memory = catalog.assumptions, load_serving_inputs(catalog).memory()
    d = checked_deployment(model, Deployment(tp * dp, tp, 1, ep, dp, model.weight_format or a.weight_dtype, a.kv_dtype))
    low, high = CONTEXTS[0], CONTEXTS[-1]
    s_cap = np.clip(np.full_like(BATCHES, float(deployment_capacity_crossover(model, d, device.hbm_capacity, memory))),
                    low, high)
    kv_floor = np.clip(np.minimum(device_traffic_crossover(model, d, BATCHES), s_cap), low, high)
    regions = {WEIGHT_BOUND: (np.full_like(s_cap, low), kv_floor), KV_BOUND: (kv_floor, s_cap),
               CAPACITY_BOUND: (s_cap, np.full_like(s_cap, high))}
    return model, device, d, regions, deployment_capacity_crossover(model, d, device.hbm_capacity, memory, BATCHES)


def draw(inputs: FigureInputs) -> Figure:
    """Six panels, one per deployment of PANELS, with one legend."""
    figure = new_figure(7.2, 4.6, "derived")
    axes = figure.subplots(2, 3, sharey=True)
    for ax, panel in zip(axes.flat, PANELS):
        model, device, d, regions, held = panel_bounds(inputs, *panel)
        for name, (lower, upper) in regions.items():
            ax.fill_between(BATCHES, lower, upper, color=REGIME_COLORS[name], linewidth=0,
                            gid=f"region {name} {model.id} {d.label}")
        holds = held >= CONTEXTS[0]
        if holds.any():
            ax.plot(BATCHES[holds], held[holds], color="black", linewidth=1.0, gid=f"batch that fits {model.id} {d.label}")
        else:
            ax.text(0.5, 0.45, "weights exceed HBM:\ncannot be loaded", transform=ax.transAxes, ha="center",
                    va="center", fontsize=6.5, style="italic")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(BATCHES[0], BATCHES[-1])
        ax.set_ylim(CONTEXTS[0], CONTEXTS[-1])
        token_axis(ax.yaxis)
        ax.set_title(f"{model.name}, {d.label}\n{d.devices} x {device.name}, {d.weight_formats.short}", fontsize=7)
        ax.set_xlabel("batch b", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in axes[:, 0]:
        ax.set_ylabel("context s (tokens)", fontsize=7)
    figure.legend(handles=[Patch(color=REGIME_COLORS[name], label=name) for name in REGIME_COLORS]
                  + [Line2D([], [], color="black", linewidth=1.0, label="largest batch held at once")],
                  loc="outside lower center", ncol=4,
                  fontsize=6.5, frameon=False)
    return settle(figure)
