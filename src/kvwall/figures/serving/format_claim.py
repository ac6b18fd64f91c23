"""The algorithm didn't change, the regime did: the measured speedup of a narrower weight format against the speedup
the step-time bound predicts (both derived), marked by the regime of the narrower point: a colour and a marker per
regime, the points translucent so that where hundreds coincide the density shows, on equal axes so that the identity
line runs at 45 degrees."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kvwall.figures.style import REGIME_COLORS, new_figure, settle
from kvwall.inputs.catalog import Catalog
from kvwall.validation.run import Validation

#: Marker face colours of the regimes, the paper's three deepened so that small markers keep them apart
#: (kvwall.figures.legibility), and the one the paper's three do not cover.
MARKER_COLORS = {"weight-bound": "#4a90c8", "kv-bound": "#f08c2e", "capacity-bound": "#8c8c8c", "compute-bound": "#6a3d9a"}
#: A marker per regime, so that the regimes differ in shape as well as in colour.
MARKERS = {"weight-bound": "o", "kv-bound": "s", "capacity-bound": "^", "compute-bound": "D"}
#: Where both axes start: below every speedup measured (the slowest narrower point ran at 0.6x).
AXIS_FROM = 0.5
#: Opacity of one point: ten coinciding points read as one solid marker.
POINT_ALPHA = 0.35


def draw(validation: Validation, rows: pd.DataFrame, catalog: Catalog) -> Figure:
    pairs = validation.pairs
    fig = new_figure(6.2, 4.6, "derived (both speedups)")
    ax = fig.subplots()
    for regime, group in pairs.groupby("regime_narrow", sort=True):
        ax.scatter(group["predicted_speedup"], group["measured_speedup"], s=14, label=regime,
                   marker=MARKERS.get(regime, "v"), color=MARKER_COLORS.get(regime, REGIME_COLORS.get(regime, "#7f7f7f")),
                   alpha=POINT_ALPHA, linewidths=0)
    top = float(np.nanmax(pairs[["predicted_speedup", "measured_speedup"]].to_numpy())) * 1.05 if not pairs.empty else 2.0
    ax.plot([0, top], [0, top], color="black", lw=0.8, ls="--", label="measured = predicted")
    ax.set_xlim(AXIS_FROM, top)
    ax.set_ylim(AXIS_FROM, top)
    ax.set_aspect("equal", adjustable="box")  # the identity line at 45 degrees
    ticks = np.arange(1.0, top, 0.5)  # from 1 (no speedup), so the two axes' first labels stay apart
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlabel("predicted speedup (ratio of step-time bounds)")
    ax.set_ylabel("measured speedup (ratio of TPOTs)")
    legend = fig.legend(fontsize=7, title="regime after", title_fontsize=7, loc="outside right upper")
    for handle in legend.legend_handles:
        handle.set_alpha(1.0)  # the legend shows each regime's colour, not one translucent point
    ax.set_title("Narrower weights, measured and predicted (derived)", fontsize=9)
    return settle(fig)
