"""A figure job lays out and draws each figure working out every axis's ticks once for each place and size it is
drawn at (kvwall.figures.style.ticks_once), and writes the same bytes as a draw that works them out each time it is
asked."""

import io

import matplotlib
from matplotlib.axis import Axis

from kvwall.figures.style import SVG_HASH_SALT, new_figure, settle, ticks_once


def _shared_log_panels():
    """Six panels sharing log axes, the shape (Figure 4's) whose draw asks each axis for its ticks many times."""
    figure = new_figure(6.0, 4.0, "derived")
    axes = figure.subplots(2, 3, sharex=True, sharey=True).ravel()
    for i, ax in enumerate(axes):
        ax.loglog([1e3, 1e6], [1.0 + i, 1e3 + i], label=f"series {i}")
        ax.set_title(f"panel {i}")
    axes[0].legend()
    return settle(figure), len(axes) * 2


def _svg(figure) -> bytes:
    out = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH_SALT}):
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    return out.getvalue()


def test_a_draw_works_out_each_axis_ticks_once_and_draws_the_same_bytes(monkeypatch):
    figure, axis_count = _shared_log_panels()
    plain = _svg(figure)
    asked = []
    update = Axis._update_ticks
    monkeypatch.setattr(Axis, "_update_ticks", lambda axis: asked.append(axis) or update(axis))
    _svg(figure)
    assert len(asked) > 3 * axis_count  # without it, each axis is asked again and again in one draw
    asked.clear()
    with ticks_once():
        once = _svg(figure)
    assert len(asked) == len(set(map(id, asked))) == axis_count
    assert once == plain
    asked.clear()
    with ticks_once():  # an axis drawn at another size works its ticks out again
        _svg(figure)
        figure.set_size_inches(8.0, 5.0)  # every axes box larger
        _svg(figure)
    assert len(asked) == 2 * axis_count
    assert Axis._update_ticks.__name__ == "<lambda>"  # ticks_once put back what it found
