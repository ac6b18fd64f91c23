"""Measured TPOT (reported) against its lower bound and estimate (derived) over concurrency, for the largest groups
of points that differ only in concurrency, one model each; an open marker where fewer sequences fit than are in
flight (the capacity crossover seen in a measurement)."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from kvwall.figures.serving import engine_name
from kvwall.figures.style import EVIDENCE_COLORS, new_figure, settle
from kvwall.inputs.catalog import Catalog
from kvwall.validation.points import GROUP
from kvwall.validation.run import Validation

#: Panels drawn: the groups with the most points, one per model.
PANELS = 3


def chosen_groups(points: pd.DataFrame) -> list[pd.DataFrame]:
    """The largest groups (most concurrencies), one per model, largest first; ties by the group's key."""
    sizes = points.groupby(list(GROUP), dropna=False).size().reset_index(name="n")
    sizes = sizes.sort_values(["n", *GROUP], ascending=[False, *[True] * len(GROUP)])
    chosen, models = [], set()
    for _, key in sizes.iterrows():
        if key["model"] in models:
            continue
        models.add(key["model"])
        mask = pd.Series(True, index=points.index)
        for column in GROUP:
            mask &= points[column].eq(key[column]) | (points[column].isna() & pd.isna(key[column]))
        chosen.append(points[mask].sort_values("in_flight"))
        if len(chosen) == PANELS:
            break
    return chosen


def draw(validation: Validation, rows: pd.DataFrame, catalog: Catalog) -> Figure:
    understood = validation.understood.assign(tpot_ms=rows["silicon_tpot_ms"])
    groups = chosen_groups(understood)
    fig = new_figure(3.0 * max(len(groups), 1) + 1.6, 3.4, "derived bounds, reported measurements")
    axes = fig.subplots(1, max(len(groups), 1), squeeze=False)[0]
    for ax, group in zip(axes, groups):
        first = group.iloc[0]
        x = group["in_flight"]
        ax.plot(x, group["tpot_ms"], "o", color=EVIDENCE_COLORS["reported"], label="measured (reported)")
        ax.plot(x, group["tpot_bound_ms"], "s--", color=EVIDENCE_COLORS["derived"], label="lower bound (derived)")
        ax.plot(x, group["tpot_estimate_ms"], ":", color=EVIDENCE_COLORS["derived"], label="estimate (derived)")
        capped = group[group["running_batch"] < group["in_flight"]]
        if not capped.empty:  # a legend entry only where some panel draws one
            ax.plot(capped["in_flight"], capped["tpot_bound_ms"], "s", mfc="white", color=EVIDENCE_COLORS["derived"],
                    label="fewer fit than in flight")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("requests in flight")
        ax.set_ylabel("TPOT (ms)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{catalog.models[first['model']].name} on {catalog.devices[first['device']].name}, "
                     f"{engine_name(first['backend'])}\n{first['weight_format'].upper()} weights, "
                     f"{int(first['isl'])} in / {int(first['osl'])} out", fontsize=8)
        ax.grid(alpha=0.3)
    entries = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(list(entries.values()), list(entries), fontsize=7, loc="outside right upper")
    fig.suptitle("Measured TPOT against the hardware's bound (bound: derived; measured: reported)", fontsize=9)
    return settle(fig)
