"""The frontier `kvwall plan` derives for the best-measured models (kvwall.plan.frontiers), a row per point: what
figures/plan_frontier draws as its line. The measured points it draws on top are reported, in
tables/reported/serving_measurements."""

from __future__ import annotations

from typing import Sequence

from kvwall.inputs.catalog import Catalog
from kvwall.render import Column, Table, keyed
from kvwall.tables.validation import MEASUREMENTS_SOURCE

_COLUMNS = (
    Column("model_id", "Model id", printed=False),
    Column("model", "Model"),
    Column("device_id", "Device id", printed=False),
    Column("device", "Device"),
    Column("weight_format", "Weights"),
    Column("kv_format", "KV"),
    Column("isl", "ISL", None, "int"),
    Column("osl", "OSL", None, "int"),
    Column("budget", "Up to", "derived", "int", "devices"),
    Column("layout", "Layout", "derived"),
    Column("devices", "Devices", "derived", "int"),
    Column("batch", "Batch", "derived", "int"),
    Column("tpot_ms", "TPOT", "derived", "fixed2", "ms"),
    Column("tokens_per_second_per_user", "Per user", "derived", "fixed1", "tok/s"),
    Column("tokens_per_second_per_device", "Per GPU", "derived", "fixed1", "tok/s"),
)


@keyed("model_id", "device_id", "weight_format", "layout", "batch")
def plan_frontier(panels: Sequence, catalog: Catalog, lengths: tuple[int, int]) -> Table:
    """``panels``: kvwall.plan.frontiers.FrontierPanel; ``lengths``: its LENGTHS (ISL, OSL)."""
    rows = [{"model_id": panel.model, "model": catalog.models[panel.model].name, "device_id": panel.device,
             "device": catalog.devices[panel.device].name, "weight_format": panel.weight_format,
             "kv_format": panel.kv_format, "isl": lengths[0], "osl": lengths[1], "budget": panel.devices,
             "layout": p.deployment.label, "devices": p.deployment.devices, "batch": p.batch, "tpot_ms": p.tpot * 1e3,
             "tokens_per_second_per_user": p.tokens_per_second_per_user,
             "tokens_per_second_per_device": p.tokens_per_second_per_device}
            for panel in panels for p in panel.points]
    return Table(
        id="plan_frontier",
        title="The frontier kvwall plan derives for the best-measured models, point by point",
        caption="For the models with the most measured agg points at the lengths stated (one system and weight format "
        "each, kvwall.plan.frontiers): of every layout on up to as many devices as the largest measured engine, at "
        "every batch it holds, the points no other beats on both tokens per second per user (1 / TPOT) and per GPU "
        "(batch / (TPOT x devices)), fastest per user first, with the datasheet step-time estimate "
        "(kvwall.model.step_time, no fitted constant), in the KV format and compute precision the validation map "
        "states for the measurements, under the default engine's memory rule. The measured points figures/plan_frontier "
        "draws beside them are reported, in tables/reported/serving_measurements.",
        columns=_COLUMNS,
        rows=tuple(rows),
        sources=(MEASUREMENTS_SOURCE, catalog.files["models"], catalog.files["devices"], catalog.files["links"]),
    )
