"""The paper's batch-size lever planned on its devices: the frontier of tokens/s per GPU against tokens/s per user
that `kvwall plan` derives for the evaluation model at W1's and W2's context, and where W1 and W2 sit on it.

W1 and W2 (SoK Table 6) are decode with every sequence at the workload's context s, so the search's requests hold s
tokens from their first step to their last (isl = s, osl = 0: kvwall.plan.search.Workload). The frontier is
kvwall.plan.search.frontier over every layout on up to a budget of devices, each at every batch it holds, priced with
the datasheet step-time estimate (kvwall.model.step_time: no fitted constant), in each of FORMATS. The budget of a
device is the larger of MIN_DEVICES and the fewest devices that hold W2 in the paper's formats
(kvwall.model.fitting.smallest_deployment, as tables/derived/deployments), so that W2 is on every panel it can be.
W1 is the fastest point per user at W1's batch; W2 the most tokens per second per GPU at W2's batch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import ServingInputs, load_serving_inputs
from kvwall.model.fitting import smallest_deployment
from kvwall.plan.curves import plan_curves
from kvwall.plan.search import UNBOUNDED, LayoutCurve, PlanPoint, Workload, frontier, point_at

#: The workloads of the batch-size lever, and what each one asks of a point: "user" the fastest per user,
#: "device" the most tokens per second per device (SoK Table 6's objectives, latency and throughput).
WORKLOADS: Mapping[str, str] = {"w1": "user", "w2": "device"}
#: The fewest devices a budget holds: one scale-up box.
MIN_DEVICES = 8
#: The formats of the lines: None, the catalogue's (the paper's frame); else weights, KV and compute precision.
FORMATS: Mapping[str, tuple[str, str, str] | None] = {"paper": None, "fp8": ("fp8", "fp8", "fp8")}


@dataclass(frozen=True)
class WorkloadFrontier:
    """One device in one format at one context: the frontier, fastest per user first, and the points the workloads
    at that context pick (None where no layout on the budget holds the workload's batch)."""

    device: str
    formats: str
    weight_format: str
    kv_format: str
    precision: str
    budget: int
    context: float
    points: tuple[PlanPoint, ...]
    picks: Mapping[str, PlanPoint | None]


def budget(catalog: Catalog, device_id: str, serving: ServingInputs | None = None) -> int:
    """The devices a panel plans on: MIN_DEVICES, or more where W2 needs more in the catalogue's formats.
    ``serving``: the catalogue's serving assumptions where the caller holds them already."""
    a, device, w2 = catalog.assumptions, catalog.devices[device_id], catalog.workloads["w2"]
    if device.scale_up is None:
        return 1
    found = smallest_deployment(catalog.model, a.weight_dtype, a.kv_dtype, w2.batch, w2.context, device.hbm_capacity,
                                (serving or load_serving_inputs(catalog)).memory(), True, device.hbm_bandwidth,
                                device.dense_flops[a.compute_precision])
    return max(MIN_DEVICES, found.devices if found is not None else MIN_DEVICES)


def pick(curves: list[LayoutCurve], batch: int, wants: str) -> PlanPoint | None:
    """Of every layout's point at ``batch``: the fastest per user ("user") or the most per device ("device"), the
    fewest devices on a tie; None where no layout holds the batch."""
    points = [point_at(c, batch - 1) for c in curves if c.batches.size >= batch]
    rate = "tokens_per_second_per_user" if wants == "user" else "tokens_per_second_per_device"
    return max(points, key=lambda p: (getattr(p, rate), -p.deployment.devices), default=None)


def workload_frontiers(catalog: Catalog, device_ids) -> list[WorkloadFrontier]:
    """Per device, per format whose compute precision the device lists a dense rate for (the paper's formats are
    required), and per context of WORKLOADS."""
    serving, found = load_serving_inputs(catalog), []
    contexts = {}
    for workload_id in WORKLOADS:
        contexts.setdefault(catalog.workloads[workload_id].context, []).append(workload_id)
    for device_id in device_ids:
        device, devices = catalog.devices[device_id], budget(catalog, device_id, serving)
        for name, formats in FORMATS.items():
            a = catalog.assumptions
            weights, kv, precision = formats or (a.weight_dtype, a.kv_dtype, a.compute_precision)
            if precision not in device.dense_flops:
                continue
            priced = replace(catalog, assumptions=replace(a, weight_dtype=weights, kv_dtype=kv))
            for context, workload_ids in contexts.items():
                curves = plan_curves(priced, catalog.model, device, precision, devices,
                                     Workload(int(context), 0, UNBOUNDED), serving=serving)
                picks = {w: pick(curves, catalog.workloads[w].batch, WORKLOADS[w]) for w in workload_ids}
                found.append(WorkloadFrontier(device_id, name, weights, kv, precision, devices, context,
                                              tuple(frontier(curves)), picks))
    return found
