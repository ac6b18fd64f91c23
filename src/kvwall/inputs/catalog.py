"""The catalogue: every input the derivations use, typed, with the evaluation setup the paper fixes."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.specs import Device, Domain, Link, Model, Sourced, Technique, WeightFormats, Workload
from kvwall.units import dtype_bytes


@dataclass(frozen=True)
class Assumptions:
    """Modelling choices (config/assumptions.yaml), each an `assumption` input."""

    tokens_per_k: float
    weight_dtype: str | WeightFormats  # a format per part where a question asks for a checkpoint's own (native)
    kv_dtype: str
    compute_precision: str
    state_dtype: str
    prefill_mfu: float
    attention_flops_at_full_context: bool
    provenance: Mapping[str, Sourced] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)

    @property
    def weight_formats(self) -> WeightFormats:
        """The format of each part of the weights: every part in weight_dtype, or the formats given per part."""
        f = self.weight_dtype
        return f if isinstance(f, WeightFormats) else WeightFormats.uniform(f)

    @property
    def weight_bytes_per_param(self) -> float:
        """w_p in bytes: the paper's one width for every weight (ValueError where the parts differ)."""
        single = self.weight_formats.single
        if single is None:
            raise ValueError(f"weights stored as {self.weight_dtype} have no single w_p")
        return dtype_bytes(single)

    @property
    def kv_bytes_per_element(self) -> float:
        """Baseline w_kv in bytes."""
        return dtype_bytes(self.kv_dtype)

    @property
    def state_bytes_per_element(self) -> float:
        """Bytes of one element of linear-attention or state-space state."""
        return dtype_bytes(self.state_dtype)

    @property
    def kv_bits(self) -> float:
        """Baseline w_kv in bits (the w of w / w_q)."""
        return 8.0 * self.kv_bytes_per_element


@dataclass(frozen=True)
class Configuration:
    """One row of SoK Table 5: a KV precision and retention."""

    id: str
    name: str
    kv_bits: float
    retention: float


@dataclass(frozen=True)
class Evaluation:
    """The setup the paper evaluates under: one model, one device, a placement (SoK section 4)."""

    model: str
    device: str
    placement: str
    table5_batch: int
    table5_contexts: tuple[float, ...]
    table5_rows: tuple[Configuration, ...]


@dataclass(frozen=True)
class Catalog:
    """Typed inputs, keyed by id, with the file each collection was read from."""

    devices: Mapping[str, Device]
    models: Mapping[str, Model]
    links: Mapping[str, Link]
    domains: Mapping[str, Domain]
    techniques: Mapping[str, Technique]
    workloads: Mapping[str, Workload]
    assumptions: Assumptions
    evaluation: Evaluation
    files: Mapping[str, str]
    #: Devices added from a file of their own (--specs), by id, with that file: errors about them name it.
    device_files: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def model(self) -> Model:
        """The evaluation model (Llama-3-70B in the paper)."""
        return self.models[self.evaluation.model]

    @property
    def device(self) -> Device:
        """The evaluation device (B200 in the paper)."""
        return self.devices[self.evaluation.device]
