"""Typed specs (Device, Model, Link, Technique, Workload, Reported) and the values they were read from.

Objects here hold numbers in base units (bytes, bytes/s, FLOP/s, counts); each keeps the provenance of every
field it was given (the value and unit as written, the source, the evidence class). The model functions take
these objects and never read YAML; ``kvwall.inputs.loader`` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.index_storage import INDEX_STORAGE

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
    #: Bytes per cached position held in a format of their own, whatever the KV format (an MLA indexer's keys).
    index_bytes_per_token = 0.0

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
    """Multi-head latent attention (MLA): each layer caches one latent of kv_lora_rank + rope dims (SoK Table 1, dagger)
    and, where a sparse-attention indexer picks the positions attention reads (DeepSeek-V3.2's and GLM-5's lightning
    indexer), one index key of ``index_head_dim`` per position beside it, held whole on every TP rank as the latent is,
    in the engines' own format whatever the KV format (kvwall.inputs.index_storage: 132 B for 128 values)."""

    n_layers: int
    n_q_heads: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    index_head_dim: int = 0
    q_lora_rank: int = 0  # the query's down-projection rank, replicated on every TP rank; 0 where none is given

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def kv_elements_per_token(self) -> float:
        """L (d_c + d_r): the latents, in the KV format."""
        return float(self.n_layers * self.latent_dim)

    @property
    def index_bytes_per_token(self) -> float:
        """L (d_I + 4 d_I / 128): the index keys, in fp8 with fp32 scales (kvwall.inputs.index_storage)."""
        return float(self.n_layers * INDEX_STORAGE.key_bytes(self.index_head_dim))

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
                           qk_rope_head_dim=self.qk_rope_head_dim, index_head_dim=self.index_head_dim),)



FULL, WINDOW, CHUNKED, COMPRESSED, LATENT, STATE, NONE = (
    "full", "window", "chunked", "compressed", "latent", "state", "none")
#: Cache kinds of a layer: grows with every token (full, latent), holds at most ``span`` positions (window,
#: chunked local attention), holds a window of ``span`` recent tokens plus one pooled entry per ``compress_ratio``
#: tokens (compressed), holds a constant per-sequence state (linear attention, state-space layers), or holds
#: nothing (the FFN-only layers of a hybrid stack such as Nemotron-H).
CACHE_KINDS = (FULL, WINDOW, CHUNKED, COMPRESSED, LATENT, STATE, NONE)
#: The kinds that cache keys and values per KV head.
KEY_VALUE_KINDS = (FULL, WINDOW, CHUNKED, COMPRESSED)


