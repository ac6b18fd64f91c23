"""The frontier `kvwall plan` derives for the best-measured models (kvwall.plan.frontiers), a row per stretch of it
one layout holds: what figures/plan_frontier draws as its line. The measured points it draws on top are reported, in
tables/reported/serving_measurements."""

from __future__ import annotations

from itertools import groupby
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
    Column("first_batch", "From batch", "derived", "int"),
    Column("last_batch", "To batch", "derived", "int"),
    Column("points", "Points", "derived", "int"),
    Column("first_tpot_ms", "TPOT from", "derived", "fixed2", "ms"),
    Column("last_tpot_ms", "TPOT to", "derived", "fixed2", "ms"),
    Column("first_per_user", "Per user from", "derived", "fixed1", "tok/s"),
    Column("last_per_user", "Per user to", "derived", "fixed1", "tok/s"),
    Column("first_per_gpu", "Per GPU from", "derived", "fixed1", "tok/s"),
    Column("last_per_gpu", "Per GPU to", "derived", "fixed1", "tok/s"),
)


def _stretches(points) -> list[list]:
    """The frontier's points, fastest per user first, in runs of one layout."""
    return [list(run) for _, run in groupby(points, key=lambda p: p.deployment)]


@keyed("model_id", "device_id", "weight_format", "layout", "first_batch")
def plan_frontier(panels: Sequence, catalog: Catalog, lengths: tuple[int, int]) -> Table:
    """``panels``: kvwall.plan.frontiers.FrontierPanel; ``lengths``: its LENGTHS (ISL, OSL). A row per stretch of a
    panel's frontier that one layout holds, its first and last point (fastest per user first)."""
    rows = [{"model_id": panel.model, "model": catalog.models[panel.model].name, "device_id": panel.device,
             "device": catalog.devices[panel.device].name, "weight_format": panel.weight_format,
             "kv_format": panel.kv_format, "isl": lengths[0], "osl": lengths[1], "budget": panel.devices,
             "layout": run[0].deployment.label, "devices": run[0].deployment.devices, "first_batch": run[0].batch,
             "last_batch": run[-1].batch, "points": len(run), "first_tpot_ms": run[0].tpot * 1e3,
             "last_tpot_ms": run[-1].tpot * 1e3, "first_per_user": run[0].tokens_per_second_per_user,
             "last_per_user": run[-1].tokens_per_second_per_user, "first_per_gpu": run[0].tokens_per_second_per_device,
             "last_per_gpu": run[-1].tokens_per_second_per_device}
            for panel in panels for run in _stretches(panel.points)]
    return Table(
        id="plan_frontier",
        title="The frontier kvwall plan derives for the best-measured models, stretch by stretch of one layout",
        caption="For the models with the most measured agg points at the lengths stated (one system and weight format "
        "each, kvwall.plan.frontiers): of every layout on up to as many devices as the largest measured engine, at "
        "every batch it holds, the points no other beats on both tokens per second per user (1 / TPOT) and per GPU "
        "(batch / (TPOT x devices)), fastest per user first, a row per stretch one layout holds (its first and last "
        "point; a layout may hold several stretches), with the datasheet step-time estimate "
        "(kvwall.model.step_time, no fitted constant), in the KV format and compute precision the validation map "
        "states for the measurements, under the default engine's memory rule. The measured points figures/plan_frontier "
        "draws beside them are reported, in tables/reported/serving_measurements.",
        columns=_COLUMNS,
        rows=tuple(rows),
        sources=(MEASUREMENTS_SOURCE, catalog.files["models"], catalog.files["devices"], catalog.files["links"]),
    )
