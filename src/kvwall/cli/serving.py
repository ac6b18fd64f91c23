"""The per-device answers of ``kvwall regime``, ``crossover`` and ``fit`` for a deployment over several devices.

Every value comes from kvwall.model.sharding, capacity, collectives and step_time; this module names them, with the
equation each rests on built from the model's attention kind, its experts and the deployment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from kvwall.cli.answers import Quantity, derived, given, stated
from kvwall.inputs.deployment import CollectiveLink, Deployment, ServingInputs
from kvwall.inputs.specs import Device, Model
from kvwall.model.equations import kv_share_equation, weight_equation
from kvwall.model.collectives import leaves_domain
from kvwall.model.capacity import (deployment_capacity_crossover, device_traffic_crossover, kv_memory_per_device,
                                   running_batch, sequences_that_fit)
from kvwall.model.fitting import candidate_deployments, holds_batch
from kvwall.model.regimes import regime
from kvwall.model.sharding import kv_heads_per_device, resident_weight_bytes_per_device
from kvwall.model.step_time import device_step, format_speedup, token_rate
from kvwall.units import DTYPE_BYTES, dtype_bytes


@dataclass(frozen=True)
class DeviceAnswer:
    """One deployment of a model on a device at (b, s): per-device bytes, capacity, regime and step times."""

    deployment: Deployment
    batch_asked: int
    regime: str
    devices: Quantity
    scale_up_domains: Quantity
    kv_heads_per_device: Quantity | None
    weight_bytes_per_device: Quantity
    step_weight_bytes_per_device: Quantity
    kv_bytes_per_device: Quantity
    memory_needed_per_device: Quantity
    hbm_capacity: Quantity
    kv_memory_per_device: Quantity
    sequences_that_fit: Quantity
    running_batch: Quantity
    traffic_crossover_per_device: Quantity
    deployment_capacity_crossover: Quantity
    memory_time: Quantity
    compute_time: Quantity
    collectives_time: Quantity
    step_time_bound: Quantity
    step_time_estimate: Quantity
    token_rate_bound: Quantity
    token_rate_estimate: Quantity
    time_per_output_token_bound: Quantity
    time_per_output_token_estimate: Quantity
    compute_bound: bool
    kv_format_speedups: dict[str, Quantity]
    weight_format_speedups: dict[str, Quantity]
    compute_bound_formats: tuple[str, ...]

    def numbers(self) -> dict[str, Quantity]:
        """Every number of the answer, by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Quantity)}


def _step(model: Model, device: Device, d: Deployment, context: float, batch: float, serving: ServingInputs,
          precision: str):
    return device_step(model, d, context, batch, device.hbm_bandwidth, device.dense_flops[precision],
                       serving.link_for(device, d), serving.collective_latency, serving.activation_bytes,
                       serving.hbm_bandwidth_efficiency)


def _links_used(model: Model, link: CollectiveLink, d: Deployment) -> str:
    """The links a deployment's collectives run over: the scale-up link, and the scale-out link where one leaves its
    domain."""
    if not leaves_domain(model, d, link):
        return link.name
    return (f"{link.name} inside each {link.fabric.domain}-device domain and {link.fabric.scale_out_name} past it "
            "(assumption fabric, config/device_assumptions.yaml)")


def _domains(link: CollectiveLink, d: Deployment) -> Quantity:
    """How many scale-up domains the deployment's devices fill, one after another."""
    if link.fabric is None:
        return derived(1, "count", "one device" if d.devices == 1 else f"{link.name} reaches every device")
    return derived(math.ceil(d.devices / link.fabric.domain), "count",
                   f"ceil(devices / {link.fabric.domain}), the devices {link.name} connects (assumption fabric)")


def narrower_formats(current: str) -> tuple[str, ...]:
    """Storage formats narrower than ``current``, widest first."""
    width = dtype_bytes(current)
    return tuple(sorted((f for f, w in DTYPE_BYTES.items() if w < width), key=lambda f: -DTYPE_BYTES[f]))


