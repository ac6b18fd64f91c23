"""The algorithm didn't change, the regime did: the measured speedup of a narrower weight format against the speedup
the step-time bound predicts (both derived), marked by the regime of the narrower point."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kvwall.figures.style import REGIME_COLORS, new_figure, settle
from kvwall.validation.run import Validation

#: Marker edge colours of regimes the paper's three do not cover.
_MORE_REGIMES = {"compute-bound": "#6a3d9a"}


def draw(validation: Validation, rows: pd.DataFrame) -> Figure:
    pairs = validation.pairs
    fig = new_figure(5.6, 4.0, "derived (both speedups)")
    ax = fig.subplots()
    regime_colors = {**REGIME_COLORS, **_MORE_REGIMES}
    for regime, group in pairs.groupby("regime_narrow", sort=True):
        ax.scatter(group["predicted_speedup"], group["measured_speedup"], s=12, label=regime,
                   color=regime_colors.get(regime, "#7f7f7f"), edgecolors="black", linewidths=0.3)
    top = float(np.nanmax(pairs[["predicted_speedup", "measured_speedup"]].to_numpy())) * 1.05 if not pairs.empty else 2.0
    ax.plot([0, top], [0, top], color="black", lw=0.8, ls="--", label="measured = predicted")
    ax.set_xlim(0.8, top)
    ax.set_ylim(0.0, top)
    ax.set_xlabel("predicted speedup (ratio of step-time bounds)")
    ax.set_ylabel("measured speedup (ratio of TPOTs)")
    fig.legend(fontsize=7, title="regime after", title_fontsize=7, loc="outside right upper")
    ax.set_title("Narrower weights, measured and predicted (derived)", fontsize=9)
    return settle(fig)
