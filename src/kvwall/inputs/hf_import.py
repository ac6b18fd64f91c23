"""A published Hugging Face ``config.json`` as a config/models.yaml entry (``kvwall import``, ``--hf-config``).

Every value keeps the config key it was read from as its source; head_dim is taken as given, and only where an
architecture defines it as hidden / heads (Llama, Mixtral) is that convention used, and stated. Layer kinds come from
``layer_types`` and ``sliding_window``, or Nemotron-H's ``hybrid_override_pattern`` / ``layers_block_type``; a
multimodal wrapper's ``text_config`` is read.
What cannot be modelled is refused with one ImportRefused naming the file, the key and the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from kvwall.inputs.quantization import PartLayout, checkpoint_formats

#: Architectures (``model_type`` of the language model) and the attention each caches.
GQA_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "minimax_m2", "mimo", "qwen3_vl_text",
             "qwen3_vl_moe_text", "gpt_oss"}
MLA_TYPES = {"deepseek_v3", "kimi_k2", "glm_moe_dsa"}
LINEAR_TYPES = {"qwen3_5_text", "qwen3_5_moe_text"}
HYBRID_TYPES = {"nemotron_h"}
#: Nemotron-H block letters (hybrid_override_pattern) and names (layers_block_type): Mamba, attention, MoE, MLP.
NEMOTRON_BLOCKS = {"M": "mamba", "*": "attention", "E": "moe", "-": "mlp"}
#: Architectures whose head_dim is defined as hidden_size / num_attention_heads when the config omits it.
HIDDEN_OVER_HEADS_TYPES = {"llama", "mistral", "mixtral", "qwen2"}
#: Keys that change what a layer caches in ways kvwall does not model, with the reason.
UNMODELLED_KEYS = {
    "block_configs": "per-layer heterogeneous blocks (variable heads and FFN per layer) are not read",
    "compress_ratios": "compressed-attention layers are not modelled",
    "sparse_attention_config": "block-sparse attention with its own index cache is not modelled",
    "attention_k_eq_v": "layers whose keys double as values (one tensor cached, not two) are not modelled",
    "attention_chunk_size": "the chunked layers are not listed per layer (no_rope_layers absent)",
    "moe_latent_size": "experts that work in a projected latent width are not modelled",
    "kv_lora_rank_per_layer": "per-layer latent ranks are not read",
}


class ImportRefused(ValueError):
    """A config kvwall cannot model: which file, which key, and why."""

    def __init__(self, file: str | Path, key: str, reason: str):
        self.file, self.key, self.reason = str(file), key, reason
        super().__init__(f"{self.file}: {key}: {reason}")


@dataclass
class ImportedModel:
    """A models.yaml entry (``entry``) with its source ids and texts, its derived parameter count, and notes."""

    model_id: str
    hf_id: str
    entry: dict
    sources: dict
    params_derived: float
    notes: list = field(default_factory=list)


def hf_id_from_path(path: str | Path) -> str | None:
    """``org/model`` from a file named ``org--model_config.json``; None for a plain config.json."""
    match = re.fullmatch(r"([^/]+?)--(.+)_config\.json", Path(path).name)
    return f"{match[1]}/{match[2]}" if match else None


def model_id_from_hf(hf_id: str) -> str:
    """A catalogue id from a Hugging Face address: the model name lowercased, a leading 'Meta-' dropped."""
    name = hf_id.split("/")[-1].lower()
    return re.sub(r"^meta-", "", name).replace("_", "-")


def _read_json(path: Path) -> dict:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImportRefused(path, "(file)", "file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ImportRefused(path, "(file)", f"not a JSON config ({err.__class__.__name__})") from None
    if not isinstance(document, dict):
        raise ImportRefused(path, "(file)", "not a JSON object")
    return document


class _Reader:
    """Reads one config's keys, recording for each value the key it came from."""

    def __init__(self, file: Path, config: Mapping, prefix: str):
        self.file, self.config, self.prefix = file, config, prefix
        self.used: dict[str, str] = {}

    def has(self, key: str) -> bool:
        return self.config.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        value = self.config.get(key)
        return default if value is None else value

    def count(self, key: str, minimum: int = 1) -> int:
        value = self.config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ImportRefused(self.file, self.prefix + key, f"must be an integer >= {minimum} (got {value!r})")
        self.used[key] = self.prefix + key
        return value