def device_answer(model: Model, device: Device, d: Deployment, batch: int, context: float, serving: ServingInputs,
                  precision: str) -> DeviceAnswer:
    """Evaluate one deployment at (b, s) per device; the regime and step times are those of the batch that runs (of
    one sequence, for scale, where none fits)."""
    hbm, usable = device.hbm_capacity, serving.usable_memory_fraction
    fitting = float(sequences_that_fit(model, d, context, hbm, usable))
    runs = float(running_batch(batch, fitting))
    measured_batch = max(runs, 1.0)
    step = _step(model, device, d, context, measured_batch, serving, precision)
    s_star = float(device_traffic_crossover(model, d, measured_batch))
    s_cap = float(deployment_capacity_crossover(model, d, hbm, usable))
    resident = resident_weight_bytes_per_device(model, d)
    basis = f"{d.label}, {d.weight_format} weights, {d.kv_format} KV"
    kv_speedups, weight_speedups, compute_bound_formats = {}, {}, []
    for kind, field_name, speedups in (("KV", "kv_format", kv_speedups), ("weight", "weight_format", weight_speedups)):
        for fmt in narrower_formats(getattr(d, field_name)):
            other = _step(model, device, replace(d, **{field_name: fmt}), context, measured_batch, serving, precision)
            speedups[fmt] = derived(format_speedup(step.bound, other.bound), "ratio",
                                    f"step-time bound with {d.kv_format if kind == 'KV' else d.weight_format} over "
                                    f"with {fmt} {kind}, same deployment; 1 where compute binds")
            if bool(other.compute_bound) and not bool(step.compute_bound):
                compute_bound_formats.append(f"{fmt} {kind}")
    heads = kv_heads_per_device(model, d.tensor_parallel)
    parts = [("TP", d.tensor_parallel > 1, "2 L ring all-reduces of ceil(b / DP) x hidden activations, 2 (TP - 1) / TP "
              "of them sent"),
             ("EP", d.expert_parallel > 1, "dispatch and combine of k expert activations per token per MoE layer"),
             ("PP", d.pipeline_parallel > 1, "one send of ceil(b / DP) x hidden activations per stage boundary")]
    applied = "; ".join(f"{name}: {what}" for name, used, what in parts if used)
    link = serving.link_for(device, d)
    link_basis = f"{applied or 'none'}; over {_links_used(model, link, d)}, " \
        f"{serving.collective_latency * 1e6:g} us each (assumption collective_latency)" if d.devices > 1 \
        else "no collectives on one device"
    return DeviceAnswer(
        deployment=d,
        batch_asked=batch,
        regime=str(regime(context, s_star, s_cap)),
        devices=stated(d.devices, "count", f"{basis}: TP x PP x DP"),
        scale_up_domains=_domains(link, d),
        kv_heads_per_device=None if heads is None else derived(heads, "count", "max(n_kv / TP, 1), whole heads"),
        weight_bytes_per_device=derived(resident, "bytes", weight_equation(model, d).replace(" f_touched(b)", "")),
        step_weight_bytes_per_device=derived(step.weight_bytes, "bytes", weight_equation(model, d)
                                             + (", f_touched(b) = 1 - (1 - k/E)^b" if model.moe else "")),
        kv_bytes_per_device=derived(step.kv_bytes, "bytes", kv_share_equation(model, d)),
        memory_needed_per_device=derived(resident + float(step.kv_bytes), "bytes", "weights + KV per device"),
        hbm_capacity=given(device.provenance["hbm_capacity"]),
        kv_memory_per_device=derived(kv_memory_per_device(model, d, hbm, usable), "bytes",
                                     f"(HBM - weights per device) x {usable:g} (assumption usable_memory_fraction)"),
        sequences_that_fit=derived(fitting, "count", "DP x floor(KV memory per device / one sequence's KV per device)"),
        running_batch=derived(runs, "count", f"min(b = {batch}, sequences that fit); the rest wait"),
        traffic_crossover_per_device=derived(s_star, "tokens", "s*(b) per device: KV bytes = weight bytes per step"),
        deployment_capacity_crossover=derived(s_cap, "tokens", "s_cap per device: one sequence's KV share fills the KV memory"),
        memory_time=derived(step.memory_time, "s", "(weight + KV bytes per device) / datasheet HBM bandwidth"),
        compute_time=derived(step.compute_time, "s", f"FLOPs per device / dense {precision} FLOP/s"),
        collectives_time=derived(step.collectives_time, "s", link_basis),
        step_time_bound=derived(step.bound, "s", "PP x max(memory time, compute time), datasheet bandwidth, no collectives"),
        step_time_estimate=derived(step.estimate, "s", f"PP x max(memory time / {serving.hbm_bandwidth_efficiency:g} "
                                   "(assumption hbm_bandwidth_efficiency), compute time) + collectives, no overlap"),
        token_rate_bound=derived(token_rate(runs, step.bound), "tokens/s", "running batch / step-time bound"),
        token_rate_estimate=derived(token_rate(runs, step.estimate), "tokens/s", "running batch / step-time estimate"),
        time_per_output_token_bound=derived(step.bound, "s", "one token per sequence per step: the step-time bound"),
        time_per_output_token_estimate=derived(step.estimate, "s", "the step-time estimate"),
        compute_bound=bool(step.compute_bound),
        kv_format_speedups=kv_speedups,
        weight_format_speedups=weight_speedups,
        compute_bound_formats=tuple(compute_bound_formats),
    )


