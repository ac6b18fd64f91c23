"""Deployments that serve W1 and W2: for each catalogue model and device, the fewest devices and the layout that hold
the workload's batch at its context, with the per-device bytes, regime and the two step times (kvwall.model.fitting,
sharding, capacity, step_time). One device with TP 1 is the paper's frame (SoK Tables 5 and 6)."""

from __future__ import annotations

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.model.capacity import device_regime
from kvwall.formats import format_value
from kvwall.model.fitting import MAX_DEVICES, smallest_deployment
from kvwall.model.step_time import device_step
from kvwall.render import Column, Table, keyed

#: The workloads the table sizes deployments for (SoK Table 6: the batch-size lever).
WORKLOADS = ("w1", "w2")


@keyed("model_id", "device_id", "workload_id")
def deployments(catalog: Catalog, selections: dict) -> Table:
    """The smallest deployment per model, device and workload, in the model's checkpoint formats where recorded."""
    a, serving = catalog.assumptions, load_serving_inputs(catalog)
    memory = serving.memory()
    rows = []
    for model in catalog.models.values():
        weight_format = model.weight_format or a.weight_dtype
        for device in catalog.devices.values():
            linked = device.scale_up is not None
            peak = device.dense_flops[a.compute_precision]
            for workload_id in WORKLOADS:
                w = catalog.workloads[workload_id]
                found = smallest_deployment(model, weight_format, a.kv_dtype, w.batch, w.context, device.hbm_capacity,
                                            memory, linked, device.hbm_bandwidth, peak)
                row = {"model_id": model.id, "model": model.name, "device_id": device.id, "device": device.name,
                       "workload_id": w.id.upper(), "weight_format": str(weight_format)}
                if found is not None:
                    step = device_step(model, found, w.context, w.batch, device.hbm_bandwidth, peak,
                                       serving.link_for(device, found), serving.collective_latency,
                                       serving.activation_bytes, serving.hbm_bandwidth_efficiency)
                    row.update({
                        "devices": found.devices, "layout": found.label,
                        "weight_bytes": float(step.weight_bytes), "kv_bytes": float(step.kv_bytes),
                        "regime": str(device_regime(model, found, w.context, w.batch, device.hbm_capacity, memory)),
                        "step_time_bound": float(step.bound), "step_time_estimate": float(step.estimate),
                    })
                else:
                    row.update({"layout": f"none of up to {MAX_DEVICES} devices" if linked
                                else f"not on one; no scale-up link in {catalog.files['devices']}"})
                rows.append(row)
    held = " and ".join(f"{catalog.workloads[w].id.upper()} (b = {catalog.workloads[w].batch}, s = "
                        f"{format_value(catalog.workloads[w].context, 'context')})" for w in WORKLOADS)
    return Table(
        id="deployments",
        title="Deployments that hold W1 and W2: fewest devices per model and device, per-device bytes and step times",
        caption=f"{held}. Of every layout of up to {MAX_DEVICES} devices (TP x PP x DP; TP dividing the query heads and "
        "dividing or a multiple of the KV heads; MoE experts over 1 or all devices of a stage) whose devices keep every "
        "sequence resident, the one with the fewest devices, then the lowest step-time bound. KV memory per device by "
        f"{memory.name}'s rule, {memory.rule} (assumption engine, {memory.parameter}). Weights in the checkpoint's "
        f"formats, part by part, where the model records them, else {a.weight_dtype}; KV in {a.kv_dtype}. Weight bytes "
        "are those read per step (MoE: experts touched; the input embedding gathered, not read; under PP once per "
        "microbatch). Regime per device: s*(b) and s_cap on the device's shares. Bound: max(memory, compute time) at the "
        f"datasheet bandwidth and dense {a.compute_precision} rate, no collectives, PP microbatches in flight; "
        f"estimate: memory time at {serving.hbm_bandwidth_efficiency:g} of the bandwidth plus every collective, no "
        "overlap (assumptions hbm_bandwidth_efficiency, collective_latency), what leaves a scale-up domain at the "
        f"scale-out rate (assumption fabric). A device with no scale-up link in {catalog.files['devices']} is tried on "
        "its own only.",
        columns=(
            Column("model_id", "Model id", printed=False),
            Column("model", "Model"),
            Column("device_id", "Device id", printed=False),
            Column("device", "Device"),
            Column("workload_id", "Workload"),
            Column("weight_format", "Weights"),
            Column("devices", "Devices", "derived", "int", "count"),
            Column("layout", "Layout", "derived"),
            Column("weight_bytes", "Weights/device (GB)", "derived", "gb1", "bytes"),
            Column("kv_bytes", "KV/device (GB)", "derived", "gb1", "bytes"),
            Column("regime", "Regime/device", "derived"),
            Column("step_time_bound", "Bound (ms)", "derived", "ms1", "s"),
            Column("step_time_estimate", "Estimate (ms)", "derived", "ms1", "s"),
        ),
        rows=tuple(rows),
        sources=(catalog.files["models"], catalog.files["devices"], catalog.files["links"], catalog.files["workloads"],
                 catalog.files["assumptions"]),
    )
