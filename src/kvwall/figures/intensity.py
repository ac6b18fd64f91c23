"""Figure 2: arithmetic intensity AI(s, b) against context for several batches (SoK section 3.1), each device's
ridge point (Table 3) and the long-context floors 2g / w_kv (section 3.2): no realistic KV precision makes decode
compute-bound."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import colors, new_figure, ordered_colors, settle, token_axis
from kvwall.inputs.catalog import Catalog
from kvwall.model.roofline import arithmetic_intensity, intensity_long_context_limit, ridge_point
from kvwall.inputs.specs import Model
from kvwall.units import dtype_bytes

#: Context lengths the curves are drawn over, in tokens.
CONTEXTS = np.geomspace(1e2, 1e7, 200)

#: KV storage formats whose long-context floor is drawn, with the label the paper uses.
FLOOR_FORMATS = {"bf16": "BF16", "int8": "INT8", "int4": "INT4", "int2": "2-bit"}


def intensity_curves(catalog: Catalog, model: Model, batches, contexts=CONTEXTS) -> dict[int, np.ndarray]:
    """AI(s, b) in FLOP/B per batch, baseline weight and KV precisions (SoK section 3.1)."""
    a = catalog.assumptions
    return {b: arithmetic_intensity(model, contexts, b, a.weight_bytes_per_param, a.kv_bytes_per_element) for b in batches}


def floors(model: Model) -> dict[str, float]:
    """lim_{s->inf} AI = 2g / w_kv per KV storage format (SoK section 3.2: 8, 16, 32, 64 FLOP/B for g = 8)."""
    return {fmt: float(intensity_long_context_limit(model, dtype_bytes(fmt))) for fmt in FLOOR_FORMATS}


def ridges(catalog: Catalog, device_ids) -> dict[str, float]:
    """I* = F / beta_agg per device at the compute precision of the assumptions (SoK Table 3)."""
    precision = catalog.assumptions.compute_precision
    return {d: ridge_point(catalog.devices[d], precision) for d in device_ids}


def draw(inputs: FigureInputs) -> Figure:
    catalog, model = inputs.catalog, inputs.catalog.model
    batches = list(inputs.selections["table4_batches"])
    device_ids = list(inputs.selections["table3_devices"])
    curves, floor_values, ridge_values = intensity_curves(catalog, model, batches), floors(model), ridges(catalog, device_ids)

    fig = new_figure(8.6, 4.6, FIGURES["fig2_arithmetic_intensity"].evidence)
    ax = fig.subplots()
    batch_colors = ordered_colors(batches)
    for b in batches:
        ax.plot(CONTEXTS, curves[b], color=batch_colors[b], label=f"AI(s, b={b})")
    for fmt in FLOOR_FORMATS:
        ax.axhline(floor_values[fmt], color="#555555", linestyle=":", linewidth=0.9, gid=f"floor {fmt}")
    device_colors = colors(device_ids)
    for d in device_ids:
        ax.axhline(ridge_values[d], color=device_colors[d], linestyle="--", linewidth=0.9, gid=f"ridge {d}",
                   label=f"{catalog.devices[d].name} ridge $I^* = {ridge_values[d]:.0f}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    token_axis(ax.xaxis)
    ax.set_ylim(0.5, 800)
    floor_axis = ax.secondary_yaxis("right")  # the floors named beside the axes, where no curve runs through them
    floor_axis.set_yticks([floor_values[f] for f in FLOOR_FORMATS],
                          labels=[f"{label} floor $2g/w_{{kv}} = {floor_values[f]:g}$" for f, label in FLOOR_FORMATS.items()],
                          minor=False)
    floor_axis.set_yticks([], minor=True)
    floor_axis.tick_params(labelsize=6.5, labelcolor="#555555")
    ax.set_xlabel("context length s (tokens)")
    ax.set_ylabel("arithmetic intensity (FLOP/B)")
    ax.set_title(f"{model.name}: decode intensity falls to $2g/w_{{kv}}$, far below every ridge "
                 f"({catalog.assumptions.weight_dtype.upper()} weights, {catalog.assumptions.kv_dtype.upper()} KV)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper")
    return settle(fig)
