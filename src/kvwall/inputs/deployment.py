"""A deployment: how a model is laid out over several devices, and the inputs that price its collectives.

Devices = TP x PP x DP: tensor parallelism splits each layer's heads and matrices over TP devices, pipeline
parallelism its layers over PP stages, attention data parallelism its sequences over DP replicas of the attention.
The routed experts of a stage are spread over its TP x DP devices: EP of them hold different experts, the rest split
each expert's matrices; with attention DP the experts span every device of the stage (EP = TP x DP). One device with every degree 1 is the paper's frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.engines import AUTO, ENGINES, PARAMETERS, PROMPT_BUDGETS, EngineMemory, PromptBudget
from kvwall.inputs.errors import DeploymentError, SpecError
from kvwall.inputs.specs import Device, Fabric, Model, Sourced, WeightFormats
from kvwall.units import DTYPE_BYTES, dtype_bytes

#: The most devices a search for the smallest deployment tries (kvwall.model.fitting).
MAX_DEVICES = 64
#: Where each field of a deployment is given on the command line, for the one-line refusal.
FLAGS = {"devices": "--devices", "tensor_parallel": "--tp", "pipeline_parallel": "--pp", "expert_parallel": "--ep",
         "data_parallel": "--dp", "weight_format": "--weight-dtype", "kv_format": "--kv-dtype"}


@dataclass(frozen=True)
class Deployment:
    """Devices, parallel degrees and storage formats of one serving layout."""

    devices: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    data_parallel: int = 1
    weight_format: str | WeightFormats = "bf16"  # one format for every part, or a format per part
    kv_format: str = "bf16"

    @property
    def weight_formats(self) -> WeightFormats:
        """The format of each part of the weights (one format: every part in it)."""
        f = self.weight_format
        return f if isinstance(f, WeightFormats) else WeightFormats.uniform(f)

    @property
    def kv_bytes_per_element(self) -> float:
        return dtype_bytes(self.kv_format)

    @property
    def label(self) -> str:
        """TP4, TP8 DP8 EP64: the degrees above 1 (one device: "1 device")."""
        parts = [f"{name}{degree}" for name, degree in (("TP", self.tensor_parallel), ("PP", self.pipeline_parallel),
                                                          ("DP", self.data_parallel), ("EP", self.expert_parallel))
                 if degree > 1]
        return " ".join(parts) or "1 device"


@lru_cache(maxsize=256)
def _kv_head_counts(model: Model) -> tuple[int, ...]:
    """The KV head counts of the model's layers, each of which TP must divide or be a multiple of."""
    return tuple(sorted({model.n_kv_heads} | {g.n_kv_heads for g in model.attention.groups if g.n_kv_heads}))


