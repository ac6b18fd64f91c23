"""The per-device answers of ``kvwall regime``, ``crossover`` and ``fit`` for a deployment over one or more devices:
the serving frame, the headline of every answer about a deployment.

Every value comes from kvwall.model (sharding, capacity, engine_memory, collectives, step_time, first_token,
fitting); this module names them, with the equation each rests on built from the model's attention kind, its
experts and the deployment. Where the weights do not fit, the numbers that need a running batch are None, with the
reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from kvwall.cli.answers import Quantity, derived, given, stated
from kvwall.inputs.deployment import CollectiveLink, Deployment, ServingInputs
from kvwall.inputs.engines import OF_TOTAL, EngineMemory
from kvwall.inputs.specs import Device, Model
from kvwall.model.capacity import (deployment_capacity_crossover, device_traffic_crossover, kv_memory_per_device,
                                   running_batch, sequences_that_fit)
from kvwall.model.collectives import leaves_domain
from kvwall.model.engine_memory import engine_fraction
from kvwall.model.equations import kv_share_equation, weight_equation
from kvwall.model.first_token import first_token_bound
from kvwall.model.fitting import holding_deployments, smallest_deployment
from kvwall.model.regimes import CAPACITY_BOUND, regime
from kvwall.model.roofline import experts_touched_fraction, resident_weight_bytes
from kvwall.model.sharding import (computed_params_per_token, kv_bytes_per_device, kv_heads_per_device,
                                   kv_replication, pipeline_microbatches, resident_weight_bytes_per_device)
from kvwall.model.step_time import collective_bytes_per_step, device_step, format_speedup, step_time_bound, token_rate
from kvwall.units import DTYPE_BYTES, dtype_bytes

#: The regime of a step whose FLOPs over the dense peak outlast its bytes over the bandwidth.
COMPUTE_BOUND = "compute-bound"
#: The regime of a deployment whose weights leave no KV memory.
DOES_NOT_FIT = "does not fit"


@dataclass(frozen=True)
class DeviceAnswer:
    """One deployment of a model on a device at (b, s): per-device bytes, capacity, regime and step times (None where
    the weights do not fit; ``reason`` says why)."""

    deployment: Deployment
    engine: EngineMemory
    batch_asked: int
    regime: str
    reason: str | None
    devices: Quantity
    scale_up_domains: Quantity
    kv_heads_per_device: Quantity | None
    kv_replication: Quantity
    weight_bytes_per_device: Quantity
    step_weight_bytes_per_device: Quantity | None
    active_params_per_token: Quantity
    experts_touched_per_layer: Quantity | None
    kv_bytes_per_device: Quantity | None
    kv_bytes_across_deployment: Quantity | None
    memory_needed_per_device: Quantity | None
    hbm_capacity: Quantity
    kv_memory_per_device: Quantity | None
    devices_for_the_weights: Quantity | None
    sequences_that_fit: Quantity
    running_batch: Quantity
    microbatches: Quantity | None
    traffic_crossover_per_device: Quantity | None
    deployment_capacity_crossover: Quantity | None
    memory_time: Quantity | None
    compute_time: Quantity | None
    collectives_time: Quantity | None
    tensor_parallel_bytes: Quantity | None
    expert_parallel_bytes: Quantity | None
    pipeline_parallel_bytes: Quantity | None
    step_time_bound: Quantity | None
    step_time_estimate: Quantity | None
    token_rate_bound: Quantity | None
    token_rate_estimate: Quantity | None
    time_per_output_token_bound: Quantity | None
    time_per_output_token_estimate: Quantity | None
    first_token_bound: Quantity | None
    compute_bound: bool | None
    kv_format_speedups: dict[str, Quantity]
    weight_format_speedups: dict[str, Quantity]
    compute_bound_formats: tuple[str, ...]

    @property
    def fits(self) -> bool:
        """Whether the engine's rule leaves KV memory beside a device's weights."""
        return self.reason is None

    def numbers(self) -> dict[str, Quantity | None]:
        """Every number of the answer, by field name; None where the weights do not fit."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.type.startswith("Quantity") and (getattr(self, f.name) is not None or self.reason is not None)}


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


