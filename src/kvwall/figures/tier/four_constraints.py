"""Figure 3.1: the four constraints on KV state and what a memory tier does to each (CANONICAL-NUMBERS §4/§5).

The path a KV byte takes (memory tier -> HBM -> attention kernel) with the four constraints marked where they bind:
capacity RELIEVED, HBM-side bandwidth UNCHANGED, tier-ingress bandwidth CREATED, transfer latency CREATED. Every
number on it is quoted from canonical-numbers.json by id, with the class the canonical numbers give it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from kvwall.figures.layout import wrap_to_width
from kvwall.figures.style import new_figure, settle
from kvwall.tier.inputs import TierSpecs

STATUS_COLORS = {"RELIEVED": "#2ca02c", "UNCHANGED": "#7f7f7f", "CREATED": "#d62728"}
FOOTER = "Analytical model — CANONICAL-NUMBERS.md §4/§5"


@dataclass(frozen=True)
class Card:
    """One constraint: its name, what a tier does to it, where it binds, and the canonical numbers that show it."""

    name: str
    status: str
    statement: str
    evidence: str  # the class of every number in the quote; empty where the quote marks each number itself
    quote: str


def quoted_ids(figure: Mapping[str, str]) -> dict[str, str]:
    """The canonical-number ids the figure quotes, by role, for the scenarios and links config/tiers.yaml names."""
    capacity, ingress, ingress_link = figure["capacity"], figure["ingress"], figure["ingress_link"]
    hiding, hiding_link = figure["hiding"], figure["hiding_link"]
    return {
        "seq_without": f"s5.capacity.{capacity}.sequences-without",
        "seq_with": f"s5.capacity.{capacity}.sequences-with",
        "context": f"s5.scenario.{capacity}.context",
        "tier_capacity": "s5.tier.capacity",
        "slope_hf": "s1.fit.hf-sdpa.slope",
        "slope_vllm": "s1.fit.vllm-fa2.slope",
        "slope_apart": "s5.slope-difference",
        "max_fraction": f"s5.ingress.{ingress}.{ingress_link}.max-fraction",
        "ingress_link": f"s5.link.{ingress_link}",
        "ingress_step": f"s5.hbm.{ingress}.step-time",
        "hiding_required": f"s5.ingress.{hiding}.{hiding_link}.required",
        "hiding_link": f"s5.link.{hiding_link}",
        "hiding_late": f"s5.simulation.{hiding}.{hiding_link}.stalled",
        "hiding_transfers": f"s5.hiding.{hiding}.{hiding_link}.transfers",
        "hiding_stall": f"s5.simulation.{hiding}.{hiding_link}.stall",
        "hiding_utilization": f"s5.simulation.{hiding}.{hiding_link}.utilization",
    }


def cards(numbers: Mapping[str, dict], figure: Mapping[str, str], scenarios: Mapping[str, str]) -> tuple[Card, ...]:
    """The four cards, their numbers quoted (display strings) from the canonical numbers, each scenario named by
    ``scenarios`` (scenario id -> the words a reader is shown) instead of its id."""
    q = {role: numbers[number_id]["display"] for role, number_id in quoted_ids(figure).items()}
    name = {role: scenarios[figure[role]] for role in ("capacity", "ingress", "hiding")}
    return (
        Card("Capacity", "RELIEVED", "More sequences want their KV resident than HBM can hold. Easing this is the purpose of a tier.",
             "derived",
             f"{name['capacity']}: {q['seq_without']} → {q['seq_with']} sequences of {q['context']} resident "
             f"with a {q['tier_capacity']} tier."),
        Card("HBM-side bandwidth", "UNCHANGED", "Every decode step, attention reads the whole active KV from HBM, "
             "wherever that KV waits between steps.", "",
             f"KV slopes {q['slope_hf']} against {q['slope_vllm']} across two frameworks (GB10 LPDDR5X) "
             f"[reported]; {q['slope_apart']} apart [derived]: the kernel does not fix it, nor does capacity behind HBM."),
        Card("Tier-ingress bandwidth", "CREATED", "The KV kept behind the link has to come across as fast as the decode "
             "set consumes it: one aggregate rate (sustainability).", "derived",
             f"{name['ingress']}: at most {q['max_fraction']} of the active KV can sit behind a {q['ingress_link']} link "
             f"without slowing a {q['ingress_step']} step."),
        Card("Transfer latency", "CREATED", "Every single transfer has a deadline, the layer that needs it (hiding); "
             "meeting the aggregate rate does not meet it.", "derived",
             f"{name['hiding']}, at {q['hiding_link']}: {q['hiding_required']} needed, so the rate holds, yet "
             f"{q['hiding_late']} of {q['hiding_transfers']} transfers arrive late: {q['hiding_stall']} of stalls at "
             f"{q['hiding_utilization']} link use."),
    )


def _box(axis, x: float, y: float, width: float, height: float, title: str, subtitle: str, color: str) -> None:
    axis.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.004,rounding_size=0.012",
                                  facecolor=color, edgecolor="#404040", linewidth=0.8))
    axis.text(x + width / 2, y + height * 0.7, title, ha="center", va="center", fontsize=9, weight="bold")
    wrap_to_width(axis.text(x + width / 2, y + height * 0.32, subtitle, ha="center", va="center", fontsize=7),
                  width * 0.9)


def _badge(axis, x: float, y: float, mark: str, name: str, status: str) -> None:
    axis.text(x, y, f"{mark} {name}", ha="left", va="center", fontsize=7.5, weight="bold", color=STATUS_COLORS[status])
    axis.text(x + 0.012, y - 0.028, status, ha="left", va="center", fontsize=6.5, color="white", weight="bold",
              bbox={"boxstyle": "round,pad=0.25", "facecolor": STATUS_COLORS[status], "edgecolor": "none"})


def _flow(axis) -> None:
    axis.text(0.03, 0.86, "The path a KV byte takes", fontsize=8.5, weight="bold")
    left, width, height = 0.03, 0.17, 0.11
    _box(axis, left, 0.68, width, height, "Memory tier (CXL)", "large, behind a link", "#e5f5e0")
    _box(axis, left, 0.40, width, height, "HBM", "the only memory attention reads", "#deebf7")
    _box(axis, left, 0.12, width, height, "Attention kernel", "reads all active KV each step", "#f0f0f0")
    for top, bottom, text in ((0.68, 0.51, "tier boundary (link)"), (0.40, 0.23, "")):
        axis.annotate("", xy=(left + width / 2, bottom + 0.005), xytext=(left + width / 2, top - 0.005),
                      arrowprops={"arrowstyle": "-|>", "color": "#404040", "linewidth": 1.2})
        axis.text(left + width / 2 - 0.008, (top + bottom) / 2, text, fontsize=6.5, ha="right", va="center", style="italic")
    _badge(axis, 0.215, 0.745, "✓", "Capacity", "RELIEVED")
    _badge(axis, 0.215, 0.625, "+", "Tier-ingress bandwidth", "CREATED")
    _badge(axis, 0.215, 0.555, "+", "Transfer latency", "CREATED")
    _badge(axis, 0.215, 0.315, "=", "HBM-side bandwidth", "UNCHANGED")


def _cards(axis, items: tuple[Card, ...]) -> None:
    axis.text(0.43, 0.86, "What a tier does to each constraint", fontsize=8.5, weight="bold")
    top, height, gap = 0.83, 0.17, 0.024  # the gap wider than the boxes' rounded padding, so no two touch
    for i, card in enumerate(items):
        y = top - (i + 1) * height - i * gap
        color = STATUS_COLORS[card.status]
        axis.add_patch(FancyBboxPatch((0.43, y), 0.55, height, boxstyle="round,pad=0.004,rounding_size=0.01",
                                      facecolor="white", edgecolor=color, linewidth=1.0))
        axis.text(0.445, y + height - 0.025, card.name, fontsize=8.5, weight="bold", va="center")
        axis.text(0.965, y + height - 0.025, card.status, fontsize=6.5, weight="bold", color="white", ha="right", va="center",
                  bbox={"boxstyle": "round,pad=0.25", "facecolor": color, "edgecolor": "none"})
        wrap_to_width(axis.text(0.445, y + height - 0.06, card.statement, fontsize=7, va="top"), 0.52)
        quote = f"{card.quote} [{card.evidence}]" if card.evidence else card.quote  # else each number is marked inline
        wrap_to_width(axis.text(0.445, y + 0.012, quote, fontsize=6.8, va="bottom", color="#303030", style="italic"), 0.52)


def scenario_names(tiers: TierSpecs) -> dict[str, str]:
    """Each scenario of config/tiers.yaml as the figure names it: its description ('W1; one transfer per layer')
    as a phrase, and its model and device."""
    return {scenario_id: f"{spec.description.replace('; ', ', ', 1)} ({spec.model.name} on {spec.device.name})"
            for scenario_id, spec in tiers.scenarios.items()}


def draw(numbers: Mapping[str, dict], tiers: TierSpecs) -> Figure:
    """Figure 3.1 from the canonical numbers (by id) and the scenarios config/tiers.yaml names for each role."""
    fig = new_figure(10.0, 6.4, "derived; reported where marked")
    axis = fig.add_subplot()
    axis.set_axis_off()
    axis.set_xlim(0, 1)
    axis.set_ylim(0, 1)
    fig.draw_without_rendering()  # a first layout, to measure the words against: wrap_to_width
    axis.text(0.03, 0.965, "Figure 3.1 · Four constraints on KV state, and what a memory tier does to each",
              fontsize=11, weight="bold", va="top")
    axis.text(0.03, 0.915, "Each binds on its own: a tier eases one, leaves one as it was and adds two.",
              fontsize=8, va="top", color="#404040")
    _flow(axis)
    _cards(axis, cards(numbers, tiers.figure, scenario_names(tiers)))
    wrap_to_width(axis.text(0.03, 0.035, "With a tier the limit moves from holding KV to moving it, and moving it has two "
                            "separate conditions: sustainability (the aggregate rate) and hiding (each transfer's deadline).",
                            fontsize=7.5, va="bottom"), 0.94)
    axis.text(0.98, 0.0, FOOTER, fontsize=7, ha="right", va="bottom", color="#606060")
    return settle(fig)
