"""kvwall's reading of every corpus config against the reference's: the configuration class transformers defines for
its model type (transformers 5.24, a dev dependency: configuration modules only, no torch), with its defaults and the
fields its __post_init__ derives. Per layer: the cache kind, KV heads, head_dim, window or chunk, compression ratio,
index keys and state shape; per model: layers, heads, hidden size, vocabulary, experts.

transformers is the test oracle, not the reader: importing one configuration module takes 3.2-3.9 s on this project's
machine (python -X importtime) against 0.04 s for kvwall.inputs.hf_import, in every pipeline job and command that
reads a config, and four corpus types (mimo, kimi_k2, nemotron-nas, deepseek_ref) it does not define at all.
"""

import json
import warnings
from collections import Counter
from pathlib import Path

import pytest

import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.minimax_m3_vl.configuration_minimax_m3_vl import MiniMaxM3VLTextConfig

from kvwall.cli.hf_config import with_hf_config
from kvwall.inputs.loader import load_catalog

CORPUS = Path(__file__).parent / "fixtures" / "hf-configs"
CONFIGS = [p for p in sorted(CORPUS.glob("*_config.json")) if not p.name.endswith("_hf_quant_config.json")]
#: Corpus model types transformers does not define; read from their own fields, checked against vLLM's model code.
UNDEFINED = {"mimo", "kimi_k2", "nemotron-nas", "deepseek_ref"}
transformers.logging.set_verbosity_error()


def reference_config(document: dict):
    """The language model's configuration object as transformers builds it from the config.json."""
    model_type = document["model_type"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if model_type == "minimax_m3":  # transformers reads these keys as MiniMaxM3VLTextConfig
            return MiniMaxM3VLTextConfig(**{k: v for k, v in document.items() if k != "model_type"})
        return CONFIG_MAPPING[model_type].from_dict(document).get_text_config()


def state_elements(kind: str, c) -> int:
    """A linear-attention or Mamba-2 layer's constant state in the reference's dimensions."""
    if kind == "gated_deltanet":
        conv = 2 * c.linear_num_key_heads * c.linear_key_head_dim + c.linear_num_value_heads * c.linear_value_head_dim
        return (c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim
                + (c.linear_conv_kernel_dim - 1) * conv)
    inner = c.mamba_num_heads * c.mamba_head_dim
    return inner * c.ssm_state_size + (c.conv_kernel - 1) * (inner + 2 * c.n_groups * c.ssm_state_size)


def reference_layers(model_type: str, c) -> Counter:
    """Each layer's cache as (kind, KV heads, head_dim, span, kv tensors, index dim, ratio, state elements)."""
    layers = []
    n = c.num_hidden_layers
    if model_type == "nemotron_h":
        for block in c.layers_block_type:
            if block == "full_attention":
                layers.append(("full", c.num_key_value_heads, c.head_dim, 0, 2, 0, 0, 0))
            elif block == "linear_attention":
                layers.append(("state", 0, 0, 0, 2, 0, 0, state_elements("mamba2", c)))
            else:
                layers.append(("none", 0, 0, 0, 2, 0, 0, 0))
        return Counter(layers)
    if model_type == "deepseek_v4":
        for layer_type in c.layer_types:
            ratio = c.compress_rates.get(layer_type, 0)
            index = c.index_head_dim if layer_type == "compressed_sparse_attention" else 0
            kind = "compressed" if ratio else "window"
            layers.append((kind, c.num_key_value_heads, c.head_dim, c.sliding_window, 1, index, ratio, 0))
        return Counter(layers)
    if hasattr(c, "kv_lora_rank"):
        index = getattr(c, "index_head_dim", 0) if model_type == "glm_moe_dsa" else 0
        return Counter({("latent", c.kv_lora_rank, c.qk_rope_head_dim, 0, 1, index, 0, 0): n})
    types = getattr(c, "layer_types", None) or ["full_attention"] * n
    for i, layer_type in enumerate(types[:n]):
        if model_type == "gemma4":  # per-layer heads and head_dim (full layers: the global ones)
            heads, dim = c.per_layer_config[i].num_key_value_heads, c.per_layer_config[i].head_dim
        else:
            heads, dim = c.num_key_value_heads, getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        if layer_type == "full_attention":
            layers.append(("full", heads, dim, 0, 2, 0, 0, 0))
        elif layer_type == "minimax_m3_sparse":
            layers.append(("full", heads, dim, 0, 2, c.index_head_dim, 0, 0))
        elif layer_type == "sliding_attention":
            layers.append(("window", heads, dim, c.sliding_window, 2, 0, 0, 0))
        elif layer_type == "chunked_attention":
            layers.append(("chunked", heads, dim, c.attention_chunk_size, 2, 0, 0, 0))
        elif layer_type == "linear_attention":
            layers.append(("state", 0, 0, 0, 2, 0, 0, state_elements("gated_deltanet", c)))
        else:
            raise AssertionError(f"layer type {layer_type!r} has no reading here")
    return Counter(layers)


def kvwall_layers(model) -> Counter:
    layers = Counter()
    for g in model.attention.groups:
        if g.kind == "latent":
            key = ("latent", g.kv_lora_rank, g.qk_rope_head_dim, 0, 1, g.index_head_dim, 0, 0)
        elif g.kind in ("state", "none"):
            key = (g.kind, 0, 0, 0, 2, 0, 0, int(g.state_elements))
        else:
            key = (g.kind, g.n_kv_heads, g.head_dim, int(g.span), g.kv_tensors, g.index_head_dim, int(g.compress_ratio), 0)
        layers[key] += g.layers
    return layers


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("config")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name.removesuffix("_config.json"))
def test_kvwall_reads_each_config_as_its_reference_does(catalog, path):
    document = json.loads(path.read_text())
    if document["model_type"] in UNDEFINED:
        assert document["model_type"] not in CONFIG_MAPPING
        return
    reference = reference_config(document)
    text = document.get("text_config", document)
    model_type = text.get("model_type", document["model_type"])
    model_type = {"gemma4_text": "gemma4", "llama4_text": "llama4"}.get(model_type, model_type)
    cat, model_id = with_hf_config(catalog, str(path))
    model = cat.models[model_id]
    assert kvwall_layers(model) == reference_layers(model_type, reference)
    if model_type == "gemma4":
        reference.allow_global_per_layer_attribute_access = True  # its model-wide heads are the sliding layers'
    assert (model.n_layers, model.n_q_heads, model.hidden_size, model.vocab_size) == (
        reference.num_hidden_layers, reference.num_attention_heads, reference.hidden_size, reference.vocab_size)
    routed = next((getattr(reference, k) for k in ("n_routed_experts", "num_local_experts", "num_experts")
                   if getattr(reference, k, None)), None)
    assert (model.moe.routed_experts if model.moe else None) == routed
    if model.moe:
        assert model.moe.experts_per_token == reference.num_experts_per_tok
        assert model.moe.latent_size == (getattr(reference, "moe_latent_size", None) or 0)


def test_every_defined_corpus_type_is_compared():
    types = {json.loads(p.read_text())["model_type"] for p in CONFIGS}
    assert types - UNDEFINED <= set(CONFIG_MAPPING) | {"minimax_m3"}
    assert len(types - UNDEFINED) == 18
