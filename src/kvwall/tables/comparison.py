"""SoK Table 7, the comparison matrix, split by evidence class: derived speedups and footprints, the operating
points assumed for each method, and the quality deltas the methods' papers report."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.model.footprint import effective_kv_bytes, kv_bytes_per_token, traffic_compression
from kvwall.model.regimes import speedup
from kvwall.render import Column, Table, keyed
from kvwall.inputs.reported import load_reported
from kvwall.model.roofline import step_kv_bytes, step_weight_bytes
from kvwall.inputs.specs import Technique
from kvwall.model.workloads import sharing_factor, stored_tokens

TITLE = "Table 7. SoK comparison matrix"
_KEYS = (Column("technique_id", "id", printed=False), Column("method", "Method"))


def _setting(catalog: Catalog) -> str:
    return f"{catalog.model.name}, {catalog.device.name} with {catalog.evaluation.placement} pages"


def _compression_label(t: Technique, compression: float, sharing: float) -> str:
    """The c column as the paper prints it: 8×, 5.3×, σ=2.91, codec 4×."""
    if t.sharing_workload is not None:
        return f"σ={sharing:.2f}"
    if t.codec != 1.0:
        return f"codec {t.codec:g}×"
    return f"{compression:.0f}×" if float(compression).is_integer() else f"{compression:.1f}×"


@keyed("technique_id")
def speedups(catalog: Catalog, selections: dict) -> Table:
    """c = (w / w_q) / r, KV footprint (Eq. 2) and decode speedup S(c) (Eq. for S) at W1 and W2 per method."""
    a, model = catalog.assumptions, catalog.model
    w1, w2 = catalog.workloads["w1"], catalog.workloads["w2"]
    per_token = kv_bytes_per_token(model, a.kv_bytes_per_element)
    rows = []
    for t in catalog.techniques.values():
        c = float(traffic_compression(a.kv_bits, t.kv_bits, t.retention))
        sharing = 1.0
        if t.sharing_workload is not None:
            w = catalog.workloads[t.sharing_workload]
            unique = w.context - w.shared_prefix
            sharing = float(sharing_factor(w.batch, w.shared_prefix, unique))
            kv = float(stored_tokens(w.batch, w.shared_prefix, unique)) * per_token
        else:
            kv = float(effective_kv_bytes(model, w1.context, t.kv_bits / 8.0, t.retention, 1.0, t.fragmentation))
        row = {"technique_id": t.id, "method": t.name, "compression": c, "sharing": sharing,
               "compression_label": _compression_label(t, c, sharing), "kv_bytes": kv}
        for w in (w1, w2):
            weights = step_weight_bytes(model, a.weight_bytes_per_param, w.batch)
            row[f"speedup_{w.id}"] = float(speedup(weights, step_kv_bytes(model, w.context, w.batch, a.kv_bytes_per_element), c))
        rows.append(row)
    return Table(
        id="table7_speedups",
        title=f"{TITLE}: derived byte factors, footprints and decode speedups",
        caption=f"{_setting(catalog)}, {w1.context / a.tokens_per_k:g}k context. c = (w/w_q)/r cuts per-step KV reads; "
        "prefix sharing, paging and tiering change what is stored or moved between steps, not what a step reads, so "
        "their decode speedup is 1. KV (GB) is one request's footprint (Eq. 2); for RadixAttention, the total stored "
        f"across the {catalog.workloads['w3'].batch} requests of W3. W1 and W2 speedups from S(c) (SoK section 3.5).",
        columns=(
            *_KEYS,
            Column("compression", "c (number)", "derived", "fixed3", "ratio", printed=False),
            Column("sharing", "σ", "derived", "fixed2", "ratio", printed=False),
            Column("compression_label", "c", "derived"),
            Column("kv_bytes", "KV (GB)", "derived", "gb1", "B"),
            Column("speedup_w1", "W1", "derived", "times2", "ratio"),
            Column("speedup_w2", "W2", "derived", "times2", "ratio"),
        ),
        rows=tuple(rows),
    )


@keyed("technique_id")
def operating_points(catalog: Catalog, selections: dict) -> Table:
    """The configuration each method is represented by (config/techniques.yaml): domain, w_q, r, codec, losslessness."""
    return Table(
        id="table7_operating_points",
        title=f"{TITLE}: assumed operating point of each method",
        caption="Each method is reduced to the byte factors of Eq. 2 at one operating point; losslessness as in Table 2.",
        columns=(
            *_KEYS,
            Column("domain", "Domain", "assumption"),
            Column("kv_bits", "w_q", "assumption", "bits", "bit"),
            Column("retention", "r", "assumption", "fixed2", "ratio"),
            Column("codec", "Codec", "assumption", "times1", "ratio"),
            Column("lossless", "Lossless", "assumption"),
        ),
        rows=tuple(
            {"technique_id": t.id, "method": t.name, "domain": t.domain, "kv_bits": t.kv_bits, "retention": t.retention,
             "codec": t.codec, "lossless": {"-": "—", "near": "Near"}.get(t.lossless, t.lossless.capitalize())}
            for t in catalog.techniques.values()
        ),
        sources=(catalog.files["techniques"],),
    )


@keyed("technique_id")
def quality(catalog: Catalog, selections: dict) -> Table:
    """Quality deltas as each method's paper reports them (within-paper, not cross-comparable; SoK App. C)."""
    reported = load_reported(catalog.files["reported"])
    rows = []
    for t in catalog.techniques.values():
        entry = reported.get(f"quality.{t.id}")
        rows.append({"technique_id": t.id, "method": t.name, "quality_delta": entry.text if entry else None,
                     "source": entry.source if entry else None})
    return Table(
        id="table7_quality",
        title=f"{TITLE}: quality deltas as reported",
        caption="Within-paper reported values on the benchmarks each paper names; not cross-comparable. A dash: the "
        "method is lossless or the baseline, and no quality result is quoted. Derived numbers the paper prints in this "
        "column (warm-TTFT ratio, W4 fetch and recompute times) are in the derived tables prefix_sharing_w3 and reuse_w4.",
        columns=(*_KEYS, Column("quality_delta", "Quality delta (as reported)", "reported"), Column("source", "Source", "reported")),
        rows=tuple(rows),
    )


@keyed("technique_id")
def paper_view(catalog: Catalog, selections: dict) -> Table:
    """Table 7 as the paper prints it, each column marked derived, assumption or reported."""
    derived, assumed, reported = speedups(catalog, selections), operating_points(catalog, selections), quality(catalog, selections)
    columns = (*_KEYS, *(c for c in derived.columns[2:] if c.printed), assumed.column("lossless"), reported.column("quality_delta"))
    rows = tuple({**d, "lossless": o["lossless"], "quality_delta": q["quality_delta"]}
                 for d, o, q in zip(derived.rows, assumed.rows, reported.rows))
    return Table(id="table7", title=f"{TITLE}, {_setting(catalog)}",
                 caption="Side by side as the paper prints it; the classes are never mixed within a column.",
                 columns=columns, rows=rows)