def _moe(r: _Reader, n_layers: int) -> tuple[dict | None, int]:
    """MoE fields (routed, per token, shared, expert FFN, dense layers) and the shared experts' FFN width."""
    routed_key = next((k for k in ("num_local_experts", "n_routed_experts", "num_experts") if r.has(k)), None)
    if routed_key is None:
        return None, 0
    fields = {"routed_experts": r.count(routed_key), "experts_per_token": r.count("num_experts_per_tok")}
    fields["expert_intermediate_size"] = r.count("moe_intermediate_size") if r.has("moe_intermediate_size") else r.count("intermediate_size")
    shared_ff = 0
    if r.has("n_shared_experts"):
        fields["shared_experts"] = r.count("n_shared_experts", 0)
        shared_ff = fields["shared_experts"] * fields["expert_intermediate_size"]
    elif r.get("shared_expert_intermediate_size", 0):
        fields["shared_experts"] = 1
        shared_ff = r.count("shared_expert_intermediate_size")
    elif r.get("shared_intermediate_size", 0):
        fields["shared_experts"] = 1
        shared_ff = r.count("shared_intermediate_size")
    else:
        fields["shared_experts"] = 0
    dense = 0
    if r.has("first_k_dense_replace"):
        dense = r.count("first_k_dense_replace", 0)
    if r.get("mlp_only_layers"):
        raise ImportRefused(r.file, r.prefix + "mlp_only_layers", "dense layers listed among MoE layers are not read")
    if r.get("decoder_sparse_step", 1) != 1:
        raise ImportRefused(r.file, r.prefix + "decoder_sparse_step", "MoE only every k-th layer is not read")
    if r.get("moe_layer_freq", 1) not in (1,):
        raise ImportRefused(r.file, r.prefix + "moe_layer_freq", "MoE only in some layers is not read")
    fields["dense_layers"] = dense
    if dense >= n_layers:
        raise ImportRefused(r.file, r.prefix + "first_k_dense_replace", f"{dense} dense layers of {n_layers}")
    return fields, shared_ff


def _nemotron_blocks(r: _Reader, n_layers: int) -> tuple[str, list[str]]:
    """The key and the block of each layer of a Nemotron-H stack: mamba, attention, moe or mlp."""
    if r.has("hybrid_override_pattern"):
        key, given = "hybrid_override_pattern", list(r.get("hybrid_override_pattern"))
        names = NEMOTRON_BLOCKS
    else:
        key, given = "layers_block_type", r.get("layers_block_type")
        names = {name: name for name in NEMOTRON_BLOCKS.values()}
    if not isinstance(given, list) or len(given) != n_layers:
        raise ImportRefused(r.file, r.prefix + key, f"must give one block per layer ({n_layers})")
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ImportRefused(r.file, r.prefix + key, f"block {unknown[0]!r} is not understood")
    r.used[key] = r.prefix + key
    return key, [names[block] for block in given]


def _layer_kinds(r: _Reader, n_layers: int) -> list[str]:
    """One kind per layer: full, window or linear, from layer_types or full_attention_interval."""
    types = r.get("layer_types")
    if types is not None:
        names = {"full_attention": "full", "sliding_attention": "window", "linear_attention": "linear"}
        if not isinstance(types, list) or len(types) != n_layers:
            raise ImportRefused(r.file, r.prefix + "layer_types", f"must list one type per layer ({n_layers})")
        unknown = sorted(set(types) - set(names))
        if unknown:
            raise ImportRefused(r.file, r.prefix + "layer_types", f"layer type {unknown[0]!r} is not understood")
        r.used["layer_types"] = r.prefix + "layer_types"
        return [names[t] for t in types]
    if r.get("use_sliding_window") and r.has("sliding_window"):
        raise ImportRefused(r.file, r.prefix + "use_sliding_window", "sliding layers not listed per layer (layer_types absent)")
    return ["full"] * n_layers


