"""The frontier `kvwall plan` derives beside the points the engines measured, for the best-measured models.

A panel is a model, a system and a weight format at 1,024 input and 1,024 output tokens, agg mode; the panels are
those with the most measured points, one per model. The frontier is kvwall.plan.search.frontier over every layout
on up to as many devices as the panel's largest measured engine, priced at datasheet rates (the step-time estimate)
and, per measured engine with a calibration, with the engine's calibrated estimate as `kvwall plan --engine` prices
it (kvwall.plan.calibrated: the constants times the offsets), with the band of measured / estimate its held-out TPOT
error gives (the 10th to 90th percentile: measured TPOT is the estimate's times it, so a point's tokens/s per user
and per GPU both divide by it); the measured points (reported) are each point's in_flight / (TPOT x GPUs) against
1 / TPOT, per engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.validation_map import ValidationMap
from kvwall.plan.calibrated import PlanCalibration
from kvwall.plan.curves import plan_curves
from kvwall.plan.search import UNBOUNDED, PlanPoint, Workload, frontier
from kvwall.validation.points import bounding_precision

#: The lengths of every panel, and how many panels.
LENGTHS = (1024, 1024)
PANELS = 4


@dataclass(frozen=True)
class CalibratedFrontier:
    """One engine's calibrated frontier, fastest per user first, and the held-out band of measured / estimate its TPOT
    is printed with (the scheme, its 10th and 90th percentiles)."""

    points: tuple[PlanPoint, ...]
    scheme: str
    low: float
    high: float


@dataclass(frozen=True)
class FrontierPanel:
    """One model on one system: the derived frontier, fastest per user first, the measured points per engine
    (tokens/s per user, per GPU) and, per engine calibrated, its calibrated frontier."""

    model: str
    device: str
    weight_format: str
    kv_format: str
    devices: int
    points: tuple[PlanPoint, ...]
    measured: dict[str, tuple[np.ndarray, np.ndarray]]
    calibrated: dict[str, CalibratedFrontier] = field(default_factory=dict)

    @property
    def frontier_per_user(self) -> np.ndarray:
        return np.array([p.tokens_per_second_per_user for p in self.points])

    @property
    def frontier_per_gpu(self) -> np.ndarray:
        return np.array([p.tokens_per_second_per_device for p in self.points])


def chosen(points: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(model, device, weight format) of the panels: the most measured agg points at LENGTHS, one per model."""
    at = points[(points["mode"] == "agg") & (points["isl"] == LENGTHS[0]) & (points["osl"] == LENGTHS[1])]
    sizes = at.groupby(["model", "device", "weight_format"]).size().reset_index(name="n")
    sizes = sizes.sort_values(["n", "model", "device", "weight_format"], ascending=[False, True, True, True])
    return list(sizes.drop_duplicates("model").head(PANELS)[["model", "device", "weight_format"]].itertuples(index=False, name=None))


def frontier_panels(points: pd.DataFrame, catalog: Catalog, vmap: ValidationMap,
                    fits: Mapping[str, PlanCalibration] | None = None) -> list[FrontierPanel]:
    """The panels, each with its frontier in the panel's weight format, the KV format and compute precision the
    validation map states for the measurements, under the default engine's memory rule, as the bounds are; and per
    measured engine that ``fits`` holds (kvwall.plan.calibrated.read_plan_calibration), its calibrated frontier
    under its own memory rule."""
    fits = fits or {}
    panels, serving = [], load_serving_inputs(catalog)
    for model_id, device_id, weight_format in chosen(points):
        at = points[(points["model"] == model_id) & (points["device"] == device_id)
                    & (points["weight_format"] == weight_format) & (points["mode"] == "agg")
                    & (points["isl"] == LENGTHS[0]) & (points["osl"] == LENGTHS[1])]
        devices = int(at["devices"].max())
        formats = replace(catalog, assumptions=replace(catalog.assumptions, weight_dtype=weight_format,
                                                       kv_dtype=vmap.kv_format))
        device = catalog.devices[device_id]
        precision = bounding_precision(device, vmap.compute_precision[weight_format])  # as the bounds do
        workload = Workload(*LENGTHS, tpot_max=UNBOUNDED)
        edge = frontier(plan_curves(formats, catalog.models[model_id], device, precision, devices, workload,
                                    serving=serving))
        measured = {engine: ((1e3 / group["tpot_ms"]).to_numpy(), (group["in_flight"] / (group["tpot_ms"] / 1e3)
                                                                   / group["devices"]).to_numpy())
                    for engine, group in at.groupby("backend", sort=True)}
        calibrated = {}
        for engine in sorted(set(measured) & set(fits)):
            band = fits[engine].bands("agg", catalog.models[model_id])[0]
            curve = frontier(plan_curves(formats, catalog.models[model_id], device, precision, devices, workload,
                                         engine, serving, fits[engine]))
            calibrated[engine] = CalibratedFrontier(tuple(curve), band.scheme, band.low, band.high)
        panels.append(FrontierPanel(model_id, device_id, weight_format, vmap.kv_format, devices, tuple(edge), measured,
                                    calibrated))
    return panels