@dataclass(frozen=True)
class LayerGroup:
    """Layers of one cache kind and one head layout, each knowing its bytes per token and its split over TP ranks
    (in the manner of vLLM's KVCacheSpec: vllm/v1/kv_cache_interface.py).

    Key-value layers (full, window, chunked, compressed) cache ``kv_tensors`` x ``n_kv_heads`` x ``head_dim`` per
    position: a key and a value (SoK Eq. 1), or one tensor where keys double as values (Gemma 4's
    ``attention_k_eq_v``, DeepSeek-V4's shared-KV MQA); their heads are split over TP ranks, at least one whole head
    each. Latent layers cache ``kv_lora_rank`` + ``qk_rope_head_dim`` (one latent, no factor 2), whole on every rank.
    A sparse-attention indexer adds ``index_head_dim`` per indexed position (one key, no value), whole on every rank.
    A compressed layer (DeepSeek-V4's CSA and HCA) holds the last ``span`` tokens and one entry per
    ``compress_ratio`` tokens of the whole context, its index keys per entry. State layers hold ``state_elements``
    per layer and sequence whatever the context, split over TP ranks by their ``state_heads`` (whole on every rank
    when not given).
    """

    kind: str
    layers: int
    n_q_heads: int = 0
    n_kv_heads: int = 0
    head_dim: int = 0
    span: float = 0.0  # tokens a window, chunked or compressed layer holds at most in full
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    state_elements: float = 0.0
    kv_tensors: int = 2  # tensors cached per KV head and position: key and value, or one where keys are values
    index_head_dim: int = 0  # elements of a sparse-attention indexer's key per indexed position
    compress_ratio: float = 0.0  # tokens pooled into one entry of a compressed layer
    state_heads: int = 0  # heads a state layer's state is split over under TP (0: not split)

    def __post_init__(self):
        if self.kind not in CACHE_KINDS:
            raise ValueError(f"cache kind {self.kind!r} is not one of {CACHE_KINDS}")
        if (self.kind in (WINDOW, CHUNKED, COMPRESSED)) != (self.span > 0):
            raise ValueError("window, chunked and compressed layers, and only they, hold a positive span of positions")
        if (self.kind == COMPRESSED) != (self.compress_ratio > 0):
            raise ValueError("compressed layers, and only they, pool a positive compress_ratio of tokens per entry")
        if self.kv_tensors not in (1, 2):
            raise ValueError(f"kv_tensors is 2 (a key and a value) or 1 (keys double as values), not {self.kv_tensors}")

    @property
    def grows(self) -> bool:
        """Whether the layer's cache grows with every token at its full rate."""
        return self.kind in (FULL, LATENT)

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def _elements_per_position(self) -> float:
        """Elements one layer caches per position it holds (per compressed entry for a compressed layer)."""
        if self.kind == LATENT:
            return float(self.latent_dim)
        if self.kind in (STATE, NONE):
            return 0.0
        return float(self.kv_tensors * self.n_kv_heads * self.head_dim + self.index_head_dim)

    @property
    def kv_elements_per_token(self) -> float:
        """Elements the group adds per token while the context is within its span: 2 L n_kv d_h for key-value layers
        (SoK Eq. 1) plus their index keys, L (d_c + d_r) for latent layers (their index keys in their own format:
        index_bytes_per_token); a compressed layer adds its window's entry and 1 / compress_ratio of a pooled one (its
        index key only there); 0 for state layers."""
        if self.kind == LATENT:
            return float(self.layers * self.latent_dim)
        if self.kind in (STATE, NONE):
            return 0.0
        if self.kind == COMPRESSED:
            return self.layers * self.kv_tensors * self.n_kv_heads * self.head_dim + self.growing_elements_per_token
        return float(self.layers * self.kv_tensors * self.n_kv_heads * self.head_dim + self.layers * self.index_head_dim)

    @property
    def index_bytes_per_token(self) -> float:
        """Bytes of a latent layer's index keys per token, L (d_I + 4 d_I / 128), in the engines' fp8 with fp32
        scales whatever the KV format (kvwall.inputs.index_storage); 0 for other kinds, whose index keys are
        elements at the KV format."""
        return float(self.layers * INDEX_STORAGE.key_bytes(self.index_head_dim)) if self.kind == LATENT else 0.0

    @property
    def growing_elements_per_token(self) -> float:
        """Elements the group adds per token beyond its span: all of them for full and latent layers, the pooled
        entries of a compressed layer, none for window, chunked and state layers."""
        if self.grows:
            return self.kv_elements_per_token
        if self.kind == COMPRESSED:
            return self.layers * self._elements_per_position / self.compress_ratio
        return 0.0

    def elements(self, context: ArrayLike) -> np.ndarray:
        """Elements the group holds for one sequence at ``context`` (state excluded): per-token elements times the
        positions held, a compressed layer's window capped at its span and its pooled entries uncapped."""
        if self.kind == COMPRESSED:
            s = np.asarray(context, dtype=float)
            window = float(self.layers * self.kv_tensors * self.n_kv_heads * self.head_dim)
            return window * np.minimum(s, self.span) + self.growing_elements_per_token * s
        return self.kv_elements_per_token * self.positions(context)

    @property
    def attention_flops_per_position(self) -> float:
        """4 L n_q d_h (scores and values), 2 L n_q (2 d_c + d_r) for absorbed MLA; 0 for state layers (Table 8).
        The indexer's scoring is not counted."""
        if self.kind == LATENT:
            return 2.0 * self.layers * self.n_q_heads * (self.latent_dim + self.kv_lora_rank)
        if self.kind in (STATE, NONE):
            return 0.0
        return 4.0 * self.layers * self.n_q_heads * self.head_dim

    def positions(self, context: ArrayLike) -> np.ndarray:
        """Positions one layer attends to at ``context``: s, min(s, span), min(s, span) + s / compress_ratio for a
        compressed layer, or none (state)."""
        s = np.asarray(context, dtype=float)
        if self.grows:
            return s
        if self.kind in (STATE, NONE):
            return np.zeros_like(s)
        if self.kind == COMPRESSED:
            return np.minimum(s, self.span) + s / self.compress_ratio
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

        capped = capped_integral(c + n) - capped_integral(c)
        return capped + causal_positions(c, n) / self.compress_ratio if self.kind == COMPRESSED else capped

    def on_tensor_rank(self, tensor_parallel: int) -> LayerGroup:
        """What one of ``tensor_parallel`` ranks holds of the group: max(n_kv / TP, 1) whole KV heads of a key-value
        layer (index keys whole), all of a latent, max(state_heads / TP, 1) / state_heads of a state split by its heads,
        1 / TP of a state whose heads are not given (every TP rank holds its share, as the engines shard it)."""
        if self.kind in KEY_VALUE_KINDS:
            return replace(self, n_kv_heads=max(self.n_kv_heads // tensor_parallel, 1))
        if self.kind == STATE and self.state_heads:
            heads = max(self.state_heads // tensor_parallel, 1)
            return replace(self, state_elements=self.state_elements * heads / self.state_heads, state_heads=heads)
        if self.kind == STATE:
            return replace(self, state_elements=self.state_elements / tensor_parallel)
        return self


@dataclass(frozen=True)
class LayerStack:
    """A decoder whose layers differ in cache kind or head layout (Qwen3.5, Nemotron-H, Gemma 4, Llama 4, DeepSeek-V4):
    the footprint is the sum over groups, each at its own positions; constant state is added per sequence.

    Every capped group holds the same span (one breakpoint of the piecewise footprint); ``state_bytes_per_element``
    is the state dtype, an assumption (config/assumptions.yaml state_dtype).
    """

    groups: tuple[LayerGroup, ...]
    state_bytes_per_element: float = 0.0
    #: A stack's index keys are elements of its key-value groups, at the KV format (latent ones are refused).
    index_bytes_per_token = 0.0

    def __post_init__(self):
        spans = {g.span for g in self.groups if g.span}
        if len(spans) > 1:
            raise ValueError(f"window or chunked layers of different spans {sorted(spans)} are not modelled")
        if not any(g.kv_elements_per_token for g in self.groups):
            raise ValueError("a stack needs at least one attention layer that caches keys and values")
        if any(g.index_bytes_per_token for g in self.groups):
            raise ValueError("index keys on latent layers of a stack are not modelled (their format is the engines')")

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
        """The span every window, chunked or compressed layer holds (0 when none)."""
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
        names = {FULL: "full", WINDOW: "SWA", CHUNKED: "chunked", COMPRESSED: "compressed", LATENT: "MLA", STATE: "state"}
        kinds = []
        for g in self.groups:
            if g.kind != NONE and names[g.kind] not in kinds:
                kinds.append(names[g.kind])
        return "+".join(kinds)

    @property
    def _growing_elements_per_token(self) -> float:
        return sum(g.growing_elements_per_token for g in self.groups)

    def growing_part(self, per_token: ArrayLike) -> np.ndarray:
        """The share of a per-token rate that keeps growing beyond the span."""
        return per_token * self._growing_elements_per_token / self.kv_elements_per_token

    def cached_positions(self, context: ArrayLike) -> np.ndarray:
        """Positions cached at ``context``, weighted by each group's per-token elements."""
        total = sum(g.elements(context) for g in self.groups)
        return total / self.kv_elements_per_token

    def context_caching(self, positions: ArrayLike) -> np.ndarray:
        """Inverse of cached_positions: p below the span, then the growing rate alone (infinite if nothing grows)."""
        p = np.asarray(positions, dtype=float)
        span = self.window if self.has_window else np.inf
        growing = self._growing_elements_per_token
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

    def on_tensor_rank(self, tensor_parallel: int) -> LayerStack:
        """What one of ``tensor_parallel`` ranks holds: each group's own share (LayerGroup.on_tensor_rank)."""
        return replace(self, groups=tuple(g.on_tensor_rank(tensor_parallel) for g in self.groups))


@dataclass(frozen=True)
class MixtureOfExperts:
    """Routed experts of an MoE model; per-step weight bytes depend on how many experts a batch touches."""

    routed_experts: int
    experts_per_token: int
    shared_experts: int
    expert_intermediate_size: int
    dense_layers: int  # layers without routed experts
    expert_matrices: int = 3  # weight matrices per expert: 3 gated (SwiGLU), 2 non-gated (relu2)
    latent_size: int = 0  # the width routed experts work in, projected from and back to the hidden size (0: hidden)
    dense_beside: int = 0  # MoE layers that also run a dense MLP of intermediate_size on every token (Arctic, Gemma 4)


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
        """Layers whose MLP is dense: every layer of a dense model, the dense_layers of an MoE model and its MoE
        layers with a dense MLP beside the experts, and of a hybrid stack only its FFN-only layers that are not MoE
        layers (its attention and state layers carry no MLP)."""
        if self.moe is None:
            return self.n_layers
        ffn_only = sum(g.layers for g in self.attention.groups if g.kind == NONE)
        dense = ffn_only - (self.n_layers - self.moe.dense_layers) if ffn_only else self.moe.dense_layers
        return dense + self.moe.dense_beside

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


@dataclass(frozen=True)
class Reported:
    """One reported value: a number with its unit (base units in ``value``) or a quoted text, and its citation."""

    id: str
    value: float | None
    given: float | None
    unit: str
    text: str | None
    source: str
    note: str
    file: str
