"""What the gap is made of, per engine and device (derived from reported measurements): for each group of points that
differ only in concurrency, the fit TPOT = a + b KV per GPU (kvwall.validation.gap) gives the engine's effective KV
bandwidth 1/b over the datasheet's, and its fixed cost a over the time one GPU needs to read its weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kvwall.figures.serving.realization import ENGINE_COLORS, OTHER_ENGINE
from kvwall.figures.serving import tick_name
from kvwall.figures.style import new_figure, settle
from kvwall.inputs.catalog import Catalog
from kvwall.validation.run import Validation

#: Fits drawn: those that explain the group (R^2 at least this) with a positive slope.
MIN_R_SQUARED = 0.9


def draw(validation: Validation, rows: pd.DataFrame, catalog: Catalog) -> Figure:
    fits = validation.fits
    fits = fits[(fits["r_squared"] >= MIN_R_SQUARED) & (fits["kv_slope_ms_per_gb"] > 0)]
    engines = sorted(fits["backend"].unique())
    devices = sorted(fits["device"].unique())
    fig = new_figure(9.6, 3.6, "derived from reported measurements")
    left, right = fig.subplots(1, 2)
    width = 0.8 / max(len(engines), 1)
    for i, engine in enumerate(engines):
        color = ENGINE_COLORS.get(engine, OTHER_ENGINE)
        for j, device in enumerate(devices):
            group = fits[(fits["backend"] == engine) & (fits["device"] == device)]
            if group.empty:
                continue
            x = j + (i - (len(engines) - 1) / 2) * width + np.linspace(-width * 0.3, width * 0.3, len(group))
            left.plot(x, group["bandwidth_realized"], "o", ms=3, color=color, alpha=0.7)
            right.plot(x, group["fixed_cost_over_weight_read"], "o", ms=3, color=color, alpha=0.7)
    for ax, label, title in (
        (left, "1/b over datasheet HBM bandwidth", "Effective KV bandwidth, share of the datasheet's"),
        (right, "a over one weight read", "Fixed cost per step, in weight reads"),
    ):
        ax.set_xticks(range(len(devices)), [tick_name(catalog.devices[d].name) for d in devices], fontsize=7)
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_title(title, fontsize=9)
    fig.legend(handles=[left.plot([], [], "o", color=ENGINE_COLORS.get(e, OTHER_ENGINE), label=e)[0] for e in engines],
               fontsize=7, loc="outside right upper", title="engine", title_fontsize=7)
    return settle(fig)
