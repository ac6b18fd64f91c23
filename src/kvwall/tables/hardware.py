"""SoK Table 3 (vendor specs apart from derived partition bandwidth and ridge points) and the placement ceilings
R_inf of section 3.3, Corollary 1."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.render import Column, Table, keyed
from kvwall.model.roofline import partition_bandwidth, pinned_bandwidth, ridge_point, striped_bandwidth, token_rate_ceiling

TITLE = "Table 3. Hardware specification of the benchmarked accelerators"
_KEYS = (Column("device_id", "id", printed=False), Column("device", "Device"))


def _devices(catalog: Catalog, selections: dict):
    return [catalog.devices[d] for d in selections["table3_devices"]]


@keyed("device_id")
def specs(catalog: Catalog, selections: dict) -> Table:
    """Package, HBM capacity, aggregate bandwidth and dense compute as the datasheets give them."""
    return Table(
        id="table3_hardware",
        title=f"{TITLE}: vendor specifications",
        caption="Compute figures are dense tensor-core rates in TFLOP/s. MI300X on-package fabric bandwidth is not "
        "publicly disclosed.",
        columns=(
            *_KEYS,
            Column("package", "Package", "spec"),
            Column("hbm_capacity", "HBM", "spec", "gb_label", "B"),
            Column("hbm_bandwidth", "β_agg", "spec", "tbps", "B/s"),
            Column("bf16_dense", "BF16", "spec", "tflops", "FLOP/s"),
            Column("fp8_dense", "FP8", "spec", "tflops", "FLOP/s"),
        ),
        rows=tuple(
            {"device_id": d.id, "device": d.name, "package": d.package, "hbm_capacity": d.hbm_capacity,
             "hbm_bandwidth": d.hbm_bandwidth, "bf16_dense": d.dense_flops["bf16"], "fp8_dense": d.dense_flops.get("fp8")}
            for d in _devices(catalog, selections)
        ),
        sources=(catalog.files["devices"],),
    )


@keyed("device_id")
def ridge(catalog: Catalog, selections: dict) -> Table:
    """beta_part = beta_agg / partitions and I* = F_bf16 / beta_agg (SoK Table 3)."""
    precision = catalog.assumptions.compute_precision
    return Table(
        id="table3_ridge",
        title=f"{TITLE}: derived partition bandwidth and ridge point",
        caption=f"Per-partition bandwidth is aggregate bandwidth divided by die or stack count. Ridge point I* = "
        f"dense {precision.upper()} FLOP/s over aggregate bandwidth, in FLOP/B.",
        columns=(
            *_KEYS,
            Column("partition_bandwidth", "β_part", "derived", "tbps", "B/s"),
            Column("ridge_point", "I*", "derived", "int", "FLOP/B"),
        ),
        rows=tuple(
            {"device_id": d.id, "device": d.name, "partition_bandwidth": partition_bandwidth(d),
             "ridge_point": ridge_point(d, precision)}
            for d in _devices(catalog, selections)
        ),
    )


@keyed("device_id")
def paper_view(catalog: Catalog, selections: dict) -> Table:
    """Table 3 as the paper prints it, each column marked spec or derived."""
    spec, derived = specs(catalog, selections), ridge(catalog, selections)
    columns = spec.columns[:5] + derived.columns[2:3] + spec.columns[5:] + derived.columns[3:]
    return Table(
        id="table3",
        title=TITLE,
        caption="As printed in the SoK: vendor specifications beside derived partition bandwidth and ridge point.",
        columns=columns,
        rows=tuple({**s, **d} for s, d in zip(spec.rows, derived.rows)),
    )


@keyed("device_id", "layout")
def placement_ceilings(catalog: Catalog, selections: dict) -> Table:
    """R_inf = beta_eff / (2 L n_kv d_h w_kv) for striped and pinned pages (SoK section 3.3, Corollary 1)."""
    model, w_kv = catalog.model, catalog.assumptions.kv_bytes_per_element
    rows = []
    for d in _devices(catalog, selections):
        layouts = [("striped", striped_bandwidth(d))]
        if d.partitions > 1:
            layouts.append(("pinned", pinned_bandwidth(d)))
        for layout, bandwidth in layouts:
            label = d.name if d.partitions == 1 else f"{d.name} {layout}"
            rows.append({"device_id": d.id, "device": label, "layout": layout, "effective_bandwidth": bandwidth,
                         "token_rate_ceiling": float(token_rate_ceiling(model, bandwidth, w_kv))})
    return Table(
        id="placement_ceilings",
        title=f"Long-context token-rate ceiling R_inf by page placement, {model.name}",
        caption="R_inf = β_eff / (2 L n_kv d_h w_kv) (SoK section 3.3, Corollary 1). Striped pages reach the aggregate "
        "bandwidth unless the package fabric caps it (fabric × n/(n−1)); where the fabric rate is undisclosed "
        "(MI300X) striped is an upper bound. Pinned pages see one partition's bandwidth.",
        columns=(
            *_KEYS,
            Column("layout", "Layout"),
            Column("effective_bandwidth", "β_eff", "derived", "tbps", "B/s"),
            Column("token_rate_ceiling", "tokens/s", "derived", "mega1", "tokens/s"),
        ),
        rows=tuple(rows),
    )
