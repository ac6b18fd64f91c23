"""Figure 7: the speed-quality plane of SoK section 4.6. Derived decode speedup at W2 on one axis, the quality
retention each method's paper reports on the other; methods whose quality is reported only in words are placed on
the speed axis with the quoted words, and the lossless domains are shown apart, since they have no quality cost."""

from __future__ import annotations

from typing import Mapping

from matplotlib.figure import Figure

from kvwall.figures import FIGURES
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.layout import AROUND, place
from kvwall.figures.style import EVIDENCE_COLORS, new_figure, settle, tokens_label
from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import traffic_compression
from kvwall.model.regimes import speedup
from kvwall.inputs.reported import Reported
from kvwall.model.roofline import step_kv_bytes, step_weight_bytes

#: The workload whose decode speedup is the speed axis (SoK section 4.6 plots the batched, KV-bound case).
WORKLOAD = "w2"


def w2_speedup(catalog: Catalog, kv_bits: float, retention: float) -> float:
    """S(c) at W2 for c = (w / w_q) / r (SoK section 3.5, Table 7 column W2)."""
    a, model, w = catalog.assumptions, catalog.model, catalog.workloads[WORKLOAD]
    c = traffic_compression(a.kv_bits, kv_bits, retention)
    return float(speedup(step_weight_bytes(model, a.weight_bytes_per_param, w.batch),
                         step_kv_bytes(model, w.context, w.batch, a.kv_bytes_per_element), c))


def retention_range(reported: Mapping[str, Reported], technique_id: str) -> tuple[float, float] | None:
    """The low and high quality retention a method's paper reports, as fractions, or None if it reports no number."""
    low, high = (reported.get(f"quality-retention.{technique_id}.{end}") for end in ("low", "high"))
    return None if low is None or high is None else (low.value, high.value)


def points(catalog: Catalog, reported: Mapping[str, Reported]) -> dict[str, list[dict]]:
    """The methods, grouped: lossy with a reported retention range, lossy reported only in words, and lossless.

    Table 5 configurations that combine quantization and eviction join the words group: no joint quality is reported.
    """
    groups: dict[str, list[dict]] = {"numeric": [], "text": [], "lossless": []}
    for t in catalog.techniques.values():
        if t.lossless == "-":
            continue
        quoted = reported.get(f"quality.{t.id}")
        point = {"id": t.id, "name": t.name, "speedup": w2_speedup(catalog, t.kv_bits, t.retention),
                 "quoted": quoted.text if quoted else None, "retention": retention_range(reported, t.id)}
        if t.lossless != "no":
            groups["lossless"].append(point)
        else:
            groups["numeric" if point["retention"] else "text"].append(point)
    for row in catalog.evaluation.table5_rows:
        if row.kv_bits < catalog.assumptions.kv_bits and row.retention < 1.0:
            groups["text"].append({"id": row.id, "name": row.name, "speedup": w2_speedup(catalog, row.kv_bits, row.retention),
                                   "quoted": None, "retention": None})
    return groups


def draw(inputs: FigureInputs) -> Figure:
    catalog = inputs.catalog
    groups = points(catalog, inputs.reported)
    w = catalog.workloads[WORKLOAD]
    setting = f"{WORKLOAD.upper()}: b = {w.batch}, s = {tokens_label(w.context)}, {catalog.model.name} on {catalog.device.name}"
    derived, quoted = EVIDENCE_COLORS["derived"], EVIDENCE_COLORS["reported"]

    fig = new_figure(10.0, 5.0, FIGURES["fig7_speed_quality"].evidence)
    axes = fig.subplot_mosaic([["words", "lossless"], ["plane", "lossless"]], height_ratios=(1, 2.8), width_ratios=(2.2, 1))
    plane, words, lossless = axes["plane"], axes["words"], axes["lossless"]
    words.sharex(plane)

    retention_labels = []
    for p in groups["numeric"]:
        low, high = (100 * v for v in p["retention"])
        plane.errorbar([p["speedup"]], [(low + high) / 2], yerr=[[(high - low) / 2], [(high - low) / 2]], fmt="none",
                       ecolor=quoted, elinewidth=3, capsize=4, gid=f"retention {p['id']}")
        retention_labels.append(plane.annotate(f"{p['name']}\nreported {low:g} to {high:g}%", (p["speedup"], high),
                                               xytext=(6, 2), textcoords="offset points", fontsize=7))
    plane.set_xlabel(f"decode speedup at {setting}  [derived: S(c) = (W + K) / (W + K/c)]", color=derived)
    plane.set_ylabel("quality retention (%)  [reported, within each paper;\nnot comparable across papers]", color=quoted)
    plane.set_ylim(90, 100.5)

    for i, p in enumerate(groups["text"]):
        words.plot(p["speedup"], i, marker="D" if p["quoted"] else "x", markersize=6, color=quoted if p["quoted"] else "black",
                   linestyle="none", gid=f"words {p['id']}")
        text = f"{p['name']}: “{p['quoted']}”" if p["quoted"] else f"{p['name']}: no joint quality reported"
        words.annotate(text, (p["speedup"], i), xytext=(-8, 0), textcoords="offset points", fontsize=6.5, ha="right",
                       va="center", color=quoted if p["quoted"] else "black")
    words.set_ylim(len(groups["text"]) - 0.5, -0.5)
    words.set_yticks([])
    words.grid(axis="y", visible=False)
    words.tick_params(labelbottom=False)
    words.set_title("lossy methods whose quality is reported only in words: no number to plot", fontsize=7.5)
    plane.set_xlim(0.0, max(p["speedup"] for g in ("numeric", "text") for p in groups[g]) * 1.15)

    names = [p["name"] for p in groups["lossless"]]
    lossless.plot([p["speedup"] for p in groups["lossless"]], range(len(names)), marker="o", color=derived,
                  linestyle="none", gid="lossless")
    for i, p in enumerate(groups["lossless"]):
        lossless.annotate(f"S = {p['speedup']:.2f}×", (p["speedup"], i), xytext=(0, -7), textcoords="offset points",
                          fontsize=6.3, ha="center", va="top", color=derived)
        if p["quoted"]:
            lossless.annotate(f"“{p['quoted']}”", (p["speedup"], i), xytext=(0, -19), textcoords="offset points",
                              fontsize=6.3, ha="center", va="top", color=quoted)
    lossless.set_yticks(range(len(names)), labels=names)
    lossless.set_ylim(len(names) - 0.4, -0.6)
    lossless.set_xlim(0.0, 2.0)
    lossless.set_xlabel("decode speedup at W2  [derived]", color=derived)
    lossless.grid(axis="y", visible=False)
    lossless.set_title("lossless domains: shown apart\n(they move feasibility, not decode speed)", fontsize=7.5)
    fig.suptitle("Speed-quality plane (SoK section 4.6): speed derived here, quality as each paper reports it", fontsize=9)
    settle(fig)
    for label in retention_labels:
        place(label, AROUND, keep_clear=retention_labels)
    return fig
