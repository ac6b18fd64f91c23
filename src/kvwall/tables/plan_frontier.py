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
    Column("estimate", "Priced with"),
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
    Column("band_low", "Measured / estimate, 10th pct", "derived", "times2", "ratio"),
    Column("band_high", "Measured / estimate, 90th pct", "derived", "times2", "ratio"),
)
#: What the datasheet frontier's rows are priced with.
DATASHEET = "datasheet"


def _stretches(points) -> list[list]:
    """The frontier's points, fastest per user first, in runs of one layout."""
    return [list(run) for _, run in groupby(points, key=lambda p: p.deployment)]


def _by_layout(points) -> list[list]:
    """The frontier's points of each layout, the layouts in the order the frontier first reaches them: a calibrated
    frontier's layouts take turns batch by batch where their offsets differ, so a row per stretch would be one per
    point."""
    runs: dict = {}
    for point in points:
        runs.setdefault(point.deployment, []).append(point)
    return list(runs.values())


def _frontiers(panel):
    """A panel's frontiers in rows of points: the datasheet's by stretch (no band), then each engine's calibrated one
    by layout, with its band."""
    yield DATASHEET, _stretches(panel.points), None, None
    for engine, edge in panel.calibrated.items():
        yield f"{engine}, calibrated", _by_layout(edge.points), edge.low, edge.high


@keyed("model_id", "device_id", "weight_format", "estimate", "layout", "first_batch")
def plan_frontier(panels: Sequence, catalog: Catalog, lengths: tuple[int, int]) -> Table:
    """``panels``: kvwall.plan.frontiers.FrontierPanel; ``lengths``: its LENGTHS (ISL, OSL). A row per stretch of a
    panel's frontier that one layout holds, its first and last point (fastest per user first): the datasheet
    frontier's, then each engine's calibrated one with its held-out band."""
    rows = [{"model_id": panel.model, "model": catalog.models[panel.model].name, "device_id": panel.device,
             "device": catalog.devices[panel.device].name, "weight_format": panel.weight_format,
             "kv_format": panel.kv_format, "estimate": estimate, "isl": lengths[0], "osl": lengths[1],
             "budget": panel.devices,
             "layout": run[0].deployment.label, "devices": run[0].deployment.devices, "first_batch": run[0].batch,
             "last_batch": run[-1].batch, "points": len(run), "first_tpot_ms": run[0].tpot * 1e3,
             "last_tpot_ms": run[-1].tpot * 1e3, "first_per_user": run[0].tokens_per_second_per_user,
             "last_per_user": run[-1].tokens_per_second_per_user, "first_per_gpu": run[0].tokens_per_second_per_device,
             "last_per_gpu": run[-1].tokens_per_second_per_device, "band_low": low, "band_high": high}
            for panel in panels for estimate, runs, low, high in _frontiers(panel) for run in runs]
    return Table(
        id="plan_frontier",
        title="The frontier kvwall plan derives for the best-measured models, stretch by stretch of one layout",
        caption="For the models with the most measured agg points at the lengths stated (one system and weight format "
        "each, kvwall.plan.frontiers): of every layout on up to as many devices as the largest measured engine, at "
        "every batch it holds, the points no other beats on both tokens per second per user (1 / TPOT) and per GPU "
        "(batch / (TPOT x devices)), fastest per user first, a row per stretch one layout holds (its first and last "
        "point; a layout may hold several stretches), with the datasheet step-time estimate "
        "(kvwall.model.step_time, no fitted constant), in the KV format and compute precision the validation map "
        "states for the measurements, under the default engine's memory rule; then, per engine measured there, the "
        "same with the engine's calibrated estimate as kvwall plan --engine prices it (its constants times its "
        "offsets, derived from reported data, under its own memory rule), a row per layout on it (its first and last "
        "point along the frontier: where the layouts' offsets differ they take turns batch by batch), with the 10th "
        "and 90th percentiles of "
        "measured / estimate its held-out TPOT error gives (grouped 5-fold with offsets; leaving one model out for a "
        "model the offsets do not hold): a measured point's tokens/s per user and per GPU are the estimate's over that "
        "ratio. The measured points figures/plan_frontier draws beside them are reported, in "
        "tables/reported/serving_measurements.",
        columns=_COLUMNS,
        rows=tuple(rows),
        sources=(MEASUREMENTS_SOURCE, catalog.files["models"], catalog.files["devices"], catalog.files["links"]),
    )
