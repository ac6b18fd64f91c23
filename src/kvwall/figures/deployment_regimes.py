"""The regime map per device of a deployment over (batch, context): Llama-3-70B on H100 at TP 1, 2, 4 and 8, and
DeepSeek-V3 on B200 at TP 8 without and with attention data parallelism (DP 8, experts over all 8 devices).

Each panel colours the regime of one device on its shares (kvwall.model.capacity.device_regime); the line marks where
the deployment stops holding the whole batch (above it the rest of the sequences wait).
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import REGIME_COLORS, new_figure, token_axis
from kvwall.inputs.deployment import Deployment, checked_deployment, load_serving_inputs
from kvwall.model.capacity import device_regime, sequences_that_fit
from kvwall.model.regimes import REGIMES

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


def panel_grid(inputs: FigureInputs, model_id: str, device_id: str, tp: int, dp: int, ep: int):
    """Deployment, regime index per (context, batch) and sequences that fit per context, for one panel."""
    catalog = inputs.catalog
    model, device = catalog.models[model_id], catalog.devices[device_id]
    a, usable = catalog.assumptions, load_serving_inputs(catalog).usable_memory_fraction
    d = checked_deployment(model, Deployment(tp * dp, tp, 1, ep, dp, model.weight_format or a.weight_dtype, a.kv_dtype))
    s, b = np.meshgrid(CONTEXTS, BATCHES, indexing="ij")
    regimes = device_regime(model, d, s, b, device.hbm_capacity, usable)
    index = np.select([regimes == name for name in REGIMES], list(range(len(REGIMES))))
    fitting = sequences_that_fit(model, d, CONTEXTS, device.hbm_capacity, usable)
    return model, device, d, index, fitting


def draw(inputs: FigureInputs) -> Figure:
    """Six panels, one per deployment of PANELS, with one legend."""
    figure = new_figure(7.2, 4.6)
    axes = figure.subplots(2, 3, sharey=True)
    cmap = ListedColormap([REGIME_COLORS[name] for name in REGIMES])
    for ax, panel in zip(axes.flat, PANELS):
        model, device, d, index, fitting = panel_grid(inputs, *panel)
        ax.pcolormesh(BATCHES, CONTEXTS, index, cmap=cmap, vmin=-0.5, vmax=len(REGIMES) - 0.5, shading="nearest",
                      gid=f"regimes {model.id} {d.label}")
        holds = fitting >= 1
        ax.plot(np.clip(fitting[holds], BATCHES[0], None), CONTEXTS[holds], color="black", linewidth=1.0,
                gid=f"batch that fits {model.id} {d.label}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(BATCHES[0], BATCHES[-1])
        ax.set_ylim(CONTEXTS[0], CONTEXTS[-1])
        token_axis(ax.yaxis)
        ax.set_title(f"{model.name}, {d.label}\n{d.devices} x {device.name}, {d.weight_format}", fontsize=7)
        ax.set_xlabel("batch b", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in axes[:, 0]:
        ax.set_ylabel("context s (tokens)", fontsize=7)
    figure.legend(handles=[Patch(color=REGIME_COLORS[name], label=name) for name in REGIMES]
                  + [Patch(color="black", label="largest batch held at once")], loc="outside lower center", ncol=4,
                  fontsize=6.5, frameon=False)
    return figure