def read_config(path: str | Path, quant_path: str | Path | None = None, hf_id: str | None = None,
                model_id: str | None = None) -> ImportedModel:
    """Import one config.json (and a quantized checkpoint's hf_quant_config.json) as a models.yaml entry."""
    path = Path(path)
    config = _read_json(path)
    if "quantization" in config and "model_type" not in config:
        raise ImportRefused(path, "quantization", "a quantization companion, not a model config (give it with its config.json)")
    hf_id = hf_id or hf_id_from_path(path)
    if hf_id is None:
        raise ImportRefused(path, "(file name)", "no Hugging Face id: name the file org--model_config.json or give --hf-id")
    if quant_path is None:
        candidate = path.with_name(path.name.replace("_config.json", "_hf_quant_config.json"))
        quant_path = candidate if candidate.exists() and candidate != path else None
    quant = _read_json(Path(quant_path)) if quant_path else None
    text, prefix = (config["text_config"], "text_config.") if isinstance(config.get("text_config"), dict) else (config, "")
    r = _Reader(path, text, prefix)
    model_type = text.get("model_type") or config.get("model_type")
    if model_type not in GQA_TYPES | MLA_TYPES | LINEAR_TYPES | HYBRID_TYPES:
        reason = next((why for key, why in UNMODELLED_KEYS.items() if text.get(key) is not None), None)
        bad = next((key for key in UNMODELLED_KEYS if text.get(key) is not None), "model_type")
        raise ImportRefused(path, prefix + bad, reason or f"architecture {model_type!r} is not modelled")
    for key, why in UNMODELLED_KEYS.items():
        if text.get(key) is not None:
            raise ImportRefused(path, prefix + key, why)
    model_id = model_id or model_id_from_hf(hf_id)
    url = f"https://huggingface.co/{hf_id}/blob/main/config.json"
    notes: list[str] = []

    L, d, n_q = r.count("num_hidden_layers"), r.count("hidden_size"), r.count("num_attention_heads")
    V = r.count("vocab_size")
    n_kv = r.count("num_key_value_heads") if r.has("num_key_value_heads") else n_q
    tied = bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))
    moe, shared_ff = _moe(r, L)
    ff = r.count("intermediate_size") if r.has("intermediate_size") else moe["expert_intermediate_size"]
    if n_q % n_kv:
        raise ImportRefused(path, prefix + "num_key_value_heads", f"{n_kv} does not divide num_attention_heads {n_q}")

    entry: dict = {"name": hf_id.split("/")[-1], "hf_id": hf_id}
    groups: list[dict] = []
    attention_params = 0.0  # weights of all attention or mixing layers
    layers_key, computed = "layer_types", {}  # the key layer counts come from; texts of values computed from keys
    mlp = None
    if model_type in HYBRID_TYPES:
        layers_key, blocks = _nemotron_blocks(r, L)
        head_dim, head_key = r.count("head_dim"), "head_dim"
        if r.get("mlp_hidden_act") != "relu2":
            raise ImportRefused(path, prefix + "mlp_hidden_act", f"{r.get('mlp_hidden_act')!r}: only relu2 experts are read")
        heads, head_size, state_size = r.count("mamba_num_heads"), r.count("mamba_head_dim"), r.count("ssm_state_size")
        n_groups, kernel = r.count("n_groups"), r.count("conv_kernel")
        inner = heads * head_size
        conv_channels = inner + 2 * n_groups * state_size
        state = heads * head_size * state_size + (kernel - 1) * conv_channels
        computed["ssm_state_size"] = (f"{prefix}mamba_num_heads x mamba_head_dim x ssm_state_size + (conv_kernel - 1) x "
                                      "(mamba_num_heads mamba_head_dim + 2 n_groups ssm_state_size)")
        counts = {kind: blocks.count(kind) for kind in NEMOTRON_BLOCKS.values()}
        groups = [{"kind": "full", "layers": counts["attention"], "n_q_heads": n_q, "n_kv_heads": n_kv, "head_dim": head_dim},
                  {"kind": "state", "layers": counts["mamba"], "state_elements": state},
                  {"kind": "none", "layers": counts["moe"] + counts["mlp"]}]
        groups = [g for g in groups if g["layers"]]
        attention = {"kind": "layers", "groups": groups}
        notes.append(f"{prefix}{layers_key}: {counts['mamba']} Mamba-2 layers hold a constant state of {heads} x "
                     f"{head_size} x {state_size} + ({kernel} - 1) x {conv_channels} elements each, in the assumed state "
                     f"dtype; {counts['moe'] + counts['mlp']} MoE or MLP layers cache nothing")
        if moe is None:
            raise ImportRefused(path, prefix + "n_routed_experts", "a Nemotron-H stack without routed experts is not read")
        shared_ff = moe["shared_experts"] * r.count("moe_shared_expert_intermediate_size")
        moe["dense_layers"], moe["expert_matrices"] = L - counts["moe"], 2
        attention_params = counts["attention"] * (d * head_dim * (n_q + 2 * n_kv) + n_q * head_dim * d) + counts["mamba"] * (
            d * (2 * inner + 2 * n_groups * state_size + heads) + conv_channels * kernel + inner * d)
        mlp = counts["moe"] * (moe["routed_experts"] * 2 * d * moe["expert_intermediate_size"] + 2 * d * shared_ff
                               + d * moe["routed_experts"]) + counts["mlp"] * 2 * d * ff
    elif model_type in MLA_TYPES:
        rank, rope = r.count("kv_lora_rank"), r.count("qk_rope_head_dim")
        nope, v_dim = r.count("qk_nope_head_dim"), r.count("v_head_dim")
        q_rank = r.count("q_lora_rank") if r.has("q_lora_rank") else 0
        head_dim, head_key = nope, "qk_nope_head_dim"
        attention = {"kind": "mla", "kv_lora_rank": rank, "qk_rope_head_dim": rope}
        q_weights = d * q_rank + q_rank * n_q * (nope + rope) if q_rank else d * n_q * (nope + rope)
        per_layer = q_weights + d * (rank + rope) + rank * n_q * (nope + v_dim) + n_q * v_dim * d
        if r.has("index_head_dim"):
            index_dim, index_heads = r.count("index_head_dim"), r.count("index_n_heads")
            per_layer += (q_rank or d) * index_heads * index_dim + d * index_dim + d * index_heads
            notes.append(f"{prefix}index_head_dim: the sparse-attention indexer's keys ({index_dim} per token and layer) "
                         "are not counted in the KV footprint")
        attention_params = float(L * per_layer)
    else:
        if r.has("head_dim"):
            head_dim, head_key = r.count("head_dim"), "head_dim"
        elif model_type in HIDDEN_OVER_HEADS_TYPES:
            if d % n_q:
                raise ImportRefused(path, prefix + "hidden_size", f"not a multiple of num_attention_heads {n_q}")
            head_dim, head_key = d // n_q, None
            notes.append(f"head_dim: absent; hidden_size / num_attention_heads = {head_dim}, the {model_type} convention (assumption)")
        else:
            raise ImportRefused(path, prefix + "head_dim", f"absent, and {model_type} does not define it as hidden / heads")
        kinds = _layer_kinds(r, L)
        gqa_params = d * head_dim * (n_q + 2 * n_kv) + n_q * head_dim * d
        full, window, linear = kinds.count("full"), kinds.count("window"), kinds.count("linear")
        if window:
            span = r.count("sliding_window")
            groups.append({"kind": "window", "layers": window, "span": span})
        if linear:
            nk, nv = r.count("linear_num_key_heads"), r.count("linear_num_value_heads")
            dk, dv, kernel = r.count("linear_key_head_dim"), r.count("linear_value_head_dim"), r.count("linear_conv_kernel_dim")
            conv_channels = 2 * nk * dk + nv * dv
            state = nv * dk * dv + (kernel - 1) * conv_channels
            groups.append({"kind": "state", "layers": linear, "state_elements": state})
            linear_params = d * conv_channels + d * nv * dv + 2 * d * nv + conv_channels * kernel + nv * dv * d
            attention_params += linear * linear_params
            notes.append(f"{prefix}layer_types: {linear} linear-attention (Gated DeltaNet) layers hold a constant state of "
                         f"{nv} x {dk} x {dv} + ({kernel} - 1) x {conv_channels} elements each, in the assumed state dtype")
        attention_params += (full + window) * gqa_params
        if text.get("attn_output_gate"):
            attention_params += full * d * n_q * head_dim
        attention = ({"kind": "sliding_window", "window": span, "window_layers": window} if window and not linear
                     else {"kind": "full"} if not linear else None)
        if attention is None:
            groups.insert(0, {"kind": "full", "layers": full, "n_q_heads": n_q, "n_kv_heads": n_kv, "head_dim": head_dim})
            attention = {"kind": "layers", "groups": groups}
    embeddings = (1 if tied else 2) * V * d
    if mlp is None and moe is None:
        mlp = L * 3 * d * ff
    elif mlp is None:
        routed = (L - moe["dense_layers"]) * moe["routed_experts"] * 3 * d * moe["expert_intermediate_size"]
        mlp = routed + (L - moe["dense_layers"]) * (3 * d * shared_ff + d * moe["routed_experts"]) + moe["dense_layers"] * 3 * d * ff
    params = attention_params + mlp + embeddings

    def key_source(key: str | None) -> str:
        if key is None:
            return f"{model_id}.derived-head-dim"
        sid = f"{model_id}.{(prefix + key).replace('_', '-')}"
        if key in computed:
            sources[sid] = f"{url}: {computed[key]}"
        elif key == "linear_value_head_dim":
            sources[sid] = (f"{url}: {prefix}linear_num_value_heads x linear_key_head_dim x linear_value_head_dim "
                            "+ (linear_conv_kernel_dim - 1) x (2 linear_num_key_heads linear_key_head_dim "
                            "+ linear_num_value_heads linear_value_head_dim)")
        elif key not in text:
            sources[sid] = f"{url}: {prefix}{key} absent (0)"
        else:
            sources[sid] = f"{url}: {prefix}{key}"
        return sid

    sources: dict[str, str] = {model_id: url}
    if head_key is None:
        sources[f"{model_id}.derived-head-dim"] = f"{url}: hidden_size / num_attention_heads ({model_type} convention)"

    def q(value, key, unit="count"):
        return {"value": value, "unit": unit, "source": key_source(key)}

    keys_used = dict(r.used)
    entry["source"] = model_id
    ffn_only = sum(g["layers"] for g in groups if g["kind"] == "none")
    layout = PartLayout.of(L, moe["dense_layers"] if moe else None, bool(moe and moe["shared_experts"]), tied, ffn_only)
    formats = checkpoint_formats(path, config, quant, layout)
    entry["weight_format"] = formats.entry
    if formats.kv is not None:
        entry["kv_format"] = formats.kv
    notes.append(f"weight_format read from {formats.read_from}")
    notes += formats.notes
    entry["attention"] = attention
    entry["n_layers"] = q(L, "num_hidden_layers")
    entry["n_q_heads"] = q(n_q, "num_attention_heads")
    entry["n_kv_heads"] = q(n_kv, "num_key_value_heads" if "num_key_value_heads" in keys_used else "num_attention_heads")
    entry["head_dim"] = q(head_dim, head_key)
    entry["hidden_size"] = q(d, "hidden_size")
    entry["intermediate_size"] = q(ff, "intermediate_size" if "intermediate_size" in keys_used else "moe_intermediate_size")
    entry["vocab_size"] = q(V, "vocab_size")
    if r.has("max_position_embeddings"):
        entry["max_context"] = q(r.count("max_position_embeddings"), "max_position_embeddings", "tokens")
    if tied:
        entry["tied_embeddings"] = True
    attention_keys = {"kv_lora_rank": "kv_lora_rank", "qk_rope_head_dim": "qk_rope_head_dim", "window": "sliding_window",
                      "window_layers": "layer_types"}
    for name in list(attention):
        if name in attention_keys:
            attention[name] = q(attention[name], attention_keys[name], "tokens" if name == "window" else "count")
    group_keys = {"n_q_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads", "head_dim": head_key,
                  "span": "sliding_window", "layers": layers_key,
                  "state_elements": "ssm_state_size" if "ssm_state_size" in computed else "linear_value_head_dim"}
    for group in groups:
        for name in list(group):
            if name != "kind":
                group[name] = q(group[name], group_keys[name], "tokens" if name == "span" else "count")
    if moe is not None:
        moe_keys = {"routed_experts": next(k for k in ("num_local_experts", "n_routed_experts", "num_experts") if k in keys_used),
                    "experts_per_token": "num_experts_per_tok",
                    "shared_experts": next((k for k in ("n_shared_experts", "shared_expert_intermediate_size", "shared_intermediate_size") if k in keys_used), "n_shared_experts"),
                    "expert_intermediate_size": "moe_intermediate_size" if "moe_intermediate_size" in keys_used else "intermediate_size",
                    "dense_layers": layers_key if model_type in HYBRID_TYPES else "first_k_dense_replace",
                    "expert_matrices": "mlp_hidden_act"}
        entry["moe"] = {name: q(value, moe_keys[name]) for name, value in moe.items()}
    return ImportedModel(model_id, hf_id, entry, sources, float(params), notes)


