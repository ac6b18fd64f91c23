"""Where a figure's words go. The house rule for labels: no text or legend overlaps another, crosses a drawn line, an
edge or a hatching, straddles the border of an axes, or leaves the figure. ``collisions`` lists every breach of a
laid-out figure; ``place`` puts a label at the first of its candidate positions that breaches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

#: Overlap, in pixels, below which a box counts as touching a border or a line rather than crossing it.
TOLERANCE = 0.5
#: The least gap, in points, between two texts: wider than a word space, so neighbouring labels do not read as one.
MIN_GAP = 3.0


@dataclass(frozen=True)
class Box:
    """The drawn extent of one text or legend; ``axes`` is the axes it is drawn in, None for one drawn beside axes."""

    name: str
    bbox: Bbox
    axes: Axes | None


def _all_axes(figure: Figure) -> list[Axes]:
    found, stack = [], [a for a in figure.axes if a.get_visible()]
    while stack:
        ax = stack.pop(0)
        found.append(ax)
        stack += [a for a in ax.child_axes if a.get_visible()]
    return found


def _shown(text: Text) -> bool:
    return text.get_visible() and bool(text.get_text().strip())


def _tick_labels(ax: Axes) -> Iterator[Text]:
    for axis in ax._axis_map.values():  # the axes' own axes (x, y), secondary ones included
        if not axis.get_visible():
            continue
        for tick in axis._update_ticks():  # the ticks inside the view limits, as drawn
            yield from (label for label in (tick.label1, tick.label2) if label.get_visible())


def boxes(figure: Figure, renderer) -> list[Box]:
    """Every text and legend of a laid-out figure with its drawn extent."""
    found = []
    for ax in _all_axes(figure):
        for text in ax.texts:
            if _shown(text):
                found.append(Box(f"text {text.get_text()!r}", text.get_window_extent(renderer), ax))
        for legend in (child for child in ax.get_children() if isinstance(child, Legend) and child.get_visible()):
            found.append(Box("legend of an axes", legend.get_window_extent(renderer), ax))
        outside = [ax.title, ax._left_title, ax._right_title]  # the three titles matplotlib keeps
        if ax.axison:
            outside += [ax.xaxis.label, ax.yaxis.label, *_tick_labels(ax)]
        found += [Box(f"label {t.get_text()!r}", t.get_window_extent(renderer), None) for t in outside if _shown(t)]
    found += [Box(f"figure text {t.get_text()!r}", t.get_window_extent(renderer), None) for t in figure.texts if _shown(t)]
    found += [Box("figure legend", legend.get_window_extent(renderer), None) for legend in figure.legends]
    return found


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (inner.x0 >= outer.x0 - TOLERANCE and inner.y0 >= outer.y0 - TOLERANCE
            and inner.x1 <= outer.x1 + TOLERANCE and inner.y1 <= outer.y1 + TOLERANCE)


def _overlap(a: Bbox, b: Bbox, gap: float = -TOLERANCE) -> bool:
    """Whether a and b come closer than ``gap`` pixels (a negative gap: overlap by more than that)."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > -gap) and (min(a.y1, b.y1) - max(a.y0, b.y0) > -gap)


def _shrunk(bbox: Bbox) -> Bbox:
    return Bbox.from_extents(bbox.x0 + TOLERANCE, bbox.y0 + TOLERANCE, bbox.x1 - TOLERANCE, bbox.y1 - TOLERANCE)


def crossings(ax: Axes, bbox: Bbox, renderer) -> list[str]:
    """What drawn in ``ax`` runs through ``bbox``: lines, markers, edges of patches and collections, hatchings."""
    inner = _shrunk(bbox)
    found = []
    for line in ax.lines:
        if not line.get_visible():
            continue
        path = line.get_transform().transform_path(line.get_path())
        if line.get_linestyle() not in ("None", "none", "", " ") and path.intersects_bbox(inner, filled=False):
            found.append(f"line {line.get_label()!r}")
        elif line.get_marker() not in ("None", "none", "", " ", None):
            pad = line.get_markersize() / 2 * renderer.points_to_pixels(1.0)
            padded = Bbox.from_extents(inner.x0 - pad, inner.y0 - pad, inner.x1 + pad, inner.y1 + pad)
            if padded.count_contains(path.vertices):
                found.append(f"marker of {line.get_label()!r}")
    for patch in ax.patches:
        if patch.get_visible() and patch.get_linewidth() + patch.get_facecolor()[3] > 0:
            path = patch.get_transform().transform_path(patch.get_path())
            if path.intersects_bbox(inner, filled=False):
                found.append(f"edge of patch {patch.get_gid() or patch.get_label()!r}")
    for collection in ax.collections:
        if not collection.get_visible() or not isinstance(collection, (LineCollection, PolyCollection)):
            continue
        hatched = isinstance(collection, PolyCollection) and collection.get_hatch()
        edged = isinstance(collection, LineCollection) or np.any(np.asarray(collection.get_linewidth()) > 0)
        if not (hatched or edged):
            continue
        transform = collection.get_transform()
        for path in collection.get_paths():
            if transform.transform_path(path).intersects_bbox(inner, filled=bool(hatched)):
                found.append(f"{'hatching' if hatched else 'edge'} of {collection.get_gid() or collection.get_label()!r}")
                break
    return found