def _widest(d: Deployment) -> str:
    """The widest format a part of the weights is stored in."""
    return max(d.weight_formats.given.values(), key=lambda f: DTYPE_BYTES[f])


def memory_basis(memory: EngineMemory, hbm_capacity: float, d: Deployment) -> str:
    """The engine's rule as applied to this device and layout, with its source."""
    f = engine_fraction(memory, hbm_capacity, d)
    shape = f"{f:g} x HBM - weights" if memory.of == OF_TOTAL else f"{f:g} x (HBM - weights)"
    default = " (SGLang's default for this device and layout)" if memory.fraction is None else ""
    return f"{shape}: {memory.name} {memory.parameter.split('_', 1)[1]} = {f:g}{default} (assumption, {memory.source})"


def weight_budget(memory: EngineMemory, hbm_capacity: float, d: Deployment) -> float:
    """The most weight bytes the engine's rule lets one device hold beside no KV: f x HBM, or all of the HBM where
    the rule takes a share of what the weights leave."""
    return engine_fraction(memory, hbm_capacity, d) * hbm_capacity if memory.of == OF_TOTAL else hbm_capacity


def devices_for_weights(model: Model, d: Deployment, hbm_capacity: float, memory: EngineMemory) -> int:
    """A lower bound on the devices the weights need under the engine's rule: every weight held once, over
    weight_budget."""
    return max(1, math.ceil(resident_weight_bytes(model, d.weight_formats) / weight_budget(memory, hbm_capacity, d)))


def _speedups(model, device, d, context, batch, serving, precision, step):
    """Step-time bound ratios of every narrower KV format and of every weight format narrower than the widest part
    (the parts wider than it brought down to it), and those that make the step compute-bound."""
    kv_speedups, weight_speedups, compute_bound_formats = {}, {}, []
    cases = [("KV", fmt, replace(d, kv_format=fmt)) for fmt in narrower_formats(d.kv_format)]
    cases += [("weight", fmt, replace(d, weight_format=d.weight_formats.narrowed(fmt, DTYPE_BYTES)))
              for fmt in narrower_formats(_widest(d))]
    for kind, fmt, other_d in cases:
        other = _step(model, device, other_d, context, batch, serving, precision)
        now = d.kv_format if kind == "KV" else str(d.weight_format)
        (kv_speedups if kind == "KV" else weight_speedups)[fmt] = derived(
            format_speedup(step.bound, other.bound), "ratio",
            f"step-time bound with {now} over with {fmt} {kind}{' (parts wider than it)' if kind == 'weight' else ''}, "
            "same deployment; 1 where compute binds")
        if bool(other.compute_bound) and not bool(step.compute_bound):
            compute_bound_formats.append(f"{fmt} {kind}")
    return kv_speedups, weight_speedups, tuple(compute_bound_formats)


