"""Figure 1: KV bytes per token by architecture (SoK Table 1, Eq. 1) and the KV footprint of one sequence against
context, with each device's HBM capacity drawn in (SoK section 1.2: 42 GB at 128k, 328 GB at 1M for Llama-3-70B)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvwall.inputs.catalog import Catalog
from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import colors, id_color, id_marker, new_figure, settle, token_axis
from kvwall.model.footprint import kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.formats import megabytes_per_token
from kvwall.units import GB

#: Context lengths the footprint is drawn over, in tokens.
CONTEXTS = np.geomspace(1e3, 2e6, 160)


def bytes_per_token(catalog: Catalog, model_ids) -> dict[str, float]:
    """2 L n_kv d_h w_kv (L (d_c + d_r) w_kv for MLA) per model at the baseline KV precision (SoK Eq. 1)."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    return {m: kv_bytes_per_token(catalog.models[m], w_kv) for m in model_ids}


def footprints(catalog: Catalog, model_ids, contexts=CONTEXTS) -> dict[str, np.ndarray]:
    """KV bytes of one sequence at each context, per model (SoK Eq. 1, b = 1)."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    return {m: kv_bytes(catalog.models[m], contexts, w_kv) for m in model_ids}


def hbm_levels(catalog: Catalog, device_ids) -> dict[float, list[str]]:
    """Device ids grouped by HBM capacity in bytes, so devices of equal capacity share one line."""
    levels: dict[float, list[str]] = {}
    for d in device_ids:
        levels.setdefault(catalog.devices[d].hbm_capacity, []).append(d)
    return levels


def same_curves(catalog: Catalog, model_ids) -> dict[str, str]:
    """Each model whose bytes per token equal an earlier model's, with that model: their footprint lines coincide."""
    per_token, first_at, same = bytes_per_token(catalog, model_ids), {}, {}
    for m in model_ids:
        model = catalog.models[m]
        key = (per_token[m], model.attention.has_window and kv_bytes_per_token_beyond_window(model, 1.0))
        if key in first_at:
            same[m] = first_at[key]
        else:
            first_at[key] = m
    return same


def _bar_label(catalog: Catalog, model_id: str, per_token: float) -> str:
    """Bytes per token; for a sliding-window model also the rate beyond the window, where only full layers grow."""
    model = catalog.models[model_id]
    if not model.attention.has_window:
        return megabytes_per_token(per_token)
    beyond = kv_bytes_per_token_beyond_window(model, catalog.assumptions.kv_bytes_per_element)
    return f"{megabytes_per_token(per_token)}\n{megabytes_per_token(beyond)} beyond the window"


def _fit_labels(axis, labels, values) -> None:
    """Widen the x range until every bar label ends inside the axes: x_max >= v / (1 - label width / axes width)."""
    renderer = axis.figure._get_renderer()  # the renderer of the settled layout
    frame = axis.get_window_extent(renderer).width
    needed = [v / (1 - (label.get_window_extent(renderer).width + 8) / frame) for label, v in zip(labels, values)]
    axis.set_xlim(0, max(max(needed), max(values) * 1.1))


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    model_ids = list(inputs.selections["table1_models"])
    device_ids = list(inputs.selections["table3_devices"])
    per_token = bytes_per_token(catalog, model_ids)
    curves, same = footprints(catalog, model_ids), same_curves(catalog, model_ids)
    palette = colors(model_ids)
    dtype = catalog.assumptions.kv_dtype.upper()

    fig = new_figure(11.0, max(3.9, 0.36 * len(model_ids) + 0.7), FIGURES["fig1_kv_footprint"].evidence)
    bars, lines = fig.subplots(1, 2, width_ratios=(1.1, 1))

    names = [f"{catalog.models[m].name} ({catalog.models[m].attention.label})" for m in model_ids]
    values = [per_token[m] / 1e6 for m in model_ids]
    drawn = bars.barh(names, values, color=[palette[m] for m in model_ids], gid="kv_bytes_per_token")
    bar_labels = bars.bar_label(drawn, labels=[_bar_label(catalog, m, per_token[m]) for m in model_ids], padding=2,
                                fontsize=7)
    bars.invert_yaxis()
    bars.set_xlabel(f"KV MB per token ({dtype}, MB = $10^6$ B)")
    bars.set_title("KV bytes per token by architecture (Table 1)")
    bars.grid(axis="y", visible=False)

    for m in model_ids:
        label = catalog.models[m].name
        if m in same:  # drawn dashed over the line it coincides with, so both colours show
            label = f"{label} (same line as {catalog.models[same[m]].name})"
        lines.plot(CONTEXTS, curves[m] / GB, color=palette[m], label=label, gid=f"footprint {m}",
                   linestyle=(0, (3, 3)) if m in same else "-", marker=id_marker(m), markersize=3.5,
                   markevery=(_marker_offset(m), 20))
    hbm = []
    for capacity, at_level in sorted(hbm_levels(catalog, device_ids).items()):
        for i, d in enumerate(at_level):  # equal capacities: one dash pattern, shifted per device, so all colours show
            others = [catalog.devices[o].name for o in at_level if o != d]
            shared = f" (one line with {', '.join(others)})" if others else ""
            hbm.append(lines.axhline(capacity / GB, color=id_color(d), linewidth=1.0, gid=f"hbm {d}",
                                     linestyle=(4 * i, (4, 4 * (len(at_level) - 1))) if len(at_level) > 1 else "--",
                                     label=f"{catalog.devices[d].name}: {capacity / GB:g} GB{shared}"))
    lines.legend(handles=lines.get_lines()[: len(model_ids)] + hbm[::-1], loc="upper left", bbox_to_anchor=(1.02, 1.0),
                 title="KV of one sequence; HBM of one device", title_fontsize=7)
    lines.set_xscale("log")
    lines.set_yscale("log")
    token_axis(lines.xaxis)
    lines.set_xlabel("context length s (tokens)")
    lines.set_ylabel(f"KV footprint of one sequence (GB, {dtype})")
    lines.set_title("KV footprint against context, with each device's HBM")
    settle(fig)
    _fit_labels(bars, bar_labels, values)
    return fig


def _marker_offset(model_id: str) -> int:
    """Where along its line a model's markers start, fixed by its id, so coinciding lines show apart markers."""
    return int(id_color(model_id)[1:], 16) % 20
