"""TPOT bound over measured TPOT per engine and device (derived from reported measurements): 1 is the hardware's
limit, below 1 the share of it the engine realized; above 1 a point measured below its bound (each diagnosed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from kvwall.figures.serving import engine_name, tick_name
from kvwall.figures.style import new_figure, settle
from kvwall.inputs.catalog import Catalog
from kvwall.validation.run import Validation


#: One colour per engine, fixed so that an engine added later changes no other's.
ENGINE_COLORS = {"sglang": "#1b9e77", "trtllm": "#d95f02", "vllm": "#7570b3"}
OTHER_ENGINE = "#7f7f7f"
#: Opacity of an engine's box (its points show through).
BOX_ALPHA = 0.6


def draw(validation: Validation, rows: pd.DataFrame, catalog: Catalog) -> Figure:
    understood = validation.understood
    engines = sorted(understood["backend"].unique())
    devices = sorted(understood["device"].unique())
    engine_colors = {engine: ENGINE_COLORS.get(engine, OTHER_ENGINE) for engine in engines}
    fig = new_figure(6.8, 3.4, "derived from reported measurements")
    ax = fig.subplots()
    width = 0.8 / max(len(engines), 1)
    for i, engine in enumerate(engines):
        for j, device in enumerate(devices):
            values = understood[(understood["backend"] == engine) & (understood["device"] == device)]["tpot_realization"]
            if values.empty:
                continue
            position = j + (i - (len(engines) - 1) / 2) * width
            ax.boxplot([values.to_numpy()], positions=[position], widths=width * 0.9, patch_artist=True, showfliers=False,
                       boxprops={"facecolor": engine_colors[engine], "alpha": BOX_ALPHA}, medianprops={"color": "black"})
            jitter = np.linspace(-width * 0.3, width * 0.3, values.size)
            ax.plot(position + jitter, values.to_numpy(), ".", ms=2, color=engine_colors[engine], alpha=0.5)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(range(len(devices)), [tick_name(catalog.devices[d].name) for d in devices])
    ax.set_ylabel("TPOT bound / measured")
    ax.set_ylim(bottom=0)
    fig.legend(handles=[Patch(facecolor=engine_colors[e], alpha=BOX_ALPHA, label=engine_name(e)) for e in engines], fontsize=7,
               loc="outside right upper", title="engine", title_fontsize=7)
    ax.set_title("TPOT bound over measured TPOT, per engine and device", fontsize=9)
    return settle(fig)