def device_answer(model: Model, device: Device, d: Deployment, batch: int, context: float, serving: ServingInputs,
                  precision: str, engine: str | None = None) -> DeviceAnswer:
    """Evaluate one deployment at (b, s) per device under the engine's memory rule; the regime and step times are
    those of the batch that runs (of one sequence, for scale, where none fits beside the weights of a fitting
    deployment); none where the weights do not fit."""
    memory, hbm = serving.memory(engine), device.hbm_capacity
    free = kv_memory_per_device(model, d, hbm, memory)
    fitting = float(sequences_that_fit(model, d, context, hbm, memory))
    runs = float(running_batch(batch, fitting))
    measured_batch = max(runs, 1.0)
    resident = resident_weight_bytes_per_device(model, d)
    heads = kv_heads_per_device(model, d.tensor_parallel)
    link = serving.link_for(device, d)
    runs_note = f"b = {measured_batch:g}" + (" (the batch that runs)" if 0 < runs < batch else "")
    kv_device = float(kv_bytes_per_device(model, d, context, measured_batch))
    common = dict(
        deployment=d, engine=memory, batch_asked=batch,
        devices=stated(d.devices, "count", f"{d.label}, {d.weight_format} weights, {d.kv_format} KV: TP x PP x DP"),
        scale_up_domains=_domains(link, d),
        kv_heads_per_device=None if heads is None else derived(heads, "count", "max(n_kv / TP, 1), whole heads"),
        kv_replication=derived(kv_replication(model, d.tensor_parallel), "ratio",
                               "TP ranks holding each KV byte: TP n_kv' / n_kv, TP for an MLA latent, 1 for state"),
        weight_bytes_per_device=derived(resident, "bytes", weight_equation(model, d, read=False)),
        active_params_per_token=derived(computed_params_per_token(model), "count",
                                        "parameters a token multiplies through: P_active less the gathered input "
                                        "embedding" if not model.tied_embeddings else "P_active, shared plus k of E routed experts"),
        experts_touched_per_layer=derived(model.moe.routed_experts * float(experts_touched_fraction(model, measured_batch)),
                                          "count", f"E (1 - (1 - k/E)^b) at {runs_note}, uniform routing (assumption "
                                          "moe_uniform_routing)") if model.moe else None,
        kv_bytes_per_device=derived(kv_device, "bytes", kv_share_equation(model, d)),
        kv_bytes_across_deployment=derived(kv_device * d.devices, "bytes", "KV bytes per device x devices"),
        memory_needed_per_device=derived(resident + kv_device, "bytes", "weights + KV per device"),
        hbm_capacity=given(device.provenance["hbm_capacity"]),
        sequences_that_fit=derived(fitting, "count", "DP x floor(KV memory per device / one sequence's KV per device)"),
        running_batch=derived(runs, "count", f"min(b = {batch}, sequences that fit); the rest wait"),
    )
    if free <= 0.0:
        needed = devices_for_weights(model, d, hbm, memory)
        budget = weight_budget(memory, hbm, d)
        reason = (f"does not fit: the weights need at least {needed} devices ({resident / 1e9:,.1f} GB on each device of "
                  f"{d.label}, where {memory.name}'s rule, {memory_basis(memory, hbm, d).split(':')[0]}, lets a "
                  f"{device.name} hold at most {budget / 1e9:,.1f} GB of weights)")
        nothing = {f.name: None for f in fields(DeviceAnswer) if f.name not in common and f.type.startswith("Quantity")}
        return DeviceAnswer(regime=DOES_NOT_FIT, reason=reason, compute_bound=None, kv_format_speedups={},
                            weight_format_speedups={}, compute_bound_formats=(), **common,
                            **{**nothing, "devices_for_the_weights": derived(needed, "count", "weights once over the "
                               "engine's share of one device's HBM, a lower bound (divisibility and replication aside)")})
    step = _step(model, device, d, context, measured_batch, serving, precision)
    s_star = float(device_traffic_crossover(model, d, measured_batch))
    s_cap = float(deployment_capacity_crossover(model, d, hbm, memory))
    kv_speedups, weight_speedups, compute_bound_formats = _speedups(model, device, d, context, measured_batch, serving,
                                                                    precision, step)
    bytes_regime = str(regime(context, s_star, s_cap))
    answer_regime = COMPUTE_BOUND if bytes_regime != CAPACITY_BOUND and bool(step.compute_bound) else bytes_regime
    microbatches = float(pipeline_microbatches(d, measured_batch))
    replica = f"ceil({runs_note} / DP)" if d.data_parallel > 1 else runs_note
    sent = collective_bytes_per_step(model, d, measured_batch, serving.activation_bytes)
    parts = [("TP", d.tensor_parallel > 1, f"2 L ring all-reduces of {replica} x hidden activations, 2 (TP - 1) / TP "
              "of them sent"),
             ("EP", d.expert_parallel > 1, "dispatch and combine of k expert activations per token per MoE layer, "
              "the average rank's share"),
             ("PP", d.pipeline_parallel > 1, f"one send of {replica} x hidden activations per stage boundary")]
    applied = "; ".join(f"{name}: {what}" for name, used, what in parts if used)
    link_basis = f"{applied or 'none'}; over {_links_used(model, link, d)}, " \
        f"{serving.collective_latency * 1e6:g} us each (assumption collective_latency)" if d.devices > 1 \
        else "no collectives on one device"
    pipeline = (f"PP x max(memory, compute time) of one of {microbatches:g} microbatches in flight (one per stage, "
                "as vLLM, SGLang and TensorRT-LLM decode under PP)" if d.pipeline_parallel > 1 else
                "max(memory time, compute time)")

    def sent_bytes(name: str, used: bool) -> Quantity | None:
        return derived(sent[name], "bytes", f"{name} bytes one device sends per step ({dict((p[0], p[2]) for p in parts)[name]})") if used else None

    return DeviceAnswer(
        regime=answer_regime, reason=None, **common,
        step_weight_bytes_per_device=derived(step.weight_bytes, "bytes", weight_equation(model, d)
                                             + (", f_touched(b) = 1 - (1 - k/E)^b" if model.moe else "")
                                             + (", once per microbatch" if d.pipeline_parallel > 1 else "")),
        kv_memory_per_device=derived(free, "bytes", memory_basis(memory, hbm, d)),
        devices_for_the_weights=None,
        microbatches=derived(microbatches, "count", "min(PP, sequences per replica) in flight") if d.pipeline_parallel > 1 else None,
        traffic_crossover_per_device=derived(s_star, "tokens", "s*(b) per device: KV bytes = weight bytes per step"),
        deployment_capacity_crossover=derived(s_cap, "tokens", "s_cap per device: one sequence's KV share fills the KV memory"),
        memory_time=derived(step.memory_time, "s", "(weight + KV bytes per device) / datasheet HBM bandwidth"),
        compute_time=derived(step.compute_time, "s", f"FLOPs per device / dense {precision} FLOP/s"),
        collectives_time=derived(step.collectives_time, "s", link_basis),
        tensor_parallel_bytes=sent_bytes("TP", d.tensor_parallel > 1),
        expert_parallel_bytes=sent_bytes("EP", d.expert_parallel > 1 and model.moe is not None),
        pipeline_parallel_bytes=sent_bytes("PP", d.pipeline_parallel > 1),
        step_time_bound=derived(step.bound, "s", f"{pipeline}, datasheet bandwidth, no collectives"),
        step_time_estimate=derived(step.estimate, "s", f"the bound's form with the memory time / "
                                   f"{serving.hbm_bandwidth_efficiency:g} (assumption hbm_bandwidth_efficiency), plus "
                                   "collectives, no overlap"),
        token_rate_bound=derived(token_rate(runs, step.bound), "tokens/s", "running batch / step-time bound"),
        token_rate_estimate=derived(token_rate(runs, step.estimate), "tokens/s", "running batch / step-time estimate"),
        time_per_output_token_bound=derived(step.bound, "s", "one token per sequence per step: the step-time bound"),
        time_per_output_token_estimate=derived(step.estimate, "s", "the step-time estimate"),
        first_token_bound=derived(first_token_bound(model, d, context, device.hbm_bandwidth, device.dense_flops[precision]),
                                  "s", f"one request of s tokens: max(causal prefill FLOPs over TP x PP devices' dense "
                                  f"{precision} peak (routed experts over every device of a stage), one read of a "
                                  "device's weights)"),
        compute_bound=bool(step.compute_bound),
        kv_format_speedups=kv_speedups,
        weight_format_speedups=weight_speedups,
        compute_bound_formats=compute_bound_formats,
    )


