"""Typed specs (Device, Model, Link, Technique, Workload) and the values they were read from.

Objects here hold numbers in base units (bytes, bytes/s, FLOP/s, counts); each keeps the provenance of every
field it was given (the value and unit as written, the source, the evidence class). The model functions take
these objects and never read YAML; ``kvwall.inputs.loader`` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

import numpy as np
from numpy.typing import ArrayLike

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
class ScaleUpLink:
    """The accelerator-to-accelerator link of a node or rack (NVLink, Infinity Fabric, ICI), as the datasheet prints
    it: ``bandwidth`` bytes/s per accelerator, or per link when ``links`` is given; ``direction`` as stated."""

    name: str
    bandwidth: float
    links: int | None
    direction: str  # one-way, bidirectional or unstated


@dataclass(frozen=True)
class Fabric:
    """How far a device's scale-up link reaches, and what carries data past it: ``domain`` devices share one
    scale-up fabric (an 8-GPU board, a 72-GPU rack, a TPU pod); beyond it, each device's scale-out link,
    ``scale_out`` bytes/s one way (None where none is stated: no deployment may then leave the domain)."""

    domain: int
    scale_out_name: str | None
    scale_out: float | None


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
    scale_up: ScaleUpLink | None = None
    fabric: Fabric | None = None  # None: the scale-up link reaches every device of a deployment
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)


def causal_positions(cached: ArrayLike, new: ArrayLike) -> np.ndarray:
    """Positions ``new`` tokens attend to after ``cached`` ones under a causal mask, summed: ((c + n)^2 - c^2) / 2."""
    c, n = np.asarray(cached, dtype=float), np.asarray(new, dtype=float)
    return 0.5 * ((c + n) ** 2 - c**2)


class EveryTokenCached:
    """What an attention kind whose every layer caches every token shares: a footprint linear in context.

    Sliding-window attention overrides these methods; ``n_layers`` is the kind's own field.
    """

    n_layers: int

    @property
    def full_layers(self) -> int:
        """Layers whose cache grows with every token."""
        return self.n_layers

    @property
    def has_window(self) -> bool:
        """Whether some layers cache only a window of recent tokens."""
        return self.full_layers < self.n_layers

    def cached_positions(self, context: ArrayLike) -> np.ndarray:
        """Positions a layer caches at ``context``, averaged over the layers: every layer caches every token."""
        return np.asarray(context, dtype=float)

    def context_caching(self, positions: ArrayLike) -> np.ndarray:
        """The context at which a layer caches ``positions`` on average: the inverse of cached_positions."""
        return np.asarray(positions, dtype=float)

    def attended_positions(self, cached: ArrayLike, new: ArrayLike) -> np.ndarray:
        """Positions the ``new`` tokens of a causal prefill attend to after ``cached`` ones, summed over the new
        tokens and averaged over the layers."""
        return causal_positions(cached, new)

    #: Bytes of constant per-sequence state (linear-attention, state-space layers): none in a uniform stack.
    state_bytes = 0.0

    def growing_part(self, per_token: ArrayLike) -> np.ndarray:
        """The part of a per-token rate that keeps growing past every window: the full layers' share."""
        return per_token * self.full_layers / self.n_layers

    def decode_attention_flops(self, context: ArrayLike) -> np.ndarray:
        """Attention FLOPs of one generated token at ``context``: per position times positions cached (Table 8)."""
        return self.attention_flops_per_position * self.cached_positions(context)

    def prefill_attention_flops(self, cached: ArrayLike, new: ArrayLike) -> np.ndarray:
        """Attention FLOPs of a causal prefill of ``new`` tokens after ``cached`` ones (SoK App. A)."""
        return self.attention_flops_per_position * self.attended_positions(cached, new)


@dataclass(frozen=True)
class FullAttention(EveryTokenCached):
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

    @property
    def groups(self) -> tuple[LayerGroup, ...]:
        """The per-layer description: one group of full layers."""
        return (LayerGroup(FULL, self.n_layers, self.n_q_heads, self.n_kv_heads, self.head_dim),)



