"""Figures 1-8: each module draws one figure from kvwall model functions over the catalogue.

This registry names each figure's file stem, module, title and the evidence classes it shows, without importing
matplotlib, so the workflow can list the figures cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from kvwall.figures.inputs import FigureInputs


@dataclass(frozen=True)
class FigureEntry:
    """One figure: the module that draws it, its title, the evidence classes it shows and the view of the catalogue
    its job reads (kvwall.inputs.views: the paper's selections, or the whole catalogue)."""

    module: str
    title: str
    evidence: str
    view: str = "paper"


FIGURES: dict[str, FigureEntry] = {
    "fig1_kv_footprint": FigureEntry("kv_footprint", "KV bytes per token and KV footprint against context", "derived"),
    "fig2_arithmetic_intensity": FigureEntry("intensity", "Arithmetic intensity against context, ridges and floors", "derived"),
    "fig3_roofline": FigureEntry("roofline", "Roofline per device with W1 and W2 decode operating points", "derived"),
    "fig4_regime_map": FigureEntry("regime_map", "Three-regime map per model and device", "derived"),
    "fig5_speedup": FigureEntry("speedup", "Decode speedup against context per compression factor", "derived"),
    "fig6_placement": FigureEntry("placement", "Long-context token-rate ceiling, striped against pinned pages", "derived"),
    "fig7_speed_quality": FigureEntry("speed_quality", "Speed-quality plane of the lossy domains", "derived speed, reported quality"),
    "fig8_reuse": FigureEntry("reuse", "W4 reuse: recompute against fetch", "derived"),
    "deployment_regimes": FigureEntry("deployment_regimes", "Regime map per device of a deployment", "derived", "catalogue"),
}


def draw(name: str, inputs: FigureInputs) -> Figure:
    """Draw the figure ``name``; its module is imported only now."""
    return import_module(f"kvwall.figures.{FIGURES[name].module}").draw(inputs)
