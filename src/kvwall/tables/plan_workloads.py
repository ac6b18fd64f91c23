"""The frontier `kvwall plan` derives for W1 and W2 on every catalogue device, with the point each workload picks
(kvwall.plan.workload_frontiers): a row per frontier point, and one per pick the frontier does not hold."""

from __future__ import annotations

from typing import Mapping, Sequence

from kvwall.formats import format_value
from kvwall.inputs.catalog import Catalog
from kvwall.render import Column, Table, keyed

_COLUMNS = (
    Column("device_id", "Device id", printed=False),
    Column("device", "Device"),
    Column("weight_format", "Weights"),
    Column("kv_format", "KV"),
    Column("precision", "Compute"),
    Column("budget", "Up to", "derived", "int", "devices"),
    Column("context", "Context", None, "context"),
    Column("layout", "Layout", "derived"),
    Column("devices", "Devices", "derived", "int"),
    Column("batch", "Batch", "derived", "int"),
    Column("workload", "Picked by", "derived"),
    Column("on_frontier", "On the frontier", "derived"),
    Column("tpot_ms", "TPOT", "derived", "fixed2", "ms"),
    Column("tokens_per_second_per_user", "Per user", "derived", "fixed1", "tok/s"),
    Column("tokens_per_second_per_device", "Per GPU", "derived", "fixed1", "tok/s"),
)


def _where(point) -> tuple:
    """What tells two points of one line apart: the layout and the batch."""
    return point.deployment, point.batch


def _row(line, point, workloads: str, on_frontier: bool) -> dict:
    return {"device_id": line.device, "weight_format": line.weight_format, "kv_format": line.kv_format,
            "precision": line.precision, "budget": line.budget, "context": line.context,
            "layout": point.deployment.label, "devices": point.deployment.devices, "batch": point.batch,
            "workload": workloads, "on_frontier": "yes" if on_frontier else "no", "tpot_ms": point.tpot * 1e3,
            "tokens_per_second_per_user": point.tokens_per_second_per_user,
            "tokens_per_second_per_device": point.tokens_per_second_per_device}


@keyed("device_id", "weight_format", "kv_format", "context", "layout", "batch")
def plan_workloads(lines: Sequence, catalog: Catalog, workloads: Mapping[str, str], min_devices: int) -> Table:
    """``lines``: kvwall.plan.workload_frontiers.WorkloadFrontier per device and format; ``workloads`` and
    ``min_devices``: its WORKLOADS and MIN_DEVICES. Each frontier fastest per user first, each pick in its place."""
    rows = []
    for line in lines:
        on = {_where(p) for p in line.points}
        picked = {w: _where(p) for w, p in line.picks.items() if p is not None}
        off = [p for p in line.picks.values() if p is not None and _where(p) not in on]
        for p in sorted([*line.points, *off], key=lambda p: -p.tokens_per_second_per_user):
            named = ", ".join(w.upper() for w, at in picked.items() if at == _where(p))
            rows.append({**_row(line, p, named, _where(p) in on), "device": catalog.devices[line.device].name})
    w = {k: catalog.workloads[k] for k in workloads}
    picks = "; ".join(f"{k.upper()} (b = {v.batch}, s = {format_value(v.context, 'context')}) its "
                      f"{'fastest point per user' if workloads[k] == 'user' else 'most tokens/s per GPU'} at b = {v.batch}"
                      for k, v in w.items())
    return Table(
        id="plan_workloads",
        title="What kvwall plan derives for W1 and W2: the frontier per device and format, and each workload's pick",
        caption=f"{catalog.model.name} decoding with every sequence at the workload's context. Of every layout (TP x PP "
        "x DP under the engines' divisibility rules) on up to the stated devices, at every batch it holds, the points "
        "no other beats on both tokens per second per user (1 / TPOT) and per GPU (batch / (TPOT x devices)), fastest "
        "per user first, with the datasheet step-time estimate (kvwall.model.step_time, no fitted constant). The "
        f"devices are {min_devices}, or the fewest that hold W2 in the catalogue's formats where more "
        f"(tables/derived/deployments). Picks: {picks}; a pick off the frontier is a row of its own (a layout "
        "elsewhere serves more on both rates). The catalogue's formats, and FP8 weights and KV at the FP8 dense rate where "
        "the device lists one.",
        columns=_COLUMNS,
        rows=tuple(rows),
        sources=(catalog.files["models"], catalog.files["devices"], catalog.files["links"], catalog.files["workloads"],
                 catalog.files["assumptions"]),
    )
