"""Every measured serving point held against the bounds of its deployment (derived), never mixed with it (reported).

Per understood row, on one GPU of its decode engine:
- the TPOT lower bound: the step time max(memory time, compute time) with the datasheet bandwidth and no collectives
  (kvwall.model.step_time.device_step), for the batch that runs: min(requests in flight, sequences that fit beside
  the weights, kvwall.model.capacity), at the mean decode context isl + osl / 2 (the step time is linear or convex in
  context, so the bound of the mean step is at most the mean of the bounds), over the tokens a step emits;
- the TPOT estimate: the same step with the stated bandwidth efficiency and every collective, no overlap;
- the TTFT lower bound of one request: max(causal prefill FLOPs of isl tokens over the engine's dense peak, one read
  of a GPU's weights over its bandwidth) (SoK App. A), a disagg row's on a replica of its prefill workers;
- realization = bound / measured, for TPOT and TTFT (1 is the hardware's limit; above 1 is below the bound);
- the regime of the step: capacity-bound where fewer sequences fit than are in flight, else compute-bound where
  FLOPs take longer than bytes, else KV-bound where a GPU reads more KV than weights, else weight-bound.
An expert layout MoE-TP x EP inside attention DP is taken as the experts spread over every GPU of the engine (the
same expert weights per GPU; the estimate prices their exchange as dispatch and combine). A row is refused, with its
reason, when its model or system is not mapped, its layout does not divide or is not recorded, it repeats another
row's measurement (kvwall.validation.copies), or its weights do not fit; it is never
dropped silently.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import Deployment, ServingInputs, checked_deployment
from kvwall.inputs.errors import DeploymentError
from kvwall.inputs.validation_map import ValidationMap
from kvwall.model.capacity import running_batch, sequences_that_fit
from kvwall.model.decode_inputs import COST_INPUTS as DECODE_INPUTS
from kvwall.model.decode_inputs import decode_inputs
from kvwall.model.first_token import first_token_bound
from kvwall.model.prompt_steps import prompt_steps, scheduled_sequences
from kvwall.model.sharding import resident_weight_bytes_per_device, step_weight_bytes_per_device
from kvwall.units import MS, dtype_bytes
from kvwall.validation.copies import copies
from kvwall.validation.layout import LAYOUT, decode_engines, prefill_engines

#: What kvwall.model.decode_costs and kvwall.model.first_token_estimate read of each point, per GPU of its decode
#: engine (kvwall.model.decode_inputs), the stored over the counted KV bytes per element of its engine and the decode
#: steps one prompt rides in it (kvwall.model.prompt_steps).
COST_INPUTS = (*DECODE_INPUTS[:9], "stored_kv_ratio", *DECODE_INPUTS[9:], "prompt_steps")

#: The columns that make points one group: everything but the concurrency.
GROUP = ("model", "device", "backend", "weight_format", "mode", "tp", "pp", "dp", "moe_tp", "moe_ep", "isl", "osl")

CAPACITY_BOUND, COMPUTE_BOUND, KV_BOUND, WEIGHT_BOUND = "capacity-bound", "compute-bound", "kv-bound", "weight-bound"


def bounding_precision(device, precision: str) -> str:
    """``precision`` where the device lists a dense rate at it; else its fastest listed one (a bound stays a bound)."""
    return precision if precision in device.dense_flops else max(device.dense_flops, key=device.dense_flops.get)


def _peak(device, precision: str) -> float:
    """The dense rate a bound uses at ``precision`` (bounding_precision)."""
    return device.dense_flops[bounding_precision(device, precision)]


def _mapped(rows: pd.DataFrame, catalog: Catalog, vmap: ValidationMap) -> pd.DataFrame:
    """Model, device and weight format of each row, with a refusal reason where one does not map."""
    out = pd.DataFrame(index=rows.index)
    out["model"] = rows["model_path"].map(vmap.models)
    out["device"] = rows["system"].map(vmap.devices)
    gemm = rows.get("gemm_quant_mode", pd.Series(None, index=rows.index))
    out["weight_format"] = gemm.map(vmap.weight_formats).where(gemm.notna(), vmap.blank_weight_format)
    reason = pd.Series(None, index=rows.index, dtype=object)
    reason[out["weight_format"].isna()] = "gemm_quant_mode " + gemm.astype(str) + f" is not mapped in {vmap.file}"
    reason[out["device"].isna()] = "system " + rows["system"].astype(str) + f" is not mapped to a device in {vmap.file}"
    reason[out["model"].isna()] = "model " + rows["model_path"].astype(str) + f" is not mapped to a model in {vmap.file}"
    out["reason"] = reason
    return out


def evaluate(rows: pd.DataFrame, catalog: Catalog, vmap: ValidationMap, serving: ServingInputs) -> pd.DataFrame:
    """One row per input row: the deployment understood, bounds, estimate, realizations, regime, or why not."""
    mapped = _mapped(rows, catalog, vmap)
    is_moe = mapped["model"].map(lambda m: m in catalog.models and catalog.models[m].moe is not None).astype(bool)
    engines, prefill = decode_engines(rows, is_moe), prefill_engines(rows, is_moe)
    points = pd.concat([rows[["id", "backend", "mode", "isl", "osl"]], mapped.drop(columns="reason"), engines.drop(columns="reason")], axis=1)
    points["reason"] = mapped["reason"].fillna(engines["reason"]).fillna(prefill["reason"])
    points["reason"] = points["reason"].fillna(copies(points, rows))
    points["decode_context"] = rows["isl"] + rows["osl"] / 2.0
    derived = ("fitting", "running_batch", "kv_read_per_device", "weight_read_per_device",
               "hbm_bandwidth", "tpot_bound_ms", "tpot_estimate_ms", "collectives_ms", "ttft_bound_ms", *COST_INPUTS)
    for name in derived:
        points[name] = np.nan
    points["regime"] = None
    columns = {name: points[name].to_numpy(copy=True) for name in (*derived, "regime", "reason")}
    for model, device, deployment, group, at in _deployments(points[points["reason"].isna()], points.index, catalog,
                                                             vmap, columns["reason"], "a layout that does not divide"):
        for name, values in derived_columns(group, model, device, deployment, vmap, serving).items():
            columns.setdefault(name, np.full(len(points), np.nan))[at] = values
    _price_on_prefill_workers(points[pd.isna(columns["reason"]) & (points["mode"] == "disagg").to_numpy()], prefill,
                              columns, catalog, vmap)
    for name, values in columns.items():
        points[name] = values
    points.loc[points["reason"].notna(), list(derived)] = np.nan
    points.loc[points["reason"].notna(), "regime"] = None
    tpot, ttft = rows["silicon_tpot_ms"], rows["silicon_ttft_ms"]
    points["tpot_realization"] = points["tpot_bound_ms"] / tpot
    points["ttft_realization"] = points["ttft_bound_ms"] / ttft
    return points


#: The columns of a point that set its engine's deployment: its model, device, weight format and layout
#: (kvwall.validation.layout; the MoE-TP degree is what the devices leave the expert ranks).
DEPLOYMENT_KEYS = ("model", "device", "weight_format", "devices", "tp", "pp", "dp", "moe_ep")


def _deployments(frame: pd.DataFrame, index: pd.Index, catalog: Catalog, vmap: ValidationMap, reasons: np.ndarray,
                 refusal: str):
    """Each group of ``frame`` that shares DEPLOYMENT_KEYS, as (model, device, its checked deployment, the group, its
    positions in ``index``); a group whose layout does not divide is skipped, ``refusal`` and why written at its
    positions of ``reasons``."""
    for key, group in frame.groupby(list(DEPLOYMENT_KEYS), sort=False):
        model_id, device_id, weight_format, devices, tp, pp, dp, ep = key
        model, device = catalog.models[model_id], catalog.devices[device_id]
        at = index.get_indexer(group.index)
        try:
            deployment = _deployment(model, devices, tp, pp, dp, ep, weight_format, vmap)
        except DeploymentError as error:
            reasons[at] = f"{refusal}: {error.reason}"
            continue
        yield model, device, deployment, group, at


def _deployment(model, devices, tp, pp, dp, ep, weight_format: str, vmap: ValidationMap) -> Deployment:
    """The checked deployment of an engine's layout (kvwall.validation.layout), DeploymentError where it does not
    divide. Under attention DP the routed experts span every GPU of the engine whatever their MoE-TP x EP split (the
    same expert weights per GPU); kvwall.inputs.deployment models that as EP over all of them."""
    experts = int(tp) * int(dp) if model.moe is not None and dp > 1 else int(ep)
    return checked_deployment(model, Deployment(int(devices), int(tp), int(pp), experts, int(dp), weight_format,
                                                 vmap.kv_format))


def _price_on_prefill_workers(disagg: pd.DataFrame, prefill: pd.DataFrame, columns: dict[str, np.ndarray],
                              catalog: Catalog, vmap: ValidationMap) -> None:
    """A disagg row's prompt runs on a replica of its prefill workers (kvwall.validation.layout.prefill_engines): its
    prefill FLOPs and weight bytes per GPU of that replica and its TTFT bound are theirs, in ``columns`` (as evaluate
    holds them, over every point), or its reason where their layout cannot serve the model."""
    workers = disagg.assign(**prefill.loc[disagg.index, ["devices", *LAYOUT]].astype(int))
    for model, device, deployment, group, at in _deployments(workers, prefill.index, catalog, vmap, columns["reason"],
                                                             "the prefill workers' layout does not divide"):
        isl = group["isl"].to_numpy(dtype=float)
        peak = _peak(device, vmap.compute_precision[deployment.weight_format])
        columns["replica_prefill_flops"][at] = first_token_bound(model, deployment, isl, np.inf, 1.0)
        columns["prefill_weight_read"][at] = step_weight_bytes_per_device(model, deployment, isl)
        columns["ttft_bound_ms"][at] = first_token_bound(model, deployment, isl, device.hbm_bandwidth, peak) / MS


def derived_columns(group: pd.DataFrame, model, device, deployment: Deployment, vmap: ValidationMap,
                    serving: ServingInputs) -> dict[str, np.ndarray]:
    """The derived columns of the rows of ``group``, which share one model, device and deployment; each row holds its
    backend, mode, isl, osl, in_flight (the requests in flight on the engine) and decode_context. A row whose
    sequence does not fit beside the weights gets its reason."""
    context = group["decode_context"].to_numpy(dtype=float)
    # The rows do not record the engines' memory settings; the default engine's rule (TensorRT-LLM's, the most
    # generous of the three) keeps every row that ran.
    fitting = sequences_that_fit(model, deployment, context, device.hbm_capacity, serving.memory())
    in_flight = group["in_flight"].to_numpy(dtype=float)
    batch = running_batch(in_flight, np.maximum(fitting, 1.0))
    precision = vmap.compute_precision[deployment.weight_format]
    peak = _peak(device, precision)
    inputs = decode_inputs(model, deployment, context, batch, group["isl"].to_numpy(dtype=float), device.hbm_bandwidth,
                           peak, precision, serving.link_for(device, deployment), serving.collective_latency,
                           serving.activation_bytes, serving.hbm_bandwidth_efficiency)
    step, prefill = inputs.step, inputs.prefill_seconds
    tokens = vmap.tokens_per_step
    weights_once = resident_weight_bytes_per_device(model, deployment) / device.hbm_bandwidth
    rows = len(group)
    columns = {
        "fitting": fitting, "running_batch": batch, "kv_read_per_device": step.kv_bytes,
        "weight_read_per_device": step.weight_bytes, "hbm_bandwidth": device.hbm_bandwidth,
        "tpot_bound_ms": step.bound / tokens / MS, "tpot_estimate_ms": step.estimate / tokens / MS,
        "collectives_ms": step.collectives_time / MS, "ttft_bound_ms": np.maximum(prefill, weights_once) / MS,
        **inputs.costs}
    stored = group["backend"].map(lambda e: vmap.stored_kv_formats.get(e, {}).get(deployment.weight_format, vmap.stored_kv_default))
    columns["stored_kv_ratio"] = stored.map(dtype_bytes).to_numpy(dtype=float) / dtype_bytes(deployment.kv_format)
    columns["prompt_steps"] = _prompt_steps(group, scheduled_sequences(deployment, batch), device.hbm_capacity, serving)
    columns["regime"] = np.select(
        [batch < in_flight, step.compute_bound, step.kv_bytes >= step.weight_bytes],
        [CAPACITY_BOUND, COMPUTE_BOUND, KV_BOUND],
        WEIGHT_BOUND,
    )
    columns = {name: np.broadcast_to(values, (rows,)) for name, values in columns.items()}
    if not np.all(fitting >= 1):
        reason = group["reason"].to_numpy(dtype=object, copy=True)
        reason[np.broadcast_to(fitting < 1, (rows,))] = "the weights leave no room for one sequence's KV on this layout"
        columns["reason"] = reason
    return columns


def _prompt_steps(group: pd.DataFrame, scheduled: np.ndarray, hbm_capacity: float, serving: ServingInputs) -> np.ndarray:
    """The decode steps one prompt rides beside the ``scheduled`` running sequences of one scheduler's batch in each
    agg row's engine, at the engine's token budget (kvwall.model.prompt_steps); 0 in disagg mode, whose prompts run
    on prefill workers."""
    engines, isl = group["backend"].to_numpy(), group["isl"].to_numpy(dtype=float)
    agg, running = (group["mode"] == "agg").to_numpy(), np.broadcast_to(scheduled, isl.shape)
    steps = np.zeros(isl.shape)
    for engine in np.unique(engines[agg]):
        at = agg & (engines == engine)
        steps[at] = prompt_steps(serving.prompt_budgets[engine], hbm_capacity, isl[at], running[at])
    return steps


def derive(points: pd.DataFrame, index: pd.Index, model, device, deployment: Deployment, vmap: ValidationMap,
           serving: ServingInputs) -> None:
    """Fill the derived columns (derived_columns) of the rows ``index`` of ``points``, which share one model, device
    and deployment."""
    for name, values in derived_columns(points.loc[index], model, device, deployment, vmap, serving).items():
        points.loc[index, name] = values
