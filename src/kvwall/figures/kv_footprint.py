"""Figure 1: KV bytes per token by architecture (SoK Table 1, Eq. 1) and the KV footprint of one sequence against
context, with each device's HBM capacity drawn in (SoK section 1.2: 42 GB at 128k, 328 GB at 1M for Llama-3-70B)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvwall.inputs.catalog import Catalog
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import colors, new_figure, token_axis
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
    """Device names grouped by HBM capacity in bytes, so devices of equal capacity share one line."""
    levels: dict[float, list[str]] = {}
    for d in device_ids:
        device = catalog.devices[d]
        levels.setdefault(device.hbm_capacity, []).append(device.name)
    return levels


def _bar_label(catalog: Catalog, model_id: str, per_token: float) -> str:
    """Bytes per token; for a sliding-window model also the rate beyond the window, where only full layers grow."""
    model = catalog.models[model_id]
    if not model.attention.has_window:
        return megabytes_per_token(per_token)
    beyond = kv_bytes_per_token_beyond_window(model, catalog.assumptions.kv_bytes_per_element)
    return f"{megabytes_per_token(per_token)}, {megabytes_per_token(beyond)} beyond the window"


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    model_ids = list(inputs.selections["table1_models"])
    device_ids = list(inputs.selections["table3_devices"])
    per_token = bytes_per_token(catalog, model_ids)
    curves = footprints(catalog, model_ids)
    palette = colors(model_ids)
    dtype = catalog.assumptions.kv_dtype.upper()

    fig = new_figure(10.0, 3.9)
    bars, lines = fig.subplots(1, 2, width_ratios=(1, 1.45))

    names = [f"{catalog.models[m].name} ({catalog.models[m].attention.label})" for m in model_ids]
    values = [per_token[m] / 1e6 for m in model_ids]
    drawn = bars.barh(names, values, color=[palette[m] for m in model_ids], gid="kv_bytes_per_token")
    bars.bar_label(drawn, labels=[_bar_label(catalog, m, per_token[m]) for m in model_ids], padding=2, fontsize=7)
    bars.invert_yaxis()
    bars.set_xlim(0, max(values) * 1.45)
    bars.set_xlabel(f"KV MB per token ({dtype}, MB = 10^6 B)")
    bars.set_title("KV bytes per token by architecture (Table 1)")
    bars.grid(axis="y", visible=False)

    for m in model_ids:
        lines.plot(CONTEXTS, curves[m] / GB, color=palette[m], label=catalog.models[m].name)
    levels = hbm_levels(catalog, device_ids)
    for capacity, names_at in sorted(levels.items()):
        above = capacity == max(levels)  # the top label above its line, the others below theirs, so none collide
        lines.axhline(capacity / GB, color="black", linestyle="--", linewidth=0.8, gid=f"hbm {capacity / GB:g}")
        lines.annotate(f"{', '.join(names_at)} HBM {capacity / GB:g} GB", (CONTEXTS[0], capacity / GB),
                       xytext=(2, 1.5 if above else -1.5), textcoords="offset points", fontsize=6.5,
                       va="bottom" if above else "top")
    lines.set_xscale("log")
    lines.set_yscale("log")
    token_axis(lines.xaxis)
    lines.set_xlabel("context length s (tokens)")
    lines.set_ylabel(f"KV footprint of one sequence (GB, {dtype})")
    lines.set_title("KV footprint against context, with each device's HBM")
    lines.legend(loc="lower right", ncols=2)
    return fig
