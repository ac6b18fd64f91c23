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
                   "calibrated with offsets, held out": ("s", "#8e44ad"),
                   "calibrated with offsets, leave one model out": ("D", "#c0392b")}
#: The summary's row of the measurements ranked against a second measurement of themselves.
REMEASURED = "a second measurement"
#: How the limits of the table read as panel titles.
LIMIT_TITLES = {"median": "at each group's median measured TPOT", "loosest": "with no TPOT limit (every point)"}
#: Half the spacing of an engine's strips, one per estimate, over three estimates (an engine's strips span 1.08 of the
#: unit between engines), a strip's half width over that spacing, and a panel's width per three estimates (in).
SPAN, STRIP, PANEL = 0.54, 0.72, 4.2
#: Golden-ratio spacing spreads a strip's points evenly across its width, the same on every run.
_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def spread(count: int, half_width: float) -> np.ndarray:
    """``count`` offsets in [-half_width, half_width), a low-discrepancy sequence in table order."""
    return ((np.arange(count) * _GOLDEN) % 1.0 - 0.5) * 2.0 * half_width


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
    widest = max(len(estimates), 3)
    offset = SPAN / widest
    half_width = STRIP * offset
    fig = new_figure(PANEL * widest / 3 * max(len(limits), 1) + 0.6, 4.0, "derived")
    axes = fig.subplots(1, max(len(limits), 1), sharey=True, squeeze=False)[0]
    for ax, limit in zip(axes, limits):
        for k, estimate in enumerate(estimates):
            marker, color = ESTIMATE_STYLES[estimate]
            shift = (k - (len(estimates) - 1) / 2) * 2 * offset
            for x, engine in enumerate(engines):
                groups = ranked[(ranked["limit"] == limit) & (ranked["estimate"] == estimate) & (ranked["backend"] == engine)]
                rho = groups["rank_correlation"].dropna().to_numpy(dtype=float)
                ax.plot(x + shift + spread(rho.size, half_width), rho, marker, ms=3.2, mfc="none", mew=0.7, color=color,
                        alpha=0.8, linestyle="none", label=f"a group, {estimate} estimate")
                if rho.size:
                    ax.plot([x + shift - half_width, x + shift + half_width], [np.median(rho)] * 2, "-", color=color,
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