def checked_deployment(model: Model, deployment: Deployment, flags: Mapping[str, str] = MappingProxyType(FLAGS)) -> Deployment:
    """The deployment if it can serve ``model``; otherwise DeploymentError naming the flag (or key) and the reason."""
    d, where = deployment, flags
    for name in ("devices", "tensor_parallel", "pipeline_parallel", "expert_parallel", "data_parallel"):
        if getattr(d, name) < 1:
            raise DeploymentError(where[name], f"must be at least 1 (got {getattr(d, name)})")
    for name, formats in (("weight_format", d.weight_formats.given.values()), ("kv_format", (d.kv_format,))):
        for storage_format in formats:
            if storage_format not in DTYPE_BYTES:
                raise DeploymentError(where[name], f"storage format {storage_format!r} is not understood "
                                                   f"(known: {', '.join(DTYPE_BYTES)})")
    tp, pp, dp, ep = d.tensor_parallel, d.pipeline_parallel, d.data_parallel, d.expert_parallel
    if tp * pp * dp != d.devices:
        raise DeploymentError(where["devices"], f"{d.devices} devices do not match TP {tp} x PP {pp} x DP {dp} = "
                                                f"{tp * pp * dp}")
    if model.n_q_heads % tp:
        raise DeploymentError(where["tensor_parallel"], f"TP {tp} does not divide the {model.n_q_heads} query heads of "
                                                        f"{model.name}")
    for heads in _kv_head_counts(model):
        if heads % tp and tp % heads:
            raise DeploymentError(where["tensor_parallel"], f"TP {tp} neither divides nor is a multiple of the "
                                                            f"{heads} KV heads of {model.name}")
    if model.dense_mlp_layers and model.intermediate_size % tp:
        raise DeploymentError(where["tensor_parallel"], f"TP {tp} does not divide the {model.intermediate_size} "
                                                        f"intermediate size of {model.name}'s MLP")
    if pp > model.n_layers:
        raise DeploymentError(where["pipeline_parallel"], f"PP {pp} exceeds the {model.n_layers} layers of {model.name}")
    if model.moe is None and ep > 1:
        raise DeploymentError(where["expert_parallel"], f"{model.name} has no experts to spread (EP must be 1)")
    if model.moe is not None and model.moe.routed_experts % ep:
        raise DeploymentError(where["expert_parallel"], f"EP {ep} does not divide the {model.moe.routed_experts} "
                                                        f"routed experts of {model.name}")
    if (tp * dp) % ep:
        raise DeploymentError(where["expert_parallel"], f"EP {ep} does not divide the TP {tp} x DP {dp} = {tp * dp} "
                                                        "devices of a pipeline stage")
    if model.moe is not None and dp > 1 and ep != tp * dp:
        raise DeploymentError(where["expert_parallel"], f"with attention DP {dp} the experts must be spread over all "
                                                        f"TP {tp} x DP {dp} = {tp * dp} devices of a stage (EP "
                                                        f"{tp * dp}): tokens reach them by dispatch, the one exchange "
                                                        "modelled")
    if model.moe is not None and model.moe.expert_intermediate_size % ((tp * dp) // ep):
        raise DeploymentError(where["expert_parallel"], f"each expert splits over (TP x DP) / EP = {(tp * dp) // ep} "
                                                        f"devices, which does not divide its "
                                                        f"{model.moe.expert_intermediate_size} intermediate size")
    return d


@dataclass(frozen=True)
class CollectiveLink:
    """The rates one device sends collectives at, one way: over its scale-up link (NVLink, Infinity Fabric, ICI) to
    the devices of its fabric's domain, over the fabric's scale-out link to any other. Without a fabric the scale-up
    link reaches every device."""

    name: str
    bandwidth: float  # bytes/s, one direction, per device
    fabric: Fabric | None = None  # the device's domain and scale-out link; None: one fabric reaches every device

    def within_domain(self, group: int) -> bool:
        """Whether ``group`` consecutive devices fit in one scale-up domain (a group placed inside one when it fits)."""
        return self.fabric is None or group <= self.fabric.domain


#: The link of a deployment of one device: it sends no collective.
NO_LINK = CollectiveLink("none", math.inf)


def collective_link(device: Device, devices_file: str) -> CollectiveLink:
    """One device's one-way scale-up rate, from the link its datasheet prints (``Device.scale_up``): the rate per
    device, or per link times the links; halved where the datasheet counts both directions together, as NVLink's and
    Infinity Fabric's do, or does not say (then the rate of one direction cannot be more than the total). With the
    device's fabric (config/device_assumptions.yaml): the domain that rate reaches, and the scale-out rate past it."""
    link = device.scale_up
    if link is None:
        raise SpecError(devices_file, f"devices.{device.id}.scale_up", f"no scale-up link: a deployment of more than one "
                                                                       f"{device.name} needs the rate its devices exchange data at")
    total = link.bandwidth * (link.links or 1)
    return CollectiveLink(link.name, total if link.direction == "one-way" else total / 2, device.fabric)


@dataclass(frozen=True)
class ServingInputs:
    """What a deployment's step time and capacity need beyond the catalogue's specs: the stated assumptions, among
    them each engine's memory rule and token budget per step and the engine whose rule applies unless another is
    named."""

    engine: str
    memories: Mapping[str, EngineMemory]
    prompt_budgets: Mapping[str, PromptBudget]
    collective_latency: float  # s
    activation_bytes: float  # bytes per activation value a collective moves
    hbm_bandwidth_efficiency: float
    provenance: Mapping[str, Sourced]
    devices_file: str
    device_files: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # devices of --specs files

    def memory(self, engine: str | None = None) -> EngineMemory:
        """The memory rule of ``engine``, or of the default engine (assumption engine)."""
        return self.memories[engine or self.engine]

    def file_of(self, device: Device) -> str:
        """The spec file ``device`` was read from."""
        return self.device_files.get(device.id, self.devices_file)

    def link_of(self, device: Device) -> CollectiveLink:
        """The one-way rate ``device`` exchanges collectives at; SpecError, naming the device's own spec file, when
        its spec has no scale-up link."""
        return collective_link(device, self.file_of(device))

    def link_for(self, device: Device, d: Deployment) -> CollectiveLink:
        """The link the collectives of ``d`` on ``device`` run over: NO_LINK on one device, which sends none."""
        return NO_LINK if d.devices == 1 else self.link_of(device)


def load_serving_inputs(catalog: Catalog) -> ServingInputs:
    """The serving assumptions of the catalogue (config/assumptions.yaml)."""
    given = catalog.assumptions.provenance
    rules = {engine: PARAMETERS[engine] for engine in ENGINES}
    names = ("engine", *(parameter for parameter, _ in rules.values()),
             *(parameter for parameter, _ in PROMPT_BUDGETS.values()), "collective_latency", "activation_dtype",
             "hbm_bandwidth_efficiency")
    memories = {engine: EngineMemory(engine, parameter, of, None if given[parameter].value == AUTO else given[parameter].value,
                                     given[parameter].source)
                for engine, (parameter, of) in rules.items()}
    budgets = {engine: PromptBudget(engine, parameter, None if given[parameter].value == AUTO else given[parameter].value,
                                    mixes, given[parameter].source)
               for engine, (parameter, mixes) in PROMPT_BUDGETS.items()}
    return ServingInputs(
        engine=given["engine"].value,
        memories=MappingProxyType(memories),
        prompt_budgets=MappingProxyType(budgets),
        collective_latency=given["collective_latency"].value,
        activation_bytes=dtype_bytes(given["activation_dtype"].value),
        hbm_bandwidth_efficiency=given["hbm_bandwidth_efficiency"].value,
        provenance=MappingProxyType({name: given[name] for name in names}),
        devices_file=catalog.files["devices"],
        device_files=catalog.device_files,
    )