def _flow(node: Any) -> str:
    if isinstance(node, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in node.items()) + "}"
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, str):
        return json.dumps(node) if re.search(r"[:#{}\[\],]|^\s|\s$", node) or not node else node
    return repr(node)


def source_lines(imported: ImportedModel) -> list[str]:
    """The ``sources:`` lines of an imported entry, two-space indented."""
    return [f"  {sid}: {json.dumps(text)}" for sid, text in imported.sources.items()]


def entry_lines(imported: ImportedModel, params_nominal: float | None = None) -> list[str]:
    """The ``models:`` lines of an imported entry, two-space indented, with the derived count as a comment."""
    lines = [f"  {imported.model_id}:"]
    for note in imported.notes:
        lines.append(f"    # {note}")
    lines.append(f"    # derived parameter count {imported.params_derived / 1e9:.2f}e9 (kvwall import, from the config)")
    for name, value in imported.entry.items():
        if name == "attention" and value["kind"] == "layers":
            lines.append("    attention:")
            lines.append("      kind: layers")
            lines.append("      groups:")
            lines += [f"        - {_flow(group)}" for group in value["groups"]]
        else:
            lines.append(f"    {name}: {_flow(value)}")
    if params_nominal is None:
        lines.append("    # params_nominal: the model card's count is needed here (kvwall import --params-nominal --params-source)")
    else:
        lines.append(f"    params_nominal: {{value: {params_nominal / 1e9:g}e9, unit: count, source: {imported.model_id}.params-nominal}}")
    return lines


def document_text(models: list[tuple[ImportedModel, float | None, str | None]]) -> str:
    """A complete spec file (format of config/models.yaml) holding imported models, each with its nominal parameter
    count and that count's source where given."""
    sources, entries = [], []
    for imported, params_nominal, nominal_source in models:
        sources += source_lines(imported)
        if params_nominal is not None:
            sources.append(f"  {imported.model_id}.params-nominal: {json.dumps(nominal_source)}")
        entries += entry_lines(imported, params_nominal)
    return "\n".join(["evidence: spec", "sources:", *sources, "models:", *entries, ""])
