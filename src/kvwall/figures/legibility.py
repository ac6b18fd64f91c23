"""What a referee reads off a figure, checked: every legend entry stands for something drawn, no two entries of a
legend look alike (colours closer than MIN_COLOUR_DIFFERENCE in CIEDE2000 with the same marker, line and hatch), and
no text shows TeX markup as plain characters (``R_inf``, ``10^6``, ``I*``) instead of rendering it as mathtext.
``problems`` lists every breach of a laid-out figure, one line each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations
from typing import Iterator

from matplotlib.collections import Collection, LineCollection, PathCollection
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from kvwall.figures.colour_difference import colour_difference

#: Legend entries whose colours differ by less than this (ΔE00) must differ in marker, line or hatch. 10 is about
#: what tells two categories apart at a glance in a small swatch (colours 2-3 apart are the same to most eyes).
MIN_COLOUR_DIFFERENCE = 10.0
#: TeX written as plain text: a subscript or superscript (s_cap, 10^6), a backslash command, a starred symbol (I*).
RAW_TEX = re.compile(r"[A-Za-z0-9)]_[A-Za-z0-9{(]|[A-Za-z0-9)}]\^|\\[A-Za-z]+|\b[A-Za-z]\*")
_MATH = re.compile(r"(?<!\\)\$[^$]*(?<!\\)\$")
_NONE = ("None", "none", "", " ", None)


@dataclass(frozen=True)
class Style:
    """How a legend entry or a drawn artist looks: colour (hex, opaque), alpha, marker, line style, hatch."""

    kind: str  # line, patch, points
    color: str
    alpha: float
    marker: str
    linestyle: str
    hatch: str
    facecolor: str  # a marker's fill (lines) or the face (patches); the colour for points

    def key(self) -> tuple:
        return self.kind, self.color, round(self.alpha, 3), self.marker, self.linestyle, self.hatch, self.facecolor


def _hex(color) -> tuple[str, float]:
    rgba = to_rgba(color)
    return to_hex(rgba[:3]), rgba[3]


def _line_style(line: Line2D) -> Style:
    linestyle = "" if line.get_linestyle() in _NONE else str(line.get_linestyle())
    marker = "" if line.get_marker() in _NONE else str(line.get_marker())
    color, alpha = _hex(line.get_color() if linestyle or not marker else line.get_markeredgecolor())
    face = line.get_markerfacecolor()
    face = _hex(face)[0] if marker and face not in _NONE and to_rgba(face)[3] > 0 else "none"
    return Style("line", color, line.get_alpha() if line.get_alpha() is not None else alpha, marker, linestyle, "", face)


def _patch_style(patch: Patch) -> Style:
    face, alpha = _hex(patch.get_facecolor())
    return Style("patch", face, alpha, "", "", patch.get_hatch() or "", face)


def _points_style(points: Collection) -> list[Style]:
    faces = points.get_facecolors()
    return [Style("points", *_hex(face), "", "", "", _hex(face)[0]) for face in faces] if len(faces) else []


def _collection_styles(collection: Collection) -> list[Style]:
    if isinstance(collection, PathCollection):
        return _points_style(collection)
    if isinstance(collection, LineCollection):
        return [Style("line", *_hex(color), "", "-", "", "none") for color in collection.get_colors()]
    faces = collection.get_facecolors()
    hatch = collection.get_hatch() or ""
    return [Style("patch", *_hex(face), "", "", hatch, _hex(face)[0]) for face in faces]


def _drawn(figure: Figure) -> Iterator[Style]:
    """The styles of every visible artist of the figure that draws data (an empty proxy draws nothing)."""
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        for line in ax.lines:
            if line.get_visible() and len(line.get_xdata()) > 0:
                yield _line_style(line)
        for patch in ax.patches:
            if patch.get_visible():
                yield _patch_style(patch)
        for collection in ax.collections:
            if collection.get_visible() and len(collection.get_paths()) > 0:
                if isinstance(collection, PathCollection) and len(collection.get_offsets()) == 0:
                    continue
                yield from _collection_styles(collection)


def _entries(legend: Legend) -> Iterator[tuple[str, Style]]:
    for handle, text in zip(legend.legend_handles, legend.get_texts()):
        if isinstance(handle, Line2D):
            yield text.get_text(), _line_style(handle)
        elif isinstance(handle, Patch):
            yield text.get_text(), _patch_style(handle)
        elif isinstance(handle, Collection):
            styles = _collection_styles(handle)
            if styles:
                yield text.get_text(), styles[0]


def legends(figure: Figure) -> list[Legend]:
    found = list(figure.legends)
    for ax in figure.axes:
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            found.append(legend)
    return found


def _matches(entry: Style, drawn: Style) -> bool:
    """Whether a drawn artist looks as a legend entry says: same colour, and the entry's marker, line and hatch."""
    if entry.kind == "line":
        if drawn.kind != "line":
            return drawn.kind == "points" and not entry.linestyle and entry.color == drawn.color
        return (entry.color == drawn.color and entry.marker == drawn.marker
                and (entry.linestyle == drawn.linestyle or not entry.linestyle) and entry.facecolor == drawn.facecolor)
    if entry.kind == "patch":
        return (drawn.kind == "patch" and entry.color == drawn.color and entry.hatch == drawn.hatch
                and abs(entry.alpha - drawn.alpha) < 0.01)
    return drawn.kind == "points" and entry.color == drawn.color


def entries_without_artist(figure: Figure) -> list[str]:
    """Legend entries that nothing drawn in the figure looks like."""
    drawn = list({style.key(): style for style in _drawn(figure)}.values())
    return [f"legend entry {label!r} stands for nothing drawn" for legend in legends(figure)
            for label, style in _entries(legend) if not any(_matches(style, d) for d in drawn)]


def alike_entries(figure: Figure) -> list[str]:
    """Pairs of entries of one legend that differ only by colours closer than MIN_COLOUR_DIFFERENCE."""
    problems = []
    for legend in legends(figure):
        for (first, a), (second, b) in combinations(list(_entries(legend)), 2):
            if (a.kind, a.marker, a.linestyle, a.hatch) != (b.kind, b.marker, b.linestyle, b.hatch):
                continue
            difference = colour_difference(a.color, b.color)
            if a.kind == "line" and a.marker and a.facecolor != b.facecolor and (a.facecolor == "none") != (b.facecolor == "none"):
                continue  # a hollow marker against a filled one
            if difference < MIN_COLOUR_DIFFERENCE:
                problems.append(f"legend entries {first!r} and {second!r} look alike (colours {a.color} and {b.color}: "
                                f"ΔE00 {difference:.1f} < {MIN_COLOUR_DIFFERENCE:g})")
    return problems


def _texts(figure: Figure) -> Iterator[Text]:
    for text in figure.findobj(Text):
        if text.get_visible() and text.get_text().strip():
            yield text


def raw_tex(figure: Figure) -> list[str]:
    """Texts that show TeX markup as characters: outside $...$ (mathtext, which matplotlib renders) a subscript,
    superscript, backslash command or starred symbol."""
    found = []
    for text in _texts(figure):
        shown = text.get_text()
        plain = _MATH.sub(" ", shown) if shown.count("$") >= 2 and text.get_parse_math() else shown
        if RAW_TEX.search(plain):
            found.append(f"text {shown!r} shows TeX markup as plain characters")
    return sorted(set(found))


def problems(figure: Figure) -> list[str]:
    """Every legibility breach of a laid-out figure, one line each; empty when there is none."""
    return entries_without_artist(figure) + alike_entries(figure) + raw_tex(figure)