def _axes_name(ax: Axes) -> str:
    return ax.get_title() or ax.get_title(loc="left") or ax.get_label()


def collisions(figure: Figure) -> list[str]:
    """Every breach of the label rule in a laid-out figure, one line each; empty when there is none."""
    renderer = figure._get_renderer()  # the renderer the layout was made with
    found = boxes(figure, renderer)
    page = figure.bbox
    all_axes = [(ax, ax.get_window_extent(renderer)) for ax in _all_axes(figure)]
    gap = renderer.points_to_pixels(MIN_GAP)
    problems = [f"{box.name} leaves the figure" for box in found if not _inside(box.bbox, page)]
    for box in found:
        for ax, frame in all_axes:
            if _overlap(box.bbox, frame) and not _inside(box.bbox, frame):
                problems.append(f"{box.name} straddles the border of the axes {_axes_name(ax)!r}")
            elif box.axes is not None and _inside(box.bbox, frame) and ax is box.axes:
                problems += [f"{what} crosses {box.name}" for what in crossings(ax, box.bbox, renderer)]
    for i, first in enumerate(found):
        problems += [f"{first.name} overlaps {second.name}" for second in found[i + 1:]
                     if _overlap(first.bbox, second.bbox, gap)]
    return problems


def place(label: Annotation, candidates: Sequence[tuple[float, float, str, str]], keep_clear: Sequence[Text] = (),
          anchors: Sequence[tuple[float, float]] = ()) -> bool:
    """Move an offset label to the first candidate (dx, dy in points, ha, va), at its own anchor or at each of
    ``anchors`` in turn, at which it stays inside its axes, keeps MIN_GAP from ``keep_clear`` and the legend and
    crosses no line, marker, edge or hatching; back to the first candidate if none does. Call on a settled figure.
    True if a clear position was found."""
    ax, renderer = label.axes, label.figure._get_renderer()  # the renderer the layout was made with
    frame = ax.get_window_extent(renderer)
    others = [t.get_window_extent(renderer) for t in keep_clear if t is not label and _shown(t)]
    legend = ax.get_legend()
    if legend is not None:
        others.append(legend.get_window_extent(renderer))
    gap = renderer.points_to_pixels(MIN_GAP)
    first = (label.xy, *candidates[0])
    for xy in anchors or (label.xy,):
        for dx, dy, ha, va in candidates:
            _move(label, xy, dx, dy, ha, va)
            bbox = label.get_window_extent(renderer)
            if (_inside(bbox, frame) and not crossings(ax, bbox, renderer)
                    and not any(_overlap(bbox, other, gap) for other in others)):
                return True
    _move(label, *first)
    return False


def _move(label: Annotation, xy, dx: float, dy: float, ha: str, va: str) -> None:
    label.xy = xy
    label.set_position((dx, dy))
    label.set_horizontalalignment(ha)
    label.set_verticalalignment(va)


#: Candidate offsets around a point label, nearest first: right, left, above, below and the diagonals.
AROUND = tuple(
    (dx * r, dy * r, ha, va)
    for r in (1.0, 2.0, 3.0, 4.5, 6.0)
    for dx, dy, ha, va in ((4, 3, "left", "bottom"), (4, -3, "left", "top"), (-4, 3, "right", "bottom"),
                           (-4, -3, "right", "top"), (0, 5, "center", "bottom"), (0, -5, "center", "top"),
                           (5, 0, "left", "center"), (-5, 0, "right", "center"))
)


def wrap_to_width(text: Text, width: float) -> None:
    """Break ``text`` between words so that no line is wider than ``width`` (a fraction of its axes' width)."""
    renderer = text.figure._get_renderer()  # the renderer the layout is made with
    limit = width * text.axes.get_window_extent(renderer).width
    lines: list[str] = []
    for word in " ".join(text.get_text().split()).split(" "):
        text.set_text(f"{lines[-1]} {word}" if lines else word)
        if lines and text.get_window_extent(renderer).width <= limit:
            lines[-1] = text.get_text()
        else:
            lines.append(word)
    text.set_text("\n".join(lines))
