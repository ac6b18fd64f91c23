"""Figure 8: W4 reuse economics (SoK section 4.5): recomputing a context's KV by prefill against fetching it over
each link, with and without the transport codec, on a log scale (dots, since a bar's length on a log axis means
nothing): fetch beats recompute by 38x to 2,100x at 128k."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import colors, id_marker, new_figure, settle, token_axis, tokens_label
from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import kv_bytes
from kvwall.formats import two_significant
from kvwall.model.workloads import fetch_time, recompute_time

#: Context lengths the curves are drawn over, in tokens.
CONTEXTS = np.geomspace(1e3, 1e6, 120)

#: The tiering method whose codec ratio is applied, and the workload the bars are drawn at.
CODEC_TECHNIQUE = "cachegen"
WORKLOAD = "w4"


def recompute_seconds(catalog: Catalog, contexts) -> np.ndarray:
    """Prefill FLOPs / (F_BF16 x MFU) on the evaluation device (SoK section 4.5; MFU is an assumption)."""
    a = catalog.assumptions
    return recompute_time(catalog.model, contexts, catalog.device.dense_flops[a.compute_precision], a.prefill_mfu)


def fetch_seconds(catalog: Catalog, contexts) -> dict[tuple[str, float], np.ndarray]:
    """KV bytes / (link bandwidth x codec) per (link, codec), codec 1 (raw) and the tiering method's ratio."""
    stored = kv_bytes(catalog.model, contexts, catalog.assumptions.kv_bytes_per_element)
    codecs = (1.0, catalog.techniques[CODEC_TECHNIQUE].codec)
    return {(link_id, codec): fetch_time(stored, link.bandwidth, codec) for link_id, link in catalog.links.items() for codec in codecs}


def _series_label(catalog: Catalog, link_id: str, codec: float) -> str:
    name = catalog.links[link_id].name
    return f"fetch over {name}" if codec == 1.0 else f"fetch over {name} + {codec:g}× codec"


def _seconds(value: float) -> str:
    """0.66 s, 12 ms: seconds as the paper prints W4 times."""
    return f"{value * 1e3:.0f} ms" if value < 0.1 else f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    workload = catalog.workloads[WORKLOAD]
    palette = colors(list(catalog.links))
    recompute, fetch = recompute_seconds(catalog, CONTEXTS), fetch_seconds(catalog, CONTEXTS)
    at_w4_recompute = float(recompute_seconds(catalog, workload.context))
    at_w4_fetch = {key: float(value) for key, value in fetch_seconds(catalog, workload.context).items()}

    fig = new_figure(10.0, 4.2, FIGURES["fig8_reuse"].evidence)
    curves, dots = fig.subplots(1, 2, width_ratios=(1.25, 1))
    curves.plot(CONTEXTS, recompute, color="black", linewidth=2.0, gid="recompute",
                label=f"recompute (prefill on {catalog.device.name}, MFU {catalog.assumptions.prefill_mfu:g})")
    for (link_id, codec), seconds in fetch.items():
        curves.plot(CONTEXTS, seconds, color=palette[link_id], linestyle="-" if codec == 1.0 else "--",
                    label=_series_label(catalog, link_id, codec), gid=f"fetch {link_id} codec={codec:g}")
    curves.axvline(workload.context, color="#d62728", linestyle=":", linewidth=0.9)
    curves.annotate(f"{WORKLOAD.upper()}: s = {tokens_label(workload.context)}", (workload.context, 1e-4), xytext=(3, 0),
                    textcoords="offset points", fontsize=6.5, color="#d62728")
    curves.set_xscale("log")
    curves.set_yscale("log")
    token_axis(curves.xaxis)
    curves.set_xlabel("context length s (tokens)")
    curves.set_ylabel("seconds to restore the KV cache")
    curves.set_title(f"{catalog.model.name}: recompute has an s² term, fetch is linear in s")
    curves.legend(loc="upper left", fontsize=6.5)

    keys = list(at_w4_fetch)
    labels = ["recompute"] + [_series_label(catalog, link, codec).replace("fetch over ", "") for link, codec in keys]
    values = [at_w4_recompute] + [at_w4_fetch[k] for k in keys]
    looks = [("black", "o", True)] + [(palette[link], id_marker(link), codec == 1.0) for link, codec in keys]
    for row, (label, value, (color, marker, filled)) in enumerate(zip(labels, values, looks)):
        # a dot, not a bar: on a log axis a bar's length depends on where the axis starts; a dot's place does not
        dots.plot(value, row, marker=marker, markersize=7, color=color, markerfacecolor=color if filled else "white",
                  markeredgewidth=1.4, linestyle="none", gid=f"w4 {label}")
        faster = "" if row == 0 else f"  ({two_significant(at_w4_recompute / value)}× faster)"
        dots.annotate(_seconds(value) + faster, (value, row), xytext=(7, 0), textcoords="offset points", fontsize=6.5,
                      va="center")
    dots.set_yticks(range(len(values)), labels=labels)
    dots.set_ylim(len(values) - 0.5, -0.5)
    dots.set_xscale("log")
    dots.set_xlim(min(values) / 3, max(values) * 40)
    dots.set_xlabel("seconds (log scale; open marker: with the codec)")
    dots.grid(axis="y", visible=False)
    dots.set_title(f"{WORKLOAD.upper()}: reuse one {tokens_label(workload.context)}-token context")
    return settle(fig)