@dataclass(frozen=True)
class SlidingWindowAttention(FullAttention):
    """MHA/GQA in which ``window_layers`` of the layers attend to, and cache, only the last ``window`` tokens (Gemma 3,
    gpt-oss); the other layers are full. A window layer's KV stops growing at the window, so beyond it the cache
    grows at the full layers' rate alone. The per-token constants (Eq. 1, Table 8) count every layer: they hold
    below the window."""

    window_layers: int = 0
    window: float = 0.0  # tokens

    def __post_init__(self):
        if not 0 < self.window_layers <= self.n_layers or self.window <= 0:
            raise ValueError(f"a sliding window needs 0 < window_layers <= {self.n_layers} and a positive window")

    @property
    def full_layers(self) -> int:
        return self.n_layers - self.window_layers

    @property
    def label(self) -> str:
        return f"{super().label}+SWA"

    @property
    def groups(self) -> tuple[LayerGroup, ...]:
        """Full layers, then window layers, of one head layout."""
        full = (LayerGroup(FULL, self.full_layers, self.n_q_heads, self.n_kv_heads, self.head_dim),) if self.full_layers else ()
        return full + (LayerGroup(WINDOW, self.window_layers, self.n_q_heads, self.n_kv_heads, self.head_dim, span=self.window),)

    def cached_positions(self, context: ArrayLike) -> np.ndarray:
        """(L_full s + L_window min(s, W)) / L: s below the window, then L_full / L per token."""
        s = np.asarray(context, dtype=float)
        return (self.full_layers * s + self.window_layers * np.minimum(s, self.window)) / self.n_layers

    def context_caching(self, positions: ArrayLike) -> np.ndarray:
        """Inverse of cached_positions; infinite beyond the window's reach when every layer is a window layer."""
        p = np.asarray(positions, dtype=float)
        if self.full_layers == 0:
            return np.where(p <= self.window, p, np.inf)
        return np.where(p <= self.window, p, (p * self.n_layers - self.window_layers * self.window) / self.full_layers)

    def attended_positions(self, cached: ArrayLike, new: ArrayLike) -> np.ndarray:
        """Full layers as for full attention; a window layer's new token attends to min(position, W) positions."""
        c, n = np.asarray(cached, dtype=float), np.asarray(new, dtype=float)

        def window_integral(x):  # integral of min(p, W) dp from 0 to x
            return np.where(x <= self.window, 0.5 * x**2, 0.5 * self.window**2 + self.window * (x - self.window))

        windowed = window_integral(c + n) - window_integral(c)
        return (self.full_layers * causal_positions(c, n) + self.window_layers * windowed) / self.n_layers


@dataclass(frozen=True)
class LatentAttention(EveryTokenCached):
    """Multi-head latent attention (MLA): each layer caches one latent of kv_lora_rank + rope dims (SoK Table 1, dagger)."""

    n_layers: int
    n_q_heads: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    q_lora_rank: int = 0  # the query's down-projection rank, replicated on every TP rank; 0 where none is given

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

    @property
    def groups(self) -> tuple[LayerGroup, ...]:
        """One group of latent layers."""
        return (LayerGroup(LATENT, self.n_layers, self.n_q_heads, kv_lora_rank=self.kv_lora_rank,
                           qk_rope_head_dim=self.qk_rope_head_dim),)



FULL, WINDOW, CHUNKED, LATENT, STATE, NONE = "full", "window", "chunked", "latent", "state", "none"
#: Cache kinds of a layer: grows with every token (full, latent), holds at most ``span`` positions (window,
#: chunked local attention), holds a constant per-sequence state (linear attention, state-space layers), or holds
#: nothing (the FFN-only layers of a hybrid stack such as Nemotron-H).
CACHE_KINDS = (FULL, WINDOW, CHUNKED, LATENT, STATE, NONE)


