"""Figure 6: the long-context token-rate ceiling R_inf = beta_eff / (2 L n_kv d_h w_kv) per device with pages striped
over every partition or pinned to one (SoK section 3.3, Corollary 1): placement alone opens a gap of up to 8x."""

from __future__ import annotations

from matplotlib.figure import Figure

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import colors, new_figure, settle
from kvwall.inputs.catalog import Catalog
from kvwall.formats import mega
from kvwall.model.roofline import pinned_bandwidth, striped_bandwidth, token_rate_ceiling
from kvwall.inputs.specs import Device

#: The placement policies, with the bandwidth each one realizes.
LAYOUTS = {"striped": striped_bandwidth, "pinned": pinned_bandwidth}


def layouts(device: Device) -> tuple[str, ...]:
    """The placements that differ on a device: one ("monolithic") for a single partition, striped and pinned otherwise."""
    return ("striped",) if device.partitions == 1 else tuple(LAYOUTS)


def _layout_label(device: Device, layout: str) -> str:
    """Monolithic for one partition; striped is an upper bound where the package fabric rate is undisclosed (Remark 6)."""
    if device.partitions == 1:
        return "monolithic"
    if layout == "striped" and device.die_to_die_bandwidth is None:
        return "striped\n(upper bound)"
    return layout


def ceilings(catalog: Catalog, device_ids) -> dict[tuple[str, str], float]:
    """R_inf in tokens/s of the evaluation model per (device, layout), baseline KV precision (SoK Corollary 1)."""
    w_kv = catalog.assumptions.kv_bytes_per_element
    return {
        (d, layout): float(token_rate_ceiling(catalog.model, LAYOUTS[layout](catalog.devices[d]), w_kv))
        for d in device_ids
        for layout in layouts(catalog.devices[d])
    }


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    device_ids = list(inputs.selections["table3_devices"])
    rates = ceilings(catalog, device_ids)
    palette = colors(device_ids)
    label_millions = mega(1)

    bar_count = sum(len(layouts(catalog.devices[d])) for d in device_ids)
    fig = new_figure(max(7.4, 1.05 * bar_count + 1.0), 3.8, FIGURES["fig6_placement"].evidence)
    ax = fig.subplots()
    names, values, bar_colors, hatches = [], [], [], []
    for d in device_ids:
        device = catalog.devices[d]
        for layout in layouts(device):
            names.append(f"{device.name}\n{_layout_label(device, layout)}")
            values.append(rates[(d, layout)])
            bar_colors.append(palette[d])
            hatches.append("///" if layout == "pinned" else "")
    bars = ax.bar(range(len(values)), [v / 1e6 for v in values], color=bar_colors, hatch=hatches, edgecolor="white",
                  gid="token_rate_ceiling")
    ax.bar_label(bars, labels=[label_millions(v) for v in values], padding=2, fontsize=7)
    ax.set_xticks(range(len(values)), labels=names)
    for d in device_ids:
        if (d, "pinned") in rates:
            gap = rates[(d, "striped")] / rates[(d, "pinned")]
            x = names.index(f"{catalog.devices[d].name}\npinned")  # the pinned bar follows its striped one
            ax.annotate(f"{gap:.0f}× gap", (x - 0.5, rates[(d, "striped")] / 1e6 * 1.1), ha="center", fontsize=7.5,
                        fontweight="bold")
    ax.set_ylim(0, max(values) / 1e6 * 1.25)
    ax.set_ylabel(r"$R_\infty$ (million tokens/s)")
    ax.grid(axis="x", visible=False)
    ax.set_title(f"{catalog.model.name}, {catalog.assumptions.kv_dtype.upper()} KV: long-context token-rate ceiling by "
                 "page placement")
    return settle(fig)