def fitting_deployments(model: Model, device: Device, batch: int, context: float, serving: ServingInputs,
                        precision: str, weight_format, kv_format: str, engine: str | None = None) -> list[DeviceAnswer]:
    """Per device count that holds every sequence asked for, fewest first, its layout with the lowest step-time
    bound (kvwall.model.fitting)."""
    memory, answers = serving.memory(engine), []
    for found in holding_deployments(model, weight_format, kv_format, batch, context, device.hbm_capacity, memory,
                                     device.scale_up is not None):
        fastest = min(found, key=lambda d: float(step_time_bound(model, d, context, batch, device.hbm_bandwidth,
                                                                 device.dense_flops[precision])))
        answers.append(device_answer(model, device, fastest, batch, context, serving, precision, engine))
    return answers


def smallest_fitting(model: Model, device: Device, batch: int, context: float, serving: ServingInputs, precision: str,
                     weight_format, kv_format: str, engine: str | None = None) -> Deployment | None:
    """The deployment with the fewest devices, then the lowest step-time bound, that holds the batch; None where none
    of up to MAX_DEVICES does."""
    return smallest_deployment(model, weight_format, kv_format, batch, context, device.hbm_capacity,
                               serving.memory(engine), device.scale_up is not None, device.hbm_bandwidth,
                               device.dense_flops[precision])


