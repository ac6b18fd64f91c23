"""What the measured TPOT is made of, per engine, device and mode (derived from reported measurements): one stacked
bar per row of tables/derived/serving_cost_shares, each named cost of the calibrated decode step a segment, in shares
of the summed measured TPOT (kvwall.validation.cost_shares).

The bar ends where the named costs end. Where they explain less than was measured, the unexplained remainder is a
grey hatched segment from there to 1; where they price more (a negative remainder), the bar runs past 1 and the part
past it is outlined and cross-hatched over the costs it covers. Either way the remainder is printed beside the bar.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from kvwall.figures.serving import engine_name
from kvwall.figures.style import new_figure, settle
from kvwall.inputs.catalog import Catalog
from kvwall.model.decode_costs import COSTS

#: One colour per named cost, fixed so that a cost added later changes no other's look.
COST_COLORS = {
    "weights": "#1f77b4", "kv": "#ff7f0e", "compute": "#2ca02c", "collectives": "#d62728",
    "imbalance": "#9467bd", "fixed": "#8c564b", "prefill": "#e377c2",
}
#: How each cost is named in the legend.
COST_NAMES = {
    "weights": "weights read", "kv": "KV read", "compute": "compute past the bytes", "collectives": "collectives",
    "imbalance": "busiest EP rank", "fixed": "fixed: per step, layer, sequence", "prefill": "others' prefill (agg)",
}
#: The unexplained remainder (positive) and the costs past the measurement (a negative remainder).
UNEXPLAINED = {"facecolor": "#d9d9d9", "hatch": "//", "edgecolor": "#808080", "linewidth": 0.0}
EXCESS = {"facecolor": "none", "hatch": "xx", "edgecolor": "black", "linewidth": 0.8}
BAR_HEIGHT = 0.72


def _label(record: dict, catalog: Catalog) -> str:
    device = catalog.devices[record["device"]].name if record["device"] in catalog.devices else record["device"]
    return f"{device}, {record['mode']} (n = {int(record['points'])})"


def draw(shares: pd.DataFrame, catalog: Catalog) -> Figure:
    """One panel per engine, one bar per device and mode (``shares``: the rows of tables/derived/serving_cost_shares)."""
    engines = sorted(shares["backend"].unique())
    counts = [int((shares["backend"] == engine).sum()) for engine in engines]
    fig = new_figure(7.2, 1.3 + 0.27 * sum(counts), "derived from reported measurements")
    axes = fig.subplots(len(engines), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": counts})[:, 0]
    reach = max(1.0, float((shares[[f"share_{name}" for name in COSTS]].sum(axis=1)).max()))
    for ax, engine in zip(axes, engines):
        records = shares[shares["backend"] == engine].sort_values(["device", "mode"]).to_dict("records")
        for y, record in enumerate(records):
            left = 0.0
            for name in COSTS:
                width = float(record[f"share_{name}"])
                ax.barh(y, width, left=left, height=BAR_HEIGHT, color=COST_COLORS[name], linewidth=0)
                left += width
            remainder = float(record["remainder"])
            if remainder > 0:
                ax.barh(y, remainder, left=left, height=BAR_HEIGHT, **UNEXPLAINED)
            elif remainder < 0:
                ax.barh(y, -remainder, left=1.0, height=BAR_HEIGHT, **EXCESS)
            ax.text(max(left, 1.0) + 0.012 * reach, y, f"{remainder:+.0%}".replace("-", "\N{MINUS SIGN}"), va="center",
                    ha="left", fontsize=6.5)
        ax.set_yticks(range(len(records)), [_label(r, catalog) for r in records], fontsize=7)
        ax.set_ylim(len(records) - 0.5, -0.5)
        ax.axvline(1.0, color="black", lw=0.8, ls="--")
        ax.set_axisbelow(True)
        ax.grid(False, axis="y")
        ax.set_title(engine_name(engine), fontsize=8, loc="left")
    axes[-1].set_xlim(0, reach + 0.2)  # room for the remainder printed past the longest bar
    axes[-1].xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes[-1].set_xlabel("share of the summed measured TPOT (dashed: the measurement)", fontsize=8)
    handles = [Patch(color=COST_COLORS[name], linewidth=0, label=COST_NAMES[name]) for name in COSTS]
    handles += [Patch(**UNEXPLAINED, label="unexplained"), Patch(**EXCESS, label="priced past the measurement")]
    fig.legend(handles=handles, fontsize=7, loc="outside right upper", title="named cost", title_fontsize=7)
    return settle(fig)
