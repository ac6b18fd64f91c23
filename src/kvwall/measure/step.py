"""A whole decode step timed on a device, against the datasheet bound kvwall derives for the same step.

A step table holds, per batch and context, the step's measured median time (and its 10th and 90th percentiles) and
the weight and KV bytes the timed step read. kvwall's bound of the same step on one device,
max(bytes / HBM bandwidth, FLOPs / dense peak) (kvwall.model.step_time.step_time_bound, SoK section 3.3), over the
measured time is the step's realization: 1 is the datasheet's limit. The table's bytes are held to the bound's
(KV exactly, by SoK Eq. 1; weights within a share that the embedding rows a real step gathers can explain), so a
table of another model's step is refused, not compared.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.errors import SpecError
from kvwall.inputs.specs import Device, Model
from kvwall.model.sharding import kv_bytes_per_device, weight_bytes_per_step
from kvwall.model.step_time import step_time_bound
from kvwall.units import MS

#: The columns of a step table, each a positive number (batch and context whole).
COLUMNS = ("batch", "context", "step_ms", "p10_ms", "p90_ms", "weight_bytes", "kv_bytes")
#: How far the table's weight bytes may sit from the bound's: the embedding rows a step gathers, and no more.
WEIGHT_BYTES_TOLERANCE = 1e-3


@dataclass(frozen=True)
class StepPoint:
    """One measured decode step: ``batch`` sequences of ``context`` tokens, its median time and the bytes it read."""

    batch: int
    context: int
    step_ms: float
    p10_ms: float
    p90_ms: float
    weight_bytes: int
    kv_bytes: int


def _number(text: str, where: str, whole: bool, path: Path) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SpecError(path, where, f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf") or (whole and value != int(value)):
        raise SpecError(path, where, f"{text} must be a positive {'whole ' if whole else ''}number")
    return value


def read_step_table(path: str | Path) -> list[StepPoint]:
    """The points of a step table (CSV with COLUMNS), each value checked; SpecError naming the row and column."""
    path = Path(path)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    missing = [column for column in COLUMNS if rows and column not in rows[0]]
    if not rows or missing:
        raise SpecError(path, ", ".join(missing) or "rows", "a step table needs the columns " + ", ".join(COLUMNS))
    points = []
    for line, row in enumerate(rows, start=2):
        values = {c: _number(row[c], f"line {line}, {c}", c in ("batch", "context", "weight_bytes", "kv_bytes"), path)
                  for c in COLUMNS}
        if not values["p10_ms"] <= values["step_ms"] <= values["p90_ms"]:
            raise SpecError(path, f"line {line}, step_ms", "the median must lie between p10_ms and p90_ms")
        points.append(StepPoint(**{c: int(v) if c in ("batch", "context", "weight_bytes", "kv_bytes") else v
                                   for c, v in values.items()}))
    return points


def realization(points: list[StepPoint], model: Model, device: Device, precision: str = "bf16",
                path: str | Path = "step table") -> list[dict]:
    """Per point: kvwall's bound of the step on one ``device`` in ``precision`` (weights and KV), the measured time and
    their ratio; SpecError where the table's bytes are not the bound's step."""
    one_device = Deployment(weight_format=precision, kv_format=precision)
    rows = []
    for point in points:
        kv = float(kv_bytes_per_device(model, one_device, point.context, point.batch))
        weights = float(weight_bytes_per_step(model, one_device, point.batch))
        if point.kv_bytes != round(kv):
            raise SpecError(path, f"batch {point.batch}, context {point.context}: kv_bytes",
                            f"{point.kv_bytes:,} B is not {model.name}'s {round(kv):,} B in {precision} (SoK Eq. 1)")
        if abs(point.weight_bytes - weights) > WEIGHT_BYTES_TOLERANCE * weights:
            raise SpecError(path, f"batch {point.batch}, context {point.context}: weight_bytes",
                            f"{point.weight_bytes:,} B is not the {weights:,.0f} B {model.name} reads per step in {precision}")
        bound = float(step_time_bound(model, one_device, point.context, point.batch, device.hbm_bandwidth,
                                      device.dense_flops[precision]))
        rows.append({"batch": point.batch, "context": point.context, "bound_ms": bound / MS,
                     "measured_ms": point.step_ms, "realization": bound / MS / point.step_ms})
    return rows