@dataclass(frozen=True)
class DeviceCrossovers:
    """s*(b) of one device's shares at one batch, and s_cap(b) per device on each device, for one deployment."""

    batch: Quantity
    traffic_crossover: Quantity
    capacity_crossover: dict[str, Quantity]


def device_crossovers(model: Model, devices: list[Device], d: Deployment, batch: int, serving: ServingInputs,
                      engine: str | None = None) -> DeviceCrossovers:
    """Traffic and capacity crossovers on a device's shares under the deployment (SoK section 3.4 per device): s_cap(b)
    is where b sequences (ceil(b / DP) per replica) fill a device's KV memory."""
    memory = serving.memory(engine)
    caps = {}
    for device in devices:
        value = float(deployment_capacity_crossover(model, d, device.hbm_capacity, memory, batch))
        caps[device.id] = derived(value if value >= 0 else None, "tokens",
                                  f"s_cap(b) per device: {memory_basis(memory, device.hbm_capacity, d)} = b sequences' KV "
                                  "per device" + ("; none: the weights leave no KV memory" if value < 0 else ""))
    return DeviceCrossovers(
        batch=stated(batch, "count", "the batch asked for"),
        traffic_crossover=derived(device_traffic_crossover(model, d, batch), "tokens",
                                  f"s*(b) per device: {weight_equation(model, d)} = {kv_share_equation(model, d)}"),
        capacity_crossover=caps,
    )


@dataclass(frozen=True)
class AnswerAtContext:
    """One device and batch at a context: the per-device numbers `kvwall regime` prints for the deployment, and the
    smallest deployment on that device that holds the batch (None where none of up to MAX_DEVICES does)."""

    device: str
    device_name: str
    batch: int
    regime: str
    reason: str | None
    numbers: dict[str, Quantity | None]
    smallest_fitting_deployment: Deployment | None


def answers_at_context(model: Model, devices: list[Device], d: Deployment, batches: list[int], context: float,
                       serving: ServingInputs, precisions: dict[str, str], weight_format, kv_format: str,
                       engine: str | None = None) -> list[AnswerAtContext]:
    """device_answer and smallest_fitting for every device and batch at one context, device by device."""
    found = []
    for device in devices:
        precision = precisions[device.id]
        for batch in batches:
            answer = device_answer(model, device, d, batch, context, serving, precision, engine)
            smallest = smallest_fitting(model, device, batch, context, serving, precision, weight_format, kv_format, engine)
            found.append(AnswerAtContext(device.id, device.name, batch, answer.regime, answer.reason, answer.numbers(),
                                         smallest))
    return found