@dataclass(frozen=True)
class LayerGroup:
    """Layers of one cache kind and one head layout; what a per-device split of the cache needs to know.

    ``n_kv_heads`` x ``head_dim`` for full, window and chunked layers (a key and a value each, SoK Eq. 1);
    ``kv_lora_rank`` + ``qk_rope_head_dim`` for latent layers (one latent, no factor 2); ``state_elements`` per
    layer and sequence for state layers, independent of the context.
    """

    kind: str
    layers: int
    n_q_heads: int = 0
    n_kv_heads: int = 0
    head_dim: int = 0
    span: float = 0.0  # tokens a window or chunked layer holds at most
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    state_elements: float = 0.0

    def __post_init__(self):
        if self.kind not in CACHE_KINDS:
            raise ValueError(f"cache kind {self.kind!r} is not one of {CACHE_KINDS}")
        if (self.kind in (WINDOW, CHUNKED)) != (self.span > 0):
            raise ValueError("window and chunked layers, and only they, hold a positive span of positions")

    @property
    def grows(self) -> bool:
        """Whether the layer's cache grows with every token."""
        return self.kind in (FULL, LATENT)

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def kv_elements_per_token(self) -> float:
        """2 L n_kv d_h for key-value layers, L (d_c + d_r) for latent layers, 0 for state layers (SoK Eq. 1)."""
        if self.kind == LATENT:
            return float(self.layers * self.latent_dim)
        if self.kind in (STATE, NONE):
            return 0.0
        return 2.0 * self.layers * self.n_kv_heads * self.head_dim

    @property
    def attention_flops_per_position(self) -> float:
        """4 L n_q d_h (scores and values), 2 L n_q (2 d_c + d_r) for absorbed MLA; 0 for state layers (Table 8)."""
        if self.kind == LATENT:
            return 2.0 * self.layers * self.n_q_heads * (self.latent_dim + self.kv_lora_rank)
        if self.kind in (STATE, NONE):
            return 0.0
        return 4.0 * self.layers * self.n_q_heads * self.head_dim

    def positions(self, context: ArrayLike) -> np.ndarray:
        """Positions one layer holds at ``context``: s, min(s, span), or none (state)."""
        s = np.asarray(context, dtype=float)
        if self.grows:
            return s
        if self.kind in (STATE, NONE):
            return np.zeros_like(s)
        return np.minimum(s, self.span)

    def attended(self, cached: ArrayLike, new: ArrayLike) -> np.ndarray:
        """Positions the ``new`` tokens of a causal prefill attend to, summed: a capped layer at most its span."""
        c, n = np.asarray(cached, dtype=float), np.asarray(new, dtype=float)
        if self.grows:
            return causal_positions(c, n)
        if self.kind in (STATE, NONE):
            return np.zeros_like(c + n)

        def capped_integral(x):  # integral of min(p, span) dp from 0 to x
            return np.where(x <= self.span, 0.5 * x**2, 0.5 * self.span**2 + self.span * (x - self.span))

        return capped_integral(c + n) - capped_integral(c)


