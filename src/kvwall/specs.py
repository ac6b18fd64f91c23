"""Typed specs (Device, Model, Link, Technique, Workload) and the values they were read from.

Objects here hold numbers in base units (bytes, bytes/s, FLOP/s, counts); each keeps the provenance of every
field it was given (the value and unit as written, the source, the evidence class). The model functions take
these objects and never read YAML; ``kvwall.loader`` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

EVIDENCE_CLASSES = ("spec", "assumption", "derived", "reported", "measured")


@dataclass(frozen=True)
class Sourced:
    """One input number: its base-unit value, as written (value, unit), where it comes from and its class."""

    value: float
    given: float | str
    unit: str
    source: str
    evidence: str


Provenance = Mapping[str, Sourced]


def _frozen(mapping: Mapping | None = None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Device:
    """An accelerator package (SoK Table 3)."""

    id: str
    name: str
    package: str
    hbm_capacity: float  # bytes
    hbm_bandwidth: float  # bytes/s, aggregate over all stacks
    partitions: int  # dies or HBM stacks the aggregate is divided over
    die_to_die_bandwidth: float | None  # bytes/s across the package fabric; None where undisclosed
    dense_flops: Mapping[str, float]  # FLOP/s by precision, dense tensor-core rates
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)


@dataclass(frozen=True)
class FullAttention:
    """Multi-head or grouped-query attention: each layer caches a key and a value per KV head (SoK Eq. 1)."""

    n_layers: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int

    @property
    def kv_elements_per_token(self) -> float:
        return 2.0 * self.n_layers * self.n_kv_heads * self.head_dim

    @property
    def attention_flops_per_position(self) -> float:
        """FLOPs per cached position per generated token: scores plus value contraction (SoK Table 8)."""
        return 4.0 * self.n_layers * self.n_q_heads * self.head_dim

    @property
    def label(self) -> str:
        return "MHA" if self.n_kv_heads == self.n_q_heads else "GQA"


@dataclass(frozen=True)
class LatentAttention:
    """Multi-head latent attention (MLA): each layer caches one latent of kv_lora_rank + rope dims (SoK Table 1, dagger)."""

    n_layers: int
    n_q_heads: int
    kv_lora_rank: int
    qk_rope_head_dim: int

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def kv_elements_per_token(self) -> float:
        return float(self.n_layers * self.latent_dim)

    @property
    def attention_flops_per_position(self) -> float:
        """Absorbed MLA decode: scores over the full latent, values over the kv_lora_rank part, per query head."""
        return 2.0 * self.n_layers * self.n_q_heads * (self.latent_dim + self.kv_lora_rank)

    @property
    def label(self) -> str:
        return "MLA"


@dataclass(frozen=True)
class MixtureOfExperts:
    """Routed experts of an MoE model; per-step weight bytes depend on how many experts a batch touches."""

    routed_experts: int
    experts_per_token: int
    shared_experts: int
    expert_intermediate_size: int
    dense_layers: int


@dataclass(frozen=True)
class Model:
    """A transformer's published architecture (SoK Table 1) and its nominal parameter count."""

    id: str
    name: str
    attention: FullAttention | LatentAttention
    n_layers: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    params_nominal: float
    moe: MixtureOfExperts | None = None
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)

    @property
    def gqa_group(self) -> float:
        """g = n_q / n_kv (SoK section 3.2)."""
        return self.n_q_heads / self.n_kv_heads


@dataclass(frozen=True)
class Link:
    """An interconnect a KV block can be fetched over (SoK section 2.5, W4)."""

    id: str
    name: str
    bandwidth: float  # bytes/s, one direction as used for a fetch
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)


@dataclass(frozen=True)
class Technique:
    """A representative method of one mitigation domain, reduced to its byte factors (SoK Eq. 2, Table 2)."""

    id: str
    name: str
    domain: str
    kv_bits: float  # w_q in bits per stored element
    retention: float  # r
    sharing_workload: str | None  # the workload whose prefix sharing gives sigma (prefix caching)
    fragmentation: float  # phi
    codec: float  # transport codec factor (tiering only)
    lossless: str  # "yes", "no", "near", or "-" for the baseline
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)


@dataclass(frozen=True)
class Workload:
    """A benchmark workload (SoK Table 6)."""

    id: str
    pattern: str
    objective: str
    batch: int
    context: float  # tokens per request
    shared_prefix: float  # tokens shared by every request (W3)
    reuse_gap: float | None  # seconds between reuses (W4)
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)


@dataclass(frozen=True)
class Domain:
    """A mitigation domain (SoK Table 2)."""

    id: str
    name: str
    mechanism: str
    scales: str
    lossless: str
    methods: tuple[str, ...]
