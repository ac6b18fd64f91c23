"""House style of the figures and byte-stable saving: the same inputs give the same SVG, PDF and PNG bytes.

The look (fonts, sizes, grid, Agg backend) lives in the repository's matplotlibrc; what makes a save reproducible
lives here, so it holds whatever the working directory.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Iterable, Iterator, Sequence

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

#: Colour and marker of every catalogue id the figures know (models, devices, links, measured kernels), fixed so that
#: adding an entry to the catalogue changes no other entry's look. Devices take darker shades than models, since
#: Figure 1 draws both.
ID_STYLES = {
    "llama-2-13b": ("#1f77b4", "o"),
    "mixtral-8x7b": ("#d62728", "s"),
    "llama-3-8b": ("#2ca02c", "^"),
    "llama-3-70b": ("#9467bd", "D"),
    "llama-3.1-405b": ("#ff7f0e", "v"),
    "deepseek-v2": ("#8c564b", "P"),
    "qwen2.5-7b": ("#e377c2", "X"),
    "qwen3-32b": ("#17becf", "<"),
    "gpt-oss-120b": ("#7f7f7f", ">"),
    "gemma-3-27b": ("#bcbd22", "h"),
    "h100-sxm": ("#08519c", "o"),
    "h200-sxm": ("#a50f15", "s"),
    "b200": ("#006d2c", "^"),
    "mi300x": ("#54278f", "D"),
    "pcie-gen5-x16": ("#1f77b4", "o"),
    "nvlink-4": ("#d62728", "s"),
    "cxl-3-x16": ("#2ca02c", "^"),
    "numpy-contiguous": ("#1f77b4", "o"),
    "numpy-paged": ("#d62728", "s"),
    "torch-sdpa": ("#2ca02c", "^"),
}

#: Markers an id outside ID_STYLES draws from, picked by its hash.
FALLBACK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "*")

#: Colours of the two evidence classes a figure may put side by side (derived here, reported by others).
EVIDENCE_COLORS = {"derived": "#1f4e79", "reported": "#b35806"}

#: Shading of the three regimes (SoK sections 3.5, 5.1); capacity-bound a light grey, at least 10 apart (CIEDE2000)
#: from the other two and from their sharded shades (kvwall.figures.legibility).
REGIME_COLORS = {"weight-bound": "#c6dbef", "kv-bound": "#fdd0a2", "capacity-bound": "#e5e5e5"}


def new_figure(width: float, height: float, evidence: str) -> Figure:
    """A figure outside pyplot (no global state), laid out by the constrained layout engine, its evidence class
    printed in its lower right corner (house rule: every number shows its class)."""
    figure = Figure(figsize=(width, height), layout="constrained")
    figure.supxlabel(f"evidence: {evidence}", x=0.995, ha="right", fontsize=6.5, color="#606060", gid="evidence")
    return figure


def settle(figure: Figure) -> Figure:
    """Lay ``figure`` out once and freeze it, so labels can be placed against final positions and every save has the
    same geometry."""
    with ticks_once():
        figure.draw_without_rendering()
    figure.set_layout_engine("none")
    return figure


def _digest(item: str) -> bytes:
    return hashlib.sha256(item.encode("utf-8")).digest()


def id_color(item: str) -> str:
    """The colour of a catalogue id: its ID_STYLES entry, else a hue fixed by the id's hash (so it never moves)."""
    if item in ID_STYLES:
        return ID_STYLES[item][0]
    hue = int.from_bytes(_digest(item)[:2], "big") / 65536
    return matplotlib.colors.to_hex(matplotlib.colors.hsv_to_rgb((hue, 0.75, 0.7)))


def id_marker(item: str) -> str:
    """The marker of a catalogue id: its ID_STYLES entry, else one picked by the id's hash."""
    if item in ID_STYLES:
        return ID_STYLES[item][1]
    return FALLBACK_MARKERS[_digest(item)[2] % len(FALLBACK_MARKERS)]


def colors(ids: Sequence[str]) -> dict[str, str]:
    """The colour of each id, keyed to the id alone (never to its position in the catalogue)."""
    return {item: id_color(item) for item in ids}


def ordered_colors(ids: Sequence) -> dict:
    """Colours along a sequential map for ordered series (batch sizes, compression factors)."""
    shades = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(ids)))
    return {item: matplotlib.colors.to_hex(shade) for item, shade in zip(ids, shades)}


def label_panel_grid(axes: Sequence, panels: int, columns: int, xlabel: str, ylabel: str) -> None:
    """On a grid of ``columns`` sharing axes with ``panels`` drawn: hide the unused axes, put the x label and tick labels
    on the lowest panel of each column and the y label on the first of each row."""
    for ax in axes[panels:]:
        ax.set_visible(False)
    for ax in axes[max(0, panels - columns):panels]:
        ax.xaxis.set_tick_params(labelbottom=True)
        ax.set_xlabel(xlabel)
    for ax in axes[::columns]:
        ax.set_ylabel(ylabel)


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


@contextlib.contextmanager
def ticks_once() -> Iterator[None]:
    """While open, each axis works out its ticks (matplotlib's Axis._update_ticks: locations, labels, those in view)
    once for each place and size it is drawn at, and returns them again when asked: one draw asks for them many times
    over (each panel's labels again for every panel it shares an axis with, each pass of the constrained layout for
    every box it measures), and what they depend on, the axis's view interval, its axes' box in pixels and the
    resolution, does not change between those asks."""
    update = Axis._update_ticks
    computed: dict[int, tuple[Axis, tuple, list]] = {}  # by id, beside the axis itself, so no id is reused while open

    def once(axis: Axis) -> list:
        state = (*axis.get_view_interval(), *axis.axes.bbox.bounds, axis.figure.dpi)
        if id(axis) not in computed or computed[id(axis)][1] != state:
            computed[id(axis)] = (axis, state, update(axis))
        return computed[id(axis)][2]

    Axis._update_ticks = once
    try:
        yield
    finally:
        Axis._update_ticks = update


def save(figure: Figure, paths: Iterable[str | Path]) -> None:
    """Write a settled ``figure`` to each path in the format its suffix names (svg, pdf, png), without dates or
    versions, each atomically (an interrupted save leaves no half-written file); every format shares the one layout
    ``settle`` froze, and each save, one draw, works out every axis's ticks once (ticks_once)."""

    def draw(temporary: Path, fmt: str) -> None:
        with ticks_once():
            figure.savefig(temporary, format=fmt, metadata=_METADATA[fmt])

    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT}):
        for path in paths:
            fmt = Path(path).suffix.lstrip(".")
            replace_atomically(path, lambda temporary: draw(temporary, fmt))
