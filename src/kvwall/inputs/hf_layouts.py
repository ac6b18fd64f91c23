"""The cache layout and weights of each architecture family of a Hugging Face ``config.json``, read as its reference
implementation reads it.

Each family turns one config's fields into a ``Layout``: the per-layer cache groups of kvwall.inputs.specs (kind, heads,
spans, index keys, states), the model-level head layout, the MoE fields, and the weights of the decoder layers
(embeddings excluded) summed from the shapes of the reference's modules. Where a config leaves a key out, the model
type's configuration class in transformers 5.24 gives the default (its ``__post_init__`` derives layer patterns);
tests/test_hf_reference.py reads every corpus config through those classes and compares. Types transformers does not
define are checked against vLLM's model code, cited in their family's docstring. Norms, biases, attention sinks and
position biases are left out of the weights (under 0.1%). A model type kvwall does not name is read by the family
whose convention its keys follow (kvwall.inputs.hf_keys), a head_dim it leaves out as hidden / heads (Llama's).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from kvwall.inputs.hf_fields import ConfigFields, Read
from kvwall.inputs.index_storage import INDEX_STORAGE

#: Architectures (``model_type`` of the language model) by family.
GQA_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "minimax_m2", "mimo", "qwen3_vl_text",
             "qwen3_vl_moe_text", "gpt_oss", "qwen3_5_text", "qwen3_5_moe_text", "llama4_text", "gemma4_text",
             "minimax_m3", "arctic", "qwen3_next"}
MLA_TYPES = {"deepseek_v3", "deepseek_v32", "kimi_k2", "glm_moe_dsa"}
COMPRESSED_TYPES = {"deepseek_v4", "deepseek_ref"}
HYBRID_TYPES = {"nemotron_h"}
HETEROGENEOUS_TYPES = {"nemotron-nas"}
DELTA_TYPES = {"kimi_linear"}
MODELLED_TYPES = GQA_TYPES | MLA_TYPES | COMPRESSED_TYPES | HYBRID_TYPES | HETEROGENEOUS_TYPES | DELTA_TYPES
#: Architectures whose reference derives head_dim as hidden_size / num_attention_heads when the config leaves it out
#: or null (LlamaConfig, MixtralConfig, GptOssConfig, Llama4TextConfig, DeciLM, vLLM's ArcticAttention).
HIDDEN_OVER_HEADS_TYPES = {"llama", "mistral", "mixtral", "qwen2", "llama4_text", "nemotron-nas", "arctic"}
#: head_dim where the config leaves it out: the default of the type's configuration class.
HEAD_DIM_DEFAULTS = {"qwen3": 128, "qwen3_moe": 128, "minimax_m2": 128, "qwen3_vl_text": 128, "qwen3_vl_moe_text": 128,
                     "gpt_oss": 64, "qwen3_5_text": 256, "qwen3_5_moe_text": 256, "qwen3_next": 256, "gemma4_text": 256,
                     "nemotron_h": 128, "deepseek_v4": 512, "minimax_m3": 128}
#: Layer-type names of ``layer_types`` and the kind kvwall gives each layer.
LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "window", "linear_attention": "linear",
                    "chunked_attention": "chunked"}
#: Nemotron-H block letters (hybrid_override_pattern) and names (layers_block_type, both generations of names).
NEMOTRON_LETTERS = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}
NEMOTRON_NAMES = {"mamba": "mamba", "attention": "attention", "moe": "moe", "mlp": "mlp",
                  "linear_attention": "mamba", "full_attention": "attention"}
#: DeepSeek-V4's attention types and their compression rates when compress_rates leaves them out (DeepseekV4Config).
DEEPSEEK_V4_TYPES = {"sliding_attention": "window", "compressed_sparse_attention": "csa",
                     "heavily_compressed_attention": "hca"}
DEEPSEEK_V4_RATES = {"csa": 4, "hca": 128}
#: The keys of the experts each token is routed to: the transformers name, KimiLinearConfig's, Gemma4TextConfig's.
EXPERTS_PER_TOKEN_KEYS = ("num_experts_per_tok", "num_experts_per_token", "top_k_experts")


@dataclass
class Group:
    """One cache group of the entry: its kind and each field as read."""

    kind: str
    fields: dict[str, Read]


@dataclass
class MoE:
    """The MoE fields of the entry, each as read, and the always-active FFN weights beside the routed experts."""

    fields: dict[str, Read]
    moe_layers: int
    shared_width: int  # FFN width of the shared experts of one MoE layer, summed
    matrices: int = 3  # weight matrices per expert: 3 gated, 2 non-gated (relu2)
    latent: int = 0  # the width the experts work in (0: hidden_size)

    def params(self, d: int) -> float:
        """Routed experts, router, shared experts and latent projections of every MoE layer."""
        e, ff = self.fields["routed_experts"].value, self.fields["expert_intermediate_size"].value
        width = self.latent or d
        per_layer = e * self.matrices * width * ff + d * e + self.matrices * d * self.shared_width
        if self.latent:
            per_layer += 2 * d * self.latent
        return float(self.moe_layers * per_layer)


@dataclass
class Layout:
    """What one family reads from a config: the entry's attention (``kind`` and its Reads, or groups), the
    model-level head layout, the MoE, the weights of the decoder layers and the notes the entry carries."""

    attention: dict
    head_dim: Read
    n_kv_heads: Read
    intermediate_size: Read
    layer_params: float
    moe: MoE | None = None
    groups: list[Group] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_layers: Read | None = None  # where the layer count is not num_hidden_layers (Nemotron-H's pattern)


def kv_heads(f: ConfigFields, n_q: int) -> Read:
    """num_key_value_heads, or n_q where absent (MHA, as every reference's __post_init__ fills it)."""
    n_kv = f.read("num_key_value_heads") if f.has("num_key_value_heads") else Read(n_q, "num_attention_heads")
    if n_q % n_kv.value:
        raise f.refuse("num_key_value_heads", f"{n_kv.value} does not divide num_attention_heads {n_q}")
    return n_kv


def head_dim(f: ConfigFields, model_type: str, d: int, n_q: int, notes: list[str]) -> Read:
    """head_dim as given; absent or null, the reference's: hidden / heads where it derives it, else its class
    default (both stated as notes)."""
    if f.has("head_dim"):
        return f.read("head_dim")
    if model_type in HIDDEN_OVER_HEADS_TYPES or model_type not in MODELLED_TYPES:
        if d % n_q:
            raise f.refuse("hidden_size", f"not a multiple of num_attention_heads {n_q}")
        named = model_type if model_type in MODELLED_TYPES else "llama"
        notes.append(f"head_dim: absent; hidden_size / num_attention_heads = {d // n_q}, the {named} convention (assumption)")
        return Read(d // n_q, "derived-head-dim", f"hidden_size / num_attention_heads ({named} convention)")
    if model_type in HEAD_DIM_DEFAULTS:
        value = HEAD_DIM_DEFAULTS[model_type]
        notes.append(f"head_dim: absent; {value}, the default of the {model_type} configuration class")
        return Read(value, "head_dim", f"the {model_type} configuration class's default {value}", absent=True)
    raise f.refuse("head_dim", f"absent, and {model_type} does not define it as hidden / heads")


def gqa_params(d: int, n_q: int, n_kv: int, dh: int, values: bool = True) -> int:
    """q, k, v and o projections of one layer: d d_h (n_q + 2 n_kv) + n_q d_h d; without v where keys are values."""
    return d * dh * (n_q + (2 if values else 1) * n_kv) + n_q * dh * d


def read_moe(f: ConfigFields, n_layers: int, ff_key: str = "intermediate_size") -> MoE | None:
    """Routed experts per token, shared experts and the layers without routed experts: ``first_k_dense_replace``,
    a 0/1 list ``moe_layer_freq`` (MiniMax-M3), ``interleave_moe_layer_step`` (Llama 4)."""
    routed_key = next((k for k in ("num_local_experts", "n_routed_experts", "num_experts") if f.has(k)), None)
    if routed_key is None:
        return None
    per_token_key = next((k for k in EXPERTS_PER_TOKEN_KEYS if f.has(k)), EXPERTS_PER_TOKEN_KEYS[0])
    fields = {"routed_experts": f.read(routed_key), "experts_per_token": f.read(per_token_key)}
    width_key = next((k for k in ("moe_intermediate_size", "expert_intermediate_size") if f.has(k)), ff_key)
    fields["expert_intermediate_size"] = f.read(width_key)
    if fields["experts_per_token"].value > fields["routed_experts"].value:
        raise f.refuse(per_token_key, f"exceeds {routed_key} {fields['routed_experts'].value}")
    shared_width = 0
    shared_key = next((k for k in ("n_shared_experts", "num_shared_experts") if f.has(k)), None)
    if shared_key is not None:
        fields["shared_experts"] = f.read(shared_key, 0)
        shared_width = fields["shared_experts"].value * fields["expert_intermediate_size"].value
    elif f.raw("shared_expert_intermediate_size", 0):
        fields["shared_experts"] = Read(1, "shared_expert_intermediate_size")
        shared_width = f.count("shared_expert_intermediate_size")
    elif f.raw("shared_intermediate_size", 0):
        fields["shared_experts"] = Read(1, "shared_intermediate_size")
        shared_width = f.count("shared_intermediate_size")
    else:
        fields["shared_experts"] = Read(0, "n_shared_experts", "0", absent=True)
    dense = _dense_layers(f, n_layers)
    fields["dense_layers"] = dense
    if dense.value >= n_layers:
        raise f.refuse(dense.key, f"{dense.value} dense layers of {n_layers}")
    return MoE(fields, n_layers - dense.value, shared_width)


def _dense_layers(f: ConfigFields, n_layers: int) -> Read:
    if f.raw("mlp_only_layers"):
        raise f.refuse("mlp_only_layers", "dense layers listed among MoE layers are not read")
    if f.raw("decoder_sparse_step", 1) != 1:
        raise f.refuse("decoder_sparse_step", "MoE only every k-th layer is not read")
    if isinstance(f.raw("moe_layer_freq"), list):
        pattern = f.counts("moe_layer_freq", n_layers)
        if set(pattern) - {0, 1}:
            raise f.refuse("moe_layer_freq", "must list 0 (dense) or 1 (MoE) per layer")
        return Read(pattern.count(0), "moe_layer_freq")
    if f.raw("moe_layer_freq", 1) != 1:
        raise f.refuse("moe_layer_freq", "MoE only in some layers is not read")
    step_key = next((k for k in ("interleave_moe_layer_step", "moe_layer_frequency") if f.has(k)), None)
    step = f.count(step_key) if step_key else 1
    if step != 1:  # Llama 4, Arctic: layer i is MoE where (i + 1) % step == 0
        return Read(n_layers - n_layers // step, step_key)
    if f.has("first_k_dense_replace"):
        return f.read("first_k_dense_replace", 0)
    return Read(0, "first_k_dense_replace", "0", absent=True)


def _gqa_layer_kinds(f: ConfigFields, model_type: str, n_layers: int) -> tuple[list[str], str]:
    """One kind per layer (full, window, chunked, linear, sparse) and the key it comes from: ``layer_types``, or the
    pattern the type's reference derives when the config leaves it out."""
    if f.has("layer_types"):
        return f.names("layer_types", LAYER_TYPE_NAMES, n_layers), "layer_types"
    if f.has("full_attention_interval"):  # Qwen3NextConfig: every interval-th layer full, the rest linear attention
        interval = f.count("full_attention_interval")
        return ["linear" if (i + 1) % interval else "full" for i in range(n_layers)], "full_attention_interval"
    if f.has("hybrid_layer_pattern"):  # MiMo-V2 (MiMoV2FlashConfig): 1 marks a sliding-window layer, 0 a full one
        pattern = f.counts("hybrid_layer_pattern", n_layers)
        if set(pattern) - {0, 1}:
            raise f.refuse("hybrid_layer_pattern", "must list 0 (full) or 1 (sliding window) per layer")
        return ["window" if flag else "full" for flag in pattern], "hybrid_layer_pattern"
    if model_type == "llama4_text":  # Llama4TextConfig: every no_rope_layer_interval-th layer global, the rest chunked
        chunk = f.config.get("attention_chunk_size", 8192)
        if f.has("no_rope_layers"):
            rope = f.counts("no_rope_layers", n_layers)
        else:
            interval = f.count("no_rope_layer_interval") if f.has("no_rope_layer_interval") else 4
            rope = [int((i + 1) % interval != 0) for i in range(n_layers)]
        return ["chunked" if r and chunk is not None else "full" for r in rope], "no_rope_layers"
    if model_type == "gemma4_text":  # Gemma4TextConfig: 5 sliding to 1 full, the last layer full
        kinds = ["window" if (i + 1) % 6 else "full" for i in range(n_layers)]
        return kinds[:-1] + ["full"], "layer_types"
    if model_type == "minimax_m3":  # MiniMaxM3VLTextConfig: sparse_attention_freq 1 marks a sparse layer
        sparse = f.section("sparse_attention_config")
        if sparse.has("sparse_attention_freq"):
            flags = sparse.counts("sparse_attention_freq", n_layers)
            return ["sparse" if flag else "full" for flag in flags], "sparse_attention_config.sparse_attention_freq"
    if f.raw("use_sliding_window") and f.has("sliding_window"):
        raise f.refuse("use_sliding_window", "sliding layers not listed per layer (layer_types absent)")
    return ["full"] * n_layers, "layer_types"


def _with_values(f: ConfigFields, keys: Read, value_key: str, prefix: str = "") -> Read:
    """The head size a layer caches per key and value: ``keys``, or where ``value_key`` gives values of another size
    (MiMo-V2's head_dim 192, v_head_dim 128), their mean, which sizes the cache (n_kv (d_k + d_v) per position) and
    the attention FLOPs (2 n_q (d_k + d_v)) exactly."""
    if not f.has(value_key) or f.count(value_key) == keys.value:
        return keys
    values = f.count(value_key)
    if (keys.value + values) % 2:
        raise f.refuse(value_key, f"{values} and the key size {keys.value} have no whole mean (their sum is odd)")
    name = f"{prefix}mean-head-dim"
    return Read((keys.value + values) // 2, name, f"({keys.key} + {value_key}) / 2: keys and values of their own sizes")


def _window_geometry(f: ConfigFields, n_q: int, n_kv: Read, dh: Read) -> tuple[Read, Read, Read]:
    """The query heads, KV heads and head size of the sliding-window layers: their own (``swa_num_attention_heads``,
    ``swa_num_key_value_heads``, ``swa_head_dim``, ``swa_v_head_dim``: MiMo-V2, as vLLM's
    vllm/model_executor/models/mimo_v2_flash.py reads them, MiMoV2Attention per layer), else the model's."""
    q = f.read("swa_num_attention_heads") if f.has("swa_num_attention_heads") else Read(n_q, "num_attention_heads")
    kv = f.read("swa_num_key_value_heads") if f.has("swa_num_key_value_heads") else n_kv
    if q.value % kv.value:
        raise f.refuse(kv.key, f"{kv.value} does not divide the sliding layers' query heads {q.value}")
    size = _with_values(f, f.read("swa_head_dim"), "swa_v_head_dim", "swa-") if f.has("swa_head_dim") else dh
    return q, kv, size


def read_gqa(f: ConfigFields, model_type: str, n_layers: int, d: int, n_q: int) -> Layout:
    """Grouped-query attention, per layer full, sliding-window, chunked (Llama 4), sparse with an index cache
    (MiniMax-M3) or linear attention (Qwen3.5's Gated DeltaNet); Gemma 4's full layers with their own head_dim and
    KV heads (global_head_dim, num_global_key_value_heads) and, under attention_k_eq_v, no value projection: the
    reference (Gemma4TextAttention) still caches a key and a value, normed apart. Sliding layers with heads and head
    sizes of their own (swa_*), keys and values of different sizes (v_head_dim), the layer pattern of
    full_attention_interval (Qwen3NextConfig) or hybrid_layer_pattern, and a dense MLP beside the experts
    (_dense_beside) are read wherever they appear. MiniMax-M3 is read as transformers' MiniMaxM3VLTextConfig reads
    the same keys (model_type minimax_m3_vl_text); MiMo, which transformers does not define, as vLLM's
    vllm/model_executor/models/mimo.py reads it (Qwen2 attention, its multi-token-prediction layers not counted);
    Arctic as vllm/model_executor/models/arctic.py (Llama attention, experts of intermediate_size every
    moe_layer_frequency-th layer)."""
    notes: list[str] = []
    n_kv = kv_heads(f, n_q)
    dh = _with_values(f, head_dim(f, model_type, d, n_q, notes), "v_head_dim")
    kinds, kinds_key = _gqa_layer_kinds(f, model_type, n_layers)
    win_q, win_kv, win_dh = _window_geometry(f, n_q, n_kv, dh)
    if f.raw("num_kv_shared_layers", 0):
        raise f.refuse("num_kv_shared_layers", "layers that reuse another layer's cache are not read")
    if f.raw("hidden_size_per_layer_input", 0):
        raise f.refuse("hidden_size_per_layer_input", "per-layer input embeddings are not read")
    count = Counter(kinds)
    layers = {kind: Read(n, kinds_key) for kind, n in count.items()}
    groups: list[Group] = []
    params = 0
    # full layers (Gemma 4: their own head_dim and, with attention_k_eq_v, KV heads and no value projection)
    full_kv, full_dh, k_eq_v = n_kv, dh, False
    if model_type == "gemma4_text":
        k_eq_v = f.flag("attention_k_eq_v")
        full_dh = f.read_or("global_head_dim", 512, "the gemma4_text configuration class's default 512")
        if k_eq_v and f.has("num_global_key_value_heads"):
            full_kv = f.read("num_global_key_value_heads")
    for kind in ("full", "sparse"):
        if not count[kind]:
            continue
        fields = {"layers": layers[kind], "n_q_heads": Read(n_q, "num_attention_heads"), "n_kv_heads": full_kv,
                  "head_dim": full_dh}
        params += count[kind] * gqa_params(d, n_q, full_kv.value, full_dh.value, values=not k_eq_v)
        if kind == "sparse":
            fields["index_head_dim"], indexer = _minimax_indexer(f, count["sparse"])
            params += count["sparse"] * indexer(d)
        groups.append(Group("full", fields))
    if f.flag("attn_output_gate"):
        params += count["full"] * d * n_q * dh.value
    window_key = "sliding_window_size" if f.has("sliding_window_size") else "sliding_window"
    for kind, span_key, default in (("window", window_key, 512), ("chunked", "attention_chunk_size", 8192)):
        if count[kind]:
            span = f.read_or(span_key, default if model_type in ("gemma4_text", "llama4_text") else 0,
                             f"the {model_type} configuration class's default {default}")
            if not span.value:
                raise f.refuse(span_key, f"missing: the span of the {kind} layers is needed")
            q, kv, size = (win_q, win_kv, win_dh) if kind == "window" else (Read(n_q, "num_attention_heads"), n_kv, dh)
            groups.append(Group(kind, {"layers": layers[kind], "n_q_heads": q, "n_kv_heads": kv, "head_dim": size,
                                       "span": span}))
            params += count[kind] * gqa_params(d, q.value, kv.value, size.value)
    if count["linear"]:
        group, linear_params, note = _gated_deltanet(f, d, layers["linear"])
        groups.append(group)
        params += count["linear"] * linear_params
        notes.append(note)
    moe = read_moe(f, n_layers)
    ff = f.read("intermediate_size") if f.has("intermediate_size") else None
    if moe is None:
        if ff is None:
            raise f.refuse("intermediate_size", "missing: an integer >= 1 is needed")
        params += n_layers * 3 * d * ff.value
    else:
        if model_type == "llama4_text":  # one shared expert of intermediate_size; dense layers of intermediate_size_mlp
            moe.fields["shared_experts"], moe.shared_width = Read(1, "intermediate_size"), ff.value
        dense_ff = _dense_width(f, ff, moe)
        beside = _dense_beside(f, moe, ff)
        params += moe.params(d) + (moe.fields["dense_layers"].value + beside) * 3 * d * dense_ff
        ff = ff or moe.fields["expert_intermediate_size"]
    uniform = len(groups) == 1 and groups[0].kind == "full" and "index_head_dim" not in groups[0].fields
    window_pair = ({g.kind for g in groups} == {"full", "window"} and full_kv is n_kv and full_dh is dh
                   and (win_q.value, win_kv, win_dh) == (n_q, n_kv, dh))
    if uniform:
        attention = {"kind": "full"}
    elif window_pair or [g.kind for g in groups] == ["window"]:
        window = next(g for g in groups if g.kind == "window")
        attention = {"kind": "sliding_window", "window": window.fields["span"], "window_layers": window.fields["layers"]}
    else:
        attention = {"kind": "layers"}
    return Layout(attention, dh, n_kv, ff, float(params), moe, groups if attention["kind"] == "layers" else [], notes)


def _dense_beside(f: ConfigFields, moe: MoE, ff: Read | None) -> int:
    """The MoE layers that run a dense MLP of intermediate_size beside their experts, both on every token: every
    MoE layer of Gemma 4 under enable_moe_block (Gemma4TextDecoderLayer: mlp and experts summed) and of Arctic under
    use_residual (vllm/model_executor/models/arctic.py: residual_mlp beside block_sparse_moe); recorded as the MoE's
    ``dense_beside`` layers."""
    key = next((k for k in ("enable_moe_block", "use_residual") if f.flag(k)), None)
    if key is None:
        return 0
    if ff is None:
        raise f.refuse("intermediate_size", f"missing: the width of the dense MLP beside the experts ({key}) is needed")
    moe.fields["dense_beside"] = Read(moe.moe_layers, key)
    return moe.moe_layers


def _dense_width(f: ConfigFields, ff: Read | None, moe: MoE) -> int:
    """The FFN width of an MoE model's dense layers: intermediate_size, or the type's own key for it."""
    for key in ("dense_intermediate_size", "intermediate_size_mlp"):
        if f.has(key):
            return f.count(key)
    if moe.fields["dense_layers"].value and ff is None:
        raise f.refuse("intermediate_size", "missing: the width of the dense layers is needed")
    return ff.value if ff else 0


def _minimax_indexer(f: ConfigFields, sparse_layers: int):
    """MiniMax-M3's lightning indexer: one key of sparse_index_dim per token on every sparse layer (cached, whole on
    every TP rank), queries of sparse_num_index_heads; its weights d n_I d_I + d d_I per layer."""
    sparse = f.section("sparse_attention_config")
    index = sparse.read_or("sparse_index_dim", 128, "MiniMaxM3VLTextConfig's default index_head_dim 128")
    heads = sparse.count("sparse_num_index_heads") if sparse.has("sparse_num_index_heads") else 4
    if sparse.has("sparse_disable_index_value"):
        n = len(sparse.raw("sparse_attention_freq"))
        flags = sparse.counts("sparse_attention_freq", n)
        disabled = sparse.counts("sparse_disable_index_value", n)
        if any(flag and not off for flag, off in zip(flags, disabled)):
            raise sparse.refuse("sparse_disable_index_value", "a sparse layer with index values is not read")
    index = Read(index.value, "sparse_attention_config.sparse_index_dim", index.formula, index.absent)
    return index, lambda d: d * heads * index.value + d * index.value


def _gated_deltanet(f: ConfigFields, d: int, layers: Read) -> tuple[Group, int, str]:
    """Qwen3.5's Gated DeltaNet layers: a recurrent state of n_v x d_k x d_v and a causal-convolution window of
    (kernel - 1) x (2 n_k d_k + n_v d_v) per layer, split over TP by the value heads (vLLM's GatedDeltaNet)."""
    nk, nv = f.count("linear_num_key_heads"), f.count("linear_num_value_heads")
    dk, dv, kernel = f.count("linear_key_head_dim"), f.count("linear_value_head_dim"), f.count("linear_conv_kernel_dim")
    conv_channels = 2 * nk * dk + nv * dv
    state = nv * dk * dv + (kernel - 1) * conv_channels
    formula = ("linear_num_value_heads x linear_key_head_dim x linear_value_head_dim + (linear_conv_kernel_dim - 1) x "
               "(2 linear_num_key_heads linear_key_head_dim + linear_num_value_heads linear_value_head_dim)")
    group = Group("state", {"layers": layers, "state_elements": Read(state, "linear_value_head_dim", formula),
                            "state_heads": Read(nv, "linear_num_value_heads")})
    params = d * conv_channels + d * nv * dv + 2 * d * nv + conv_channels * kernel + nv * dv * d
    note = (f"{f.prefix}layer_types: {layers.value} linear-attention (Gated DeltaNet) layers hold a constant state of "
            f"{nv} x {dk} x {dv} + ({kernel} - 1) x {conv_channels} elements each, in the assumed state dtype")
    return group, params, note


def read_mla(f: ConfigFields, model_type: str, n_layers: int, d: int, n_q: int) -> Layout:
    """Multi-head latent attention (DeepSeek-V3, Kimi K2, GLM-5): a latent of kv_lora_rank + qk_rope_head_dim per
    token and layer; with a lightning indexer (index_head_dim: GLM-5's DSA, DeepSeek-V3.2) one index key per token
    beside it (GlmMoeDsaIndexer caches it), stored as the engines store it (kvwall.inputs.index_storage), both whole
    on every TP rank. Kimi K2 (model_type kimi_k2, which transformers defines only inside kimi_k25) is DeepSeek-V3's
    architecture, as vLLM serves it
    (vllm/model_executor/models/deepseek_v2.py)."""
    rank, rope, per_layer = _latent(f, d, n_q)
    nope, q_rank = f.count("qk_nope_head_dim"), f.count("q_lora_rank") if f.has("q_lora_rank") else 0
    attention = {"kind": "mla", "kv_lora_rank": rank, "qk_rope_head_dim": rope}
    notes = []
    if f.has("index_head_dim"):
        index = f.read("index_head_dim")
        if index.value % INDEX_STORAGE.block:
            raise f.refuse("index_head_dim", f"{index.value} is not a multiple of {INDEX_STORAGE.block}, the values the "
                                             "engines store per fp32 scale")
        heads = f.count("index_n_heads")
        per_layer += (q_rank or d) * heads * index.value + d * index.value + d * heads
        attention["index_head_dim"] = index
        notes.append(f"{f.prefix}index_head_dim: the sparse-attention indexer caches one key of {index.value} per token "
                     f"and layer beside the latent, in fp8 with one fp32 scale per {INDEX_STORAGE.block} values "
                     f"({INDEX_STORAGE.key_bytes(index.value)} B) whatever the KV format")
    moe = read_moe(f, n_layers)
    ff = f.read("intermediate_size")
    params = n_layers * per_layer
    params += moe.params(d) + moe.fields["dense_layers"].value * 3 * d * ff.value if moe else n_layers * 3 * d * ff.value
    n_kv = f.read("num_key_value_heads") if f.has("num_key_value_heads") else Read(n_q, "num_attention_heads")
    return Layout(attention, Read(nope, "qk_nope_head_dim"), n_kv, ff, float(params), moe, [], notes)


def _latent(f: ConfigFields, d: int, n_q: int) -> tuple[Read, Read, int]:
    """An MLA layer's latent rank, rotary key size and weights: the query (through q_lora_rank where given), the
    latent and rotary key, their up-projection to keys and values, the output (DeepseekV3Attention)."""
    rank, rope = f.read("kv_lora_rank"), f.read("qk_rope_head_dim", 0)
    nope, v_dim = f.count("qk_nope_head_dim"), f.count("v_head_dim")
    q_rank = f.count("q_lora_rank") if f.has("q_lora_rank") else 0
    q_weights = d * q_rank + q_rank * n_q * (nope + rope.value) if q_rank else d * n_q * (nope + rope.value)
    return rank, rope, q_weights + d * (rank.value + rope.value) + rank.value * n_q * (nope + v_dim) + n_q * v_dim * d


def read_delta_hybrid(f: ConfigFields, model_type: str, n_layers: int, d: int, n_q: int) -> Layout:
    """Kimi Linear: Kimi Delta Attention layers (``linear_attn_config.kda_layers``, 1-based) beside MLA layers
    (``full_attn_layers``), read as vLLM's vllm/model_executor/models/kimi_linear.py and
    vllm/model_executor/layers/kda.py read them. A KDA layer holds a recurrent state of num_heads x head_dim x
    head_dim and three short-convolution windows (q, k, v) of (short_conv_kernel_size - 1) x num_heads head_dim,
    split over TP by its heads (MambaStateShapeCalculator.kda_state_shape); an MLA layer caches its latent, whole on
    every rank."""
    linear = f.section("linear_attn_config")
    kda, full = linear.counts("kda_layers", minimum=1), linear.counts("full_attn_layers", minimum=1)
    if sorted(kda + full) != list(range(1, n_layers + 1)):
        raise linear.refuse("kda_layers", f"with full_attn_layers must list every layer 1 to {n_layers} once "
                                          f"(lists {len(kda)} + {len(full)})")
    heads, size, kernel = linear.count("num_heads"), linear.count("head_dim"), linear.count("short_conv_kernel_size")
    width = heads * size
    state = heads * size * size + 3 * (kernel - 1) * width
    formula = ("linear_attn_config: num_heads x head_dim x head_dim + 3 (short_conv_kernel_size - 1) x num_heads "
               "head_dim")
    rank, rope, latent_params = _latent(f, d, n_q)
    groups = [Group("latent", {"layers": Read(len(full), "linear_attn_config.full_attn_layers"),
                               "n_q_heads": Read(n_q, "num_attention_heads"), "kv_lora_rank": rank,
                               "qk_rope_head_dim": rope}),
              Group("state", {"layers": Read(len(kda), "linear_attn_config.kda_layers"),
                              "state_elements": Read(state, "linear_attn_config.head_dim", formula),
                              "state_heads": Read(heads, "linear_attn_config.num_heads")})]
    # q, k, v and output projections, their convolutions, the low-rank forget gate and output gate, the beta gate
    kda_params = 4 * d * width + 3 * width * kernel + 2 * (d * size + size * width) + d * heads
    params = len(full) * latent_params + len(kda) * kda_params
    moe = read_moe(f, n_layers)
    ff = f.read("intermediate_size")
    params += moe.params(d) + moe.fields["dense_layers"].value * 3 * d * ff.value if moe else n_layers * 3 * d * ff.value
    notes = [f"{f.prefix}linear_attn_config: {len(kda)} Kimi Delta Attention layers hold a constant state of {heads} x "
             f"{size} x {size} + 3 x ({kernel} - 1) x {width} elements each, in the assumed state dtype; "
             f"{len(full)} MLA layers cache a latent of {rank.value} + {rope.value}"]
    n_kv = f.read("num_key_value_heads") if f.has("num_key_value_heads") else Read(n_q, "num_attention_heads")
    return Layout({"kind": "layers"}, Read(f.count("qk_nope_head_dim"), "qk_nope_head_dim"), n_kv, ff, float(params),
                  moe, groups, notes)


def read_compressed(f: ConfigFields, model_type: str, n_layers: int, d: int, n_q: int) -> Layout:
    """DeepSeek-V4: shared-KV MQA (one head of head_dim cached as key and value) over the last sliding_window tokens
    in every layer; compressed layers add one pooled entry per compress ratio of tokens, CSA (ratio 4) with a
    lightning indexer key of index_head_dim per entry, HCA (ratio 128) without (DeepseekV4CSACache and
    DeepseekV4HCACache of transformers; deepseek_ref, the same checkpoint format for SGLang, is read alike, as vLLM
    reads both: vllm/model_executor/models/deepseek_v4.py and vllm/model_executor/layers/deepseek_v4_attention.py).
    The KV head is replicated over TP ranks, index keys too."""
    kinds, kinds_key = _deepseek_v4_kinds(f, n_layers)
    rates = _deepseek_v4_rates(f)
    n_kv = f.read_or("num_key_value_heads", 1, "DeepseekV4Config's default 1")
    dh = f.read_or("head_dim", 512, "DeepseekV4Config's default 512")
    span = f.read_or("sliding_window", 128, "DeepseekV4Config's default 128")
    index = f.read_or("index_head_dim", 128, "DeepseekV4Config's default 128")
    index_heads = f.count("index_n_heads") if f.has("index_n_heads") else 64
    q_rank = f.count("q_lora_rank") if f.has("q_lora_rank") else 1024
    o_groups = f.count("o_groups") if f.has("o_groups") else 8
    o_rank = f.count("o_lora_rank") if f.has("o_lora_rank") else 1024
    if (n_q * dh.value) % o_groups:
        raise f.refuse("o_groups", f"does not divide num_attention_heads x head_dim {n_q * dh.value}")
    count = Counter(kinds)
    heads = {"n_q_heads": Read(n_q, "num_attention_heads"), "n_kv_heads": n_kv, "head_dim": dh,
             "kv_tensors": Read(1, "shared-kv", "one tensor cached as key and value (shared-KV MQA, DeepseekV4Attention)")}
    ratio_key = "compress_ratios" if f.has("compress_ratios") else "compress_rates"
    groups = []
    if count["window"]:
        groups.append(Group("window", {"layers": Read(count["window"], kinds_key), **heads, "span": span}))
    for kind in ("csa", "hca"):
        if count[kind]:
            fields = {"layers": Read(count[kind], kinds_key), **heads, "span": span,
                      "compress_ratio": Read(rates[kind], ratio_key)}
            if kind == "csa":
                fields["index_head_dim"] = index
            groups.append(Group("compressed", fields))
    dhv = dh.value
    attention = d * q_rank + q_rank * n_q * dhv + d * dhv + n_q * dhv * o_rank + o_groups * o_rank * d
    params = n_layers * attention
    params += count["csa"] * (2 * d * 2 * dhv + 2 * d * 2 * index.value + q_rank * index_heads * index.value + d * index_heads)
    params += count["hca"] * 2 * d * dhv
    moe = read_moe(f, n_layers, ff_key="moe_intermediate_size")
    params += moe.params(d)
    notes = [f"{f.prefix}{kinds_key}: {count['window']} sliding-window, {count['csa']} CSA (1 entry per {rates['csa']} "
             f"tokens, index keys of {index.value}) and {count['hca']} HCA (1 per {rates['hca']}) layers, each over a "
             f"{span.value}-token window of one {dhv}-wide key-value tensor"]
    ff = moe.fields["expert_intermediate_size"]
    return Layout({"kind": "layers"}, dh, n_kv, ff, float(params), moe, groups, notes)


def _deepseek_v4_kinds(f: ConfigFields, n_layers: int) -> tuple[list[str], str]:
    """window, csa or hca per layer: layer_types, else the ratios of compress_ratios, else DeepseekV4Config's default
    (2 HCA layers, then CSA and HCA alternating)."""
    if f.has("layer_types"):
        return f.names("layer_types", DEEPSEEK_V4_TYPES, n_layers), "layer_types"
    if f.has("compress_ratios"):
        rates = _deepseek_v4_rates(f)
        by_ratio = {0: "window", rates["csa"]: "csa", rates["hca"]: "hca"}
        ratios = f.counts("compress_ratios", n_layers)
        unknown = sorted(set(ratios) - set(by_ratio))
        if unknown:
            raise f.refuse("compress_ratios", f"ratio {unknown[0]} is neither 0 nor a CSA ({rates['csa']}) or HCA "
                                              f"({rates['hca']}) rate")
        return [by_ratio[r] for r in ratios], "compress_ratios"
    kinds = ["hca"] * min(n_layers, 2) + ["csa" if i % 2 else "hca" for i in range(max(n_layers - 2, 0))]
    return kinds, "layer_types"


def _deepseek_v4_rates(f: ConfigFields) -> dict[str, int]:
    rates = dict(DEEPSEEK_V4_RATES)
    given = f.section("compress_rates")
    for kind, name in (("csa", "compressed_sparse_attention"), ("hca", "heavily_compressed_attention")):
        if given.has(name):
            rates[kind] = given.count(name)
        legacy = f"compress_rate_{kind}"
        if f.has(legacy):
            rates[kind] = f.count(legacy)
    return rates


def read_nemotron_h(f: ConfigFields, model_type: str, n_layers: int | None, d: int, n_q: int) -> Layout:
    """Nemotron-H: Mamba-2, attention, MoE and MLP blocks by hybrid_override_pattern or layers_block_type, whose length
    is the layer count (NemotronHConfig derives num_hidden_layers from it). A Mamba-2 layer holds a constant state of
    heads x head_dim x ssm_state_size plus a convolution window of (conv_kernel - 1) x (heads head_dim + 2 n_groups
    ssm_state_size), split over TP by its heads (vLLM's MambaMixer2); relu2 experts (two matrices), working in
    moe_latent_size where given (fc1/fc2_latent_proj project to and from it). A stack of Mamba-2, attention and MLP
    blocks only (no E block, no routed experts: Nemotron-H 8B and 56B) is a dense hybrid, its relu2 MLPs of
    intermediate_size (vllm/model_executor/models/nemotron_h.py NemotronHMLP)."""
    key, blocks = _nemotron_blocks(f)
    if n_layers is not None and n_layers != len(blocks):
        raise f.refuse("num_hidden_layers", f"{n_layers}, but {key} has {len(blocks)} blocks")
    n_layers = len(blocks)
    notes: list[str] = []
    n_kv = kv_heads(f, n_q)
    dh = head_dim(f, model_type, d, n_q, notes)
    if f.text("mlp_hidden_act") != "relu2":
        raise f.refuse("mlp_hidden_act", f"{f.raw('mlp_hidden_act')!r}: only relu2 experts are read")
    heads, head_size, state_size = f.count("mamba_num_heads"), f.count("mamba_head_dim"), f.count("ssm_state_size")
    n_groups, kernel = f.count("n_groups"), f.count("conv_kernel")
    inner = heads * head_size
    conv_channels = inner + 2 * n_groups * state_size
    state = heads * head_size * state_size + (kernel - 1) * conv_channels
    formula = ("mamba_num_heads x mamba_head_dim x ssm_state_size + (conv_kernel - 1) x "
               "(mamba_num_heads mamba_head_dim + 2 n_groups ssm_state_size)")
    counts = {kind: blocks.count(kind) for kind in NEMOTRON_LETTERS.values()}
    layers = {kind: Read(n, key) for kind, n in counts.items()}
    groups = [Group("full", {"layers": layers["attention"], "n_q_heads": Read(n_q, "num_attention_heads"),
                             "n_kv_heads": n_kv, "head_dim": dh}),
              Group("state", {"layers": layers["mamba"], "state_elements": Read(state, "ssm_state_size", formula),
                              "state_heads": Read(heads, "mamba_num_heads")}),
              Group("none", {"layers": Read(counts["moe"] + counts["mlp"], key)})]
    groups = [g for g in groups if g.fields["layers"].value]
    notes.append(f"{f.prefix}{key}: {counts['mamba']} Mamba-2 layers hold a constant state of {heads} x "
                 f"{head_size} x {state_size} + ({kernel} - 1) x {conv_channels} elements each, in the assumed state "
                 f"dtype; {counts['moe'] + counts['mlp']} MoE or MLP layers cache nothing")
    moe = read_moe(f, n_layers)
    if moe is None and counts["moe"]:
        raise f.refuse(key, f"{counts['moe']} MoE blocks, but no routed experts (n_routed_experts) are given")
    if moe is not None:
        moe.shared_width = moe.fields["shared_experts"].value * f.count("moe_shared_expert_intermediate_size")
        moe.moe_layers, moe.matrices = counts["moe"], 2
        moe.fields["dense_layers"] = Read(n_layers - counts["moe"], key)
        moe.fields["expert_matrices"] = Read(2, "mlp_hidden_act")
        if f.has("moe_latent_size"):
            moe.latent = f.count("moe_latent_size")
            moe.fields["latent_size"] = f.read("moe_latent_size")
    ff = f.read("intermediate_size")
    params = counts["attention"] * gqa_params(d, n_q, n_kv.value, dh.value) + counts["mamba"] * (
        d * (2 * inner + 2 * n_groups * state_size + heads) + conv_channels * kernel + inner * d)
    params += (moe.params(d) if moe else 0) + counts["mlp"] * 2 * d * ff.value
    return Layout({"kind": "layers"}, dh, n_kv, ff, float(params), moe, groups, notes, Read(n_layers, key))


def _nemotron_blocks(f: ConfigFields) -> tuple[str, list[str]]:
    if f.has("hybrid_override_pattern"):
        pattern = f.text("hybrid_override_pattern")
        unknown = sorted(set(pattern) - set(NEMOTRON_LETTERS))
        if unknown:
            raise f.refuse("hybrid_override_pattern", f"block {unknown[0]!r} is not understood")
        return "hybrid_override_pattern", [NEMOTRON_LETTERS[c] for c in pattern]
    if not f.has("layers_block_type"):
        raise f.refuse("layers_block_type", "missing: the block of each layer is needed")
    return "layers_block_type", f.names("layers_block_type", NEMOTRON_NAMES)


def read_nemotron_nas(f: ConfigFields, model_type: str, n_layers: int, d: int, n_q: int) -> Layout:
    """Llama-Nemotron (DeciLM, ``nemotron-nas``): per layer ``block_configs``, attention with num_attention_heads /
    n_heads_in_group KV heads or none (no_op), an FFN of ffn_mult (width 2 ffn_mult d / 3 rounded up to 256) or none;
    read as vLLM's vllm/model_executor/models/nemotron_nas.py reads them (transformers does not define the type).
    One full group per KV-head count, FFN-only layers cache nothing."""
    notes: list[str] = []
    dh = head_dim(f, model_type, d, n_q, notes)
    blocks = f.records("block_configs", n_layers)
    kv_per_layer, widths, params = [], [], 0
    for block in blocks:
        attention, ffn = block.section("attention"), block.section("ffn")
        for section in (attention, ffn):
            for key in ("sparsify", "window_length", "num_sink_tokens"):
                if section.has(key):
                    raise section.refuse(key, "is not read (a block with it is not modelled)")
        if attention.flag("no_op"):
            kv_per_layer.append(0)
        elif attention.flag("replace_with_linear"):
            kv_per_layer.append(0)
            params += d * d
        else:
            group = attention.count("n_heads_in_group")
            if n_q % group:
                raise attention.refuse("n_heads_in_group", f"{group} does not divide num_attention_heads {n_q}")
            kv_per_layer.append(n_q // group)
            params += gqa_params(d, n_q, n_q // group, dh.value)
        if ffn.flag("no_op"):
            widths.append(0)
        elif ffn.flag("replace_with_linear"):
            widths.append(0)
            params += d * d
        else:
            mult = ffn.raw("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not 0 < mult < 1e3:
                raise ffn.refuse("ffn_mult", f"must be a positive number (got {mult!r})")
            width = 256 * math.ceil(int(2 * mult * d / 3) / 256)
            widths.append(width)
            params += 3 * d * width
    counts = Counter(kv_per_layer)
    groups = [Group("full", {"layers": Read(counts[n], "block_configs"), "n_q_heads": Read(n_q, "num_attention_heads"),
                             "n_kv_heads": Read(n, "block-configs-kv-heads", "num_attention_heads / "
                                                                       "block_configs[i].attention.n_heads_in_group"),
                             "head_dim": dh})
              for n in dict.fromkeys(kv_per_layer) if n]
    if counts[0]:
        groups.append(Group("none", {"layers": Read(counts[0], "block_configs")}))
    if not any(kv_per_layer):
        raise f.refuse("block_configs", "no block caches keys and values")
    n_kv = groups[0].fields["n_kv_heads"]
    widest = max(widths)
    ff = Read(widest, "block-configs-widest-ffn", "the widest FFN of block_configs, 2 ffn_mult hidden_size / 3 "
                                                  "rounded up to a multiple of 256")
    notes.append(f"{f.prefix}block_configs: {len(kv_per_layer) - counts[0]} attention layers of "
                 f"{', '.join(str(n) for n in dict.fromkeys(kv_per_layer) if n)} KV heads, {counts[0]} without attention; "
                 f"FFN widths from {min(w for w in widths if w) if any(widths) else 0} to {widest}")
    return Layout({"kind": "layers"}, dh, n_kv, ff, float(params), None, groups, notes)


#: Each family: its name (the conventions of kvwall.inputs.hf_keys name the same), the model types it reads, its reader.
FAMILIES = {"gqa": (GQA_TYPES, read_gqa), "mla": (MLA_TYPES, read_mla), "compressed": (COMPRESSED_TYPES, read_compressed),
            "mamba hybrid": (HYBRID_TYPES, read_nemotron_h), "blocks": (HETEROGENEOUS_TYPES, read_nemotron_nas),
            "delta hybrid": (DELTA_TYPES, read_delta_hybrid)}


def family_of(model_type: str) -> str:
    """The family of a model type of MODELLED_TYPES."""
    return next(name for name, (types, _) in FAMILIES.items() if model_type in types)


def read_layout(f: ConfigFields, model_type: str, family: str, n_layers: int | None, d: int, n_q: int) -> Layout:
    """The layout of a config of ``model_type``, read by ``family``'s reader (its own, or the convention's)."""
    return FAMILIES[family][1](f, model_type, n_layers, d, n_q)
