"""Whether the estimate ranks the measured layouts as the measurements do, drawn from tables/derived/plan_ranking:
per TPOT limit, the rank correlation of every group as a strip per engine, an estimate per marker, and the share of
groups whose first layouts agree above each strip (kvwall.plan.proof); under each panel's title, what a second
measurement of the same points agrees on, from tables/derived/plan_ranking_summary: what an estimate can reach."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kvwall.figures.serving import engine_name
from kvwall.figures.style import EVIDENCE_COLORS, new_figure, settle

#: A marker and a colour per estimate of kvwall.plan.proof.ESTIMATES.
ESTIMATE_STYLES = {"datasheet": ("o", EVIDENCE_COLORS["derived"]), "calibrated, held out": ("^", "#2e8540"),
                   "calibrated with offsets, held out": ("s", "#8e44ad")}
#: The summary's row of the measurements ranked against a second measurement of themselves.
REMEASURED = "a second measurement"
#: How the limits of the table read as panel titles.
LIMIT_TITLES = {"median": "at each group's median measured TPOT", "loosest": "with no TPOT limit (every point)"}
#: Half the width of a strip, and the spacing of an estimate's strip beside the other's.
HALF_WIDTH, OFFSET = 0.13, 0.18
#: Golden-ratio spacing spreads a strip's points evenly across its width, the same on every run.
_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def spread(count: int) -> np.ndarray:
    """``count`` offsets in [-HALF_WIDTH, HALF_WIDTH), a low-discrepancy sequence in table order."""
    return ((np.arange(count) * _GOLDEN) % 1.0 - 0.5) * 2.0 * HALF_WIDTH


def _remeasured(summary: pd.DataFrame, limit: str) -> str:
    """What a second measurement agrees on at ``limit``, as a line under a panel's title."""
    row = summary[(summary["estimate"] == REMEASURED) & (summary["limit"] == limit)]
    if row.empty:
        return ""
    top1, rho = float(row["top1_agreement"].iloc[0]), float(row["median_rank_correlation"].iloc[0])
    return f"\n{REMEASURED}: {top1:.0%} agree, median {rho:.2f}"


def draw(ranked: pd.DataFrame, summary: pd.DataFrame) -> Figure:
    """``ranked``: tables/derived/plan_ranking as read (top1_agrees "yes" or "no", rank_correlation blank on ties);
    ``summary``: tables/derived/plan_ranking_summary as read."""
    limits = [limit for limit in LIMIT_TITLES if limit in set(ranked["limit"])]
    engines = sorted(set(ranked["backend"]))
    estimates = [e for e in ESTIMATE_STYLES if e in set(ranked["estimate"])]
    fig = new_figure(4.2 * max(len(limits), 1) + 0.6, 4.0, "derived")
    axes = fig.subplots(1, max(len(limits), 1), sharey=True, squeeze=False)[0]
    for ax, limit in zip(axes, limits):
        for k, estimate in enumerate(estimates):
            marker, color = ESTIMATE_STYLES[estimate]
            shift = (k - (len(estimates) - 1) / 2) * 2 * OFFSET
            for x, engine in enumerate(engines):
                groups = ranked[(ranked["limit"] == limit) & (ranked["estimate"] == estimate) & (ranked["backend"] == engine)]
                rho = groups["rank_correlation"].dropna().to_numpy(dtype=float)
                ax.plot(x + shift + spread(rho.size), rho, marker, ms=3.2, mfc="none", mew=0.7, color=color,
                        alpha=0.8, linestyle="none", label=f"a group, {estimate} estimate")
                if rho.size:
                    ax.plot([x + shift - HALF_WIDTH, x + shift + HALF_WIDTH], [np.median(rho)] * 2, "-", color=color,
                            linewidth=1.6, label=f"median, {estimate} estimate")
                share = float((groups["top1_agrees"] == "yes").mean()) if len(groups) else float("nan")
                ax.annotate(f"{share:.0%}\nof {len(groups)}", (x + shift, 1.0), xytext=(0, 5),
                            textcoords="offset points", ha="center", va="bottom", fontsize=6.5, color=color)
        ax.set_xticks(range(len(engines)), [engine_name(e) for e in engines])
        ax.set_xlim(-0.6, len(engines) - 0.4)
        ax.set_ylim(-1.05, 1.32)
        ax.set_yticks(np.linspace(-1.0, 1.0, 5))
        ax.axhline(0.0, color="#999999", linewidth=0.6)
        ax.set_title(f"Layouts ranked {LIMIT_TITLES[limit]}{_remeasured(summary, limit)}", fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("Spearman rank correlation per group")
    entries = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(list(entries.values()), list(entries), fontsize=7, loc="outside lower center", ncols=2)
    fig.suptitle("Does the estimate rank the measured layouts as the measurements do? (above each strip: the share "
                 "of groups whose first layouts agree)", fontsize=8.5)
    return settle(fig)