@dataclass(frozen=True)
class LayerStack:
    """A decoder whose layers differ in cache kind or head layout (Qwen3.5, Nemotron-H, Gemma 4, Llama 4): the
    footprint is the sum over groups, each at its own positions; constant state is added per sequence.

    Every capped group holds the same span (one breakpoint of the piecewise footprint); ``state_bytes_per_element``
    is the state dtype, an assumption (config/assumptions.yaml state_dtype).
    """

    groups: tuple[LayerGroup, ...]
    state_bytes_per_element: float = 0.0

    def __post_init__(self):
        spans = {g.span for g in self.groups if g.span}
        if len(spans) > 1:
            raise ValueError(f"window or chunked layers of different spans {sorted(spans)} are not modelled")
        if not any(g.kv_elements_per_token for g in self.groups):
            raise ValueError("a stack needs at least one attention layer that caches keys and values")

    @property
    def n_layers(self) -> int:
        return sum(g.layers for g in self.groups)

    @property
    def full_layers(self) -> int:
        return sum(g.layers for g in self.groups if g.grows)

    @property
    def has_window(self) -> bool:
        return any(g.span for g in self.groups)

    @property
    def window(self) -> float:
        """The span every window or chunked layer holds (0 when none)."""
        return max((g.span for g in self.groups), default=0.0)

    @property
    def window_layers(self) -> int:
        return sum(g.layers for g in self.groups if g.span)

    @property
    def state_elements(self) -> float:
        """Elements of constant state one sequence holds over all state layers."""
        return float(sum(g.layers * g.state_elements for g in self.groups if g.kind == STATE))

    @property
    def state_bytes(self) -> float:
        return self.state_elements * self.state_bytes_per_element

    @property
    def kv_elements_per_token(self) -> float:
        """Per-token elements of every caching layer: the rate below the window."""
        return float(sum(g.kv_elements_per_token for g in self.groups))

    @property
    def attention_flops_per_position(self) -> float:
        return float(sum(g.attention_flops_per_position for g in self.groups))

    @property
    def label(self) -> str:
        names = {FULL: "full", WINDOW: "SWA", CHUNKED: "chunked", LATENT: "MLA", STATE: "state"}
        kinds = []
        for g in self.groups:
            if g.kind != NONE and names[g.kind] not in kinds:
                kinds.append(names[g.kind])
        return "+".join(kinds)

    def growing_part(self, per_token: ArrayLike) -> np.ndarray:
        """The growing groups' share of a per-token rate."""
        growing = sum(g.kv_elements_per_token for g in self.groups if g.grows)
        return per_token * growing / self.kv_elements_per_token

    def cached_positions(self, context: ArrayLike) -> np.ndarray:
        """Positions cached at ``context``, weighted by each group's per-token elements."""
        total = sum(g.kv_elements_per_token * g.positions(context) for g in self.groups)
        return total / self.kv_elements_per_token

    def context_caching(self, positions: ArrayLike) -> np.ndarray:
        """Inverse of cached_positions: p below the span, then the growing groups' rate alone (infinite if none)."""
        p = np.asarray(positions, dtype=float)
        span = self.window if self.has_window else np.inf
        growing = sum(g.kv_elements_per_token for g in self.groups if g.grows)
        if growing == 0:
            return np.where(p <= span, p, np.inf)
        capped = self.kv_elements_per_token - growing
        beyond = (p * self.kv_elements_per_token - capped * (span if self.has_window else 0.0)) / growing
        return np.where(p <= span, p, beyond)

    def decode_attention_flops(self, context: ArrayLike) -> np.ndarray:
        """Each group's FLOPs per position times the positions it holds (Table 8, group by group)."""
        return sum(g.attention_flops_per_position * g.positions(context) for g in self.groups)

    def prefill_attention_flops(self, cached: ArrayLike, new: ArrayLike) -> np.ndarray:
        """Each group's FLOPs per position times the positions its causal prefill attends to (SoK App. A)."""
        return sum(g.attention_flops_per_position * g.attended(cached, new) for g in self.groups)


@dataclass(frozen=True)
class MixtureOfExperts:
    """Routed experts of an MoE model; per-step weight bytes depend on how many experts a batch touches."""

    routed_experts: int
    experts_per_token: int
    shared_experts: int
    expert_intermediate_size: int
    dense_layers: int  # layers without routed experts
    expert_matrices: int = 3  # weight matrices per expert: 3 gated (SwiGLU), 2 non-gated (relu2)


ATTENTION, DENSE_MLP, SHARED_EXPERTS, EXPERTS, ROUTER, EMBEDDING, LM_HEAD = (
    "attention", "dense_mlp", "shared_experts", "experts", "router", "embedding", "lm_head")
#: The parts of a model's weights a checkpoint may store in different formats: the attention (or mixing) layers, the
#: MLP of dense layers, the shared and the routed experts, the router, the input embedding and the output head.
WEIGHT_PARTS = (ATTENTION, DENSE_MLP, SHARED_EXPERTS, EXPERTS, ROUTER, EMBEDDING, LM_HEAD)
#: How a part is named in answers and tables.
PART_NAMES = {ATTENTION: "attention", DENSE_MLP: "dense MLP", SHARED_EXPERTS: "shared experts", EXPERTS: "experts",
              ROUTER: "router", EMBEDDING: "embedding", LM_HEAD: "LM head"}


