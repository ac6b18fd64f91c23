"""House style of the figures and byte-stable saving: the same inputs give the same SVG, PDF and PNG bytes.

The look (fonts, sizes, grid, Agg backend) lives in the repository's matplotlibrc; what makes a save reproducible
lives here, so it holds whatever the working directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import matplotlib
import numpy as np
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from kvwall.render import replace_atomically

#: Salt for the ids matplotlib writes into SVG (clip paths, glyph references); fixed so two saves are identical.
SVG_HASH_SALT = "kvwall"

#: Metadata each format would otherwise stamp with a date or a library version.
_METADATA = {
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Producer": None, "Creator": None},
    "png": {"Software": None},
}

#: Colours for series keyed by catalogue order (devices, models, batches, links).
SERIES_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
                 "#393b79", "#ad494a")

#: Colours of the two evidence classes a figure may put side by side (derived here, reported by others).
EVIDENCE_COLORS = {"derived": "#1f4e79", "reported": "#b35806"}

#: Shading of the three regimes (SoK sections 3.5, 5.1).
REGIME_COLORS = {"weight-bound": "#c6dbef", "kv-bound": "#fdd0a2", "capacity-bound": "#d9d9d9"}


def new_figure(width: float, height: float) -> Figure:
    """A figure outside pyplot (no global state), laid out by the constrained layout engine."""
    return Figure(figsize=(width, height), layout="constrained")


def colors(ids: Sequence[str]) -> dict[str, str]:
    """One colour per id, in the order given."""
    return {item: SERIES_COLORS[i % len(SERIES_COLORS)] for i, item in enumerate(ids)}


def ordered_colors(ids: Sequence) -> dict:
    """Colours along a sequential map for ordered series (batch sizes, compression factors)."""
    shades = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(ids)))
    return {item: matplotlib.colors.to_hex(shade) for item, shade in zip(ids, shades)}


def tokens_label(value: float, _position=None) -> str:
    """A context length as a short label: 8k, 128k, 1.024M."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def token_axis(axis: Axis) -> None:
    """Log-scaled context lengths labelled 1k, 10k, 1M (decimal k, as the paper counts tokens)."""
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(tokens_label))
    axis.set_minor_formatter(NullFormatter())


def save(figure: Figure, paths: Iterable[str | Path]) -> None:
    """Write ``figure`` to each path in the format its suffix names (svg, pdf, png), without dates or versions,
    each atomically (an interrupted save leaves no half-written file)."""
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT}):
        for i, path in enumerate(paths):
            fmt = Path(path).suffix.lstrip(".")
            replace_atomically(path, lambda temporary: figure.savefig(temporary, format=fmt, metadata=_METADATA[fmt]))
            if i == 0:
                figure.set_layout_engine("none")  # the first save laid the figure out; the others reuse it