def fitting_deployments(model: Model, device: Device, batch: int, context: float, serving: ServingInputs,
                        precision: str, weight_format: str, kv_format: str) -> list[DeviceAnswer]:
    """The deployments on ``device`` that hold every sequence asked for, fewest devices first, then fastest bound."""
    answers = []
    for d in candidate_deployments(model, weight_format, kv_format):
        linked = d.devices == 1 or device.scale_up is not None
        if linked and holds_batch(model, d, batch, context, device.hbm_capacity, serving.usable_memory_fraction):
            answers.append(device_answer(model, device, d, batch, context, serving, precision))
    return sorted(answers, key=lambda a: (a.deployment.devices, a.step_time_bound.value))


def smallest_fitting(model: Model, device: Device, batch: int, context: float, serving: ServingInputs,
                     precision: str, weight_format: str, kv_format: str) -> DeviceAnswer | None:
    """The first of fitting_deployments, or None where no deployment of up to 64 devices holds the batch."""
    found = fitting_deployments(model, device, batch, context, serving, precision, weight_format, kv_format)
    return found[0] if found else None


@dataclass(frozen=True)
class DeviceCrossovers:
    """s*(b) of one device's shares at one batch, and s_cap per device on each device, for one deployment."""

    batch: Quantity
    traffic_crossover: Quantity
    capacity_crossover: dict[str, Quantity]


def device_crossovers(model: Model, devices: list[Device], d: Deployment, batch: int,
                      serving: ServingInputs) -> DeviceCrossovers:
    """Traffic and capacity crossovers on a device's shares under the deployment (SoK section 3.4 per device)."""
    usable = serving.usable_memory_fraction
    return DeviceCrossovers(
        batch=stated(batch, "count", "the batch asked for"),
        traffic_crossover=derived(device_traffic_crossover(model, d, batch), "tokens",
                                  f"s*(b) per device: {weight_equation(model, d)} = {kv_share_equation(model, d)}"),
        capacity_crossover={
            device.id: derived(deployment_capacity_crossover(model, d, device.hbm_capacity, usable), "tokens",
                               f"s_cap per device: (HBM - weights per device) x {usable:g} = one sequence's KV per device")
            for device in devices
        },
    )


@dataclass(frozen=True)
class AnswerAtContext:
    """One device and batch at a context: the per-device numbers `kvwall regime` prints for the deployment, and the
    smallest deployment on that device that holds the batch (None where none of up to 64 devices does)."""

    device: str
    device_name: str
    batch: int
    regime: str
    numbers: dict[str, Quantity]
    smallest_fitting_deployment: Deployment | None


def answers_at_context(model: Model, devices: list[Device], d: Deployment, batches: list[int], context: float,
                       serving: ServingInputs, precisions: dict[str, str], weight_format: str,
                       kv_format: str) -> list[AnswerAtContext]:
    """device_answer and smallest_fitting for every device and batch at one context, device by device."""
    found = []
    for device in devices:
        precision = precisions[device.id]
        for batch in batches:
            answer = device_answer(model, device, d, batch, context, serving, precision)
            smallest = smallest_fitting(model, device, batch, context, serving, precision, weight_format, kv_format)
            found.append(AnswerAtContext(device.id, device.name, batch, answer.regime, answer.numbers(),
                                         smallest.deployment if smallest else None))
    return found