@dataclass(frozen=True)
class WeightFormats:
    """The storage format of each part of a model's weights (a name of kvwall.units.STORAGE_FORMATS), as a
    checkpoint ships it: gpt-oss keeps its routed experts in MXFP4 and the rest in bf16, an FP8 checkpoint its
    embedding and LM head in bf16. None for a part the model does not have."""

    attention: str | None
    dense_mlp: str | None
    shared_experts: str | None
    experts: str | None
    router: str | None
    embedding: str | None
    lm_head: str | None

    @classmethod
    def uniform(cls, storage_format: str) -> "WeightFormats":
        """Every part in one format: what a single ``weight_format`` means."""
        return cls(*(storage_format,) * len(WEIGHT_PARTS))

    def of(self, part: str) -> str | None:
        """The format of ``part`` (one of WEIGHT_PARTS)."""
        return getattr(self, part)

    @cached_property
    def given(self) -> Mapping[str, str]:
        """The format of every part the model has, in the order of WEIGHT_PARTS."""
        return MappingProxyType({part: self.of(part) for part in WEIGHT_PARTS if self.of(part) is not None})

    @cached_property
    def single(self) -> str | None:
        """The one format of every part, or None where the parts differ."""
        formats = set(self.given.values())
        return formats.pop() if len(formats) == 1 else None

    @property
    def main(self) -> str:
        """The format that sets the label: the routed experts', else the dense MLP's, else the attention's."""
        return next(f for f in (self.experts, self.dense_mlp, self.attention, *self.given.values()) if f is not None)

    def narrowed(self, storage_format: str, width: Mapping[str, float]) -> "WeightFormats":
        """Every part stored wider than ``storage_format`` brought down to it, the narrower parts kept (``width``:
        bytes per value of each format)."""
        return WeightFormats(*(f if f is None or width[f] <= width[storage_format] else storage_format
                               for f in (self.of(part) for part in WEIGHT_PARTS)))

    @property
    def label(self) -> str:
        """``fp8``, or the main format and the parts in others: ``mxfp4 (bf16: attention, router, embedding, LM head)``."""
        if self.single is not None:
            return self.single
        others: dict[str, list[str]] = {}
        for part, storage_format in self.given.items():
            if storage_format != self.main:
                others.setdefault(storage_format, []).append(PART_NAMES[part])
        listed = "; ".join(f"{storage_format}: {', '.join(parts)}" for storage_format, parts in others.items())
        return f"{self.main} ({listed})"

    @property
    def short(self) -> str:
        """The main format and the other formats alone, for a title: ``fp8 (+bf16)``."""
        others = sorted({f for f in self.given.values() if f != self.main})
        return self.main if not others else f"{self.main} (+{', '.join(others)})"

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Model:
    """A transformer's published architecture (SoK Table 1) and its nominal parameter count."""

    id: str
    name: str
    attention: FullAttention | SlidingWindowAttention | LatentAttention | LayerStack
    n_layers: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    params_nominal: float
    tied_embeddings: bool = False
    moe: MixtureOfExperts | None = None
    hf_id: str | None = None  # Hugging Face address, org/model
    weight_format: WeightFormats | None = None  # the checkpoint's stored weight format of each part
    kv_format: str | None = None  # the KV cache format the checkpoint states (kv_cache_quant_algo), where it does
    max_context: float | None = None  # tokens, max_position_embeddings
    provenance: Provenance = field(default_factory=_frozen, compare=False, repr=False)

    @property
    def gqa_group(self) -> float:
        """g = n_q / n_kv (SoK section 3.2)."""
        return self.n_q_heads / self.n_kv_heads

    @property
    def dense_mlp_layers(self) -> int:
        """Layers whose MLP is dense: every layer of a dense model, the dense_layers of an MoE model, and of a hybrid
        stack only its FFN-only layers that are not MoE layers (its attention and state layers carry no MLP)."""
        if self.moe is None:
            return self.n_layers
        ffn_only = sum(g.layers for g in self.attention.groups if g.kind == NONE)
        return ffn_only - (self.n_layers - self.moe.dense_layers) if ffn_only else self.moe.dense_layers

    @property
    def weight_parts(self) -> tuple[str, ...]:
        """The parts of WEIGHT_PARTS this model has: no experts or router without MoE, no shared experts without any,
        no dense MLP where every MLP is an MoE layer, no LM head of its own when it is tied to the embedding."""
        absent = set()
        if self.moe is None:
            absent |= {SHARED_EXPERTS, EXPERTS, ROUTER}
        elif not self.moe.shared_experts:
            absent.add(SHARED_EXPERTS)
        if not self.dense_mlp_layers:
            absent.add(DENSE_MLP)
        if self.tied_embeddings:
            absent.add(LM_HEAD)
        return tuple(part for part in WEIGHT_PARTS if part not in absent)


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
