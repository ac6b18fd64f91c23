"""The architecture families of 2026 as `kvwall import` reads them from the corpus (tests/fixtures/hf-configs): per
family the cache groups, bytes per token and parameters computed by hand from the config's fields; the bugs of the
earlier reader, each with its case; and a field of the wrong type or size refused in one line naming it."""

import json
import re
from pathlib import Path

import pytest

from kvwall.cli.hf_config import with_hf_config
from kvwall.cli.main import main
from kvwall.inputs.errors import ImportRefused
from kvwall.inputs.hf_import import LONGEST_ID, read_config
from kvwall.inputs.loader import load_catalog
from kvwall.model.footprint import kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window

CORPUS = Path(__file__).parent / "fixtures" / "hf-configs"
BF16 = 2.0


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("config")


def model(catalog, name):
    cat, model_id = with_hf_config(catalog, str(CORPUS / f"{name}_config.json"))
    return cat.models[model_id]


def groups(m):
    return [(g.kind, g.layers, g.n_kv_heads, g.head_dim, g.span, g.kv_tensors, g.index_head_dim, g.compress_ratio)
            for g in m.attention.groups]


def test_the_whole_corpus_imports(catalog):
    configs = [p for p in sorted(CORPUS.glob("*_config.json")) if not p.name.endswith("_hf_quant_config.json")]
    assert len(configs) == 70
    for path in configs:
        assert with_hf_config(catalog, str(path))[1]


def test_gemma_4_window_and_global_layers(catalog):
    # Gemma-4-31B: 50 sliding layers (16 KV heads x 256, window 1,024) and 10 full ones (num_global_key_value_heads 4 x
    # global_head_dim 512); attention_k_eq_v drops the value projection, the cache still holds a key and a value.
    m = model(catalog, "nvidia--Gemma-4-31B-IT-NVFP4")
    assert groups(m) == [("full", 10, 4, 512, 0.0, 2, 0, 0.0), ("window", 50, 16, 256, 1024.0, 2, 0, 0.0)]
    # below the window 2 (50 x 16 x 256 + 10 x 4 x 512) x 2 B = 901,120 B/token; beyond it 2 x 10 x 4 x 512 x 2 = 81,920
    assert kv_bytes_per_token(m, BF16) == 901_120 and kv_bytes_per_token_beyond_window(m, BF16) == 81_920
    assert float(kv_bytes(m, 8192, BF16)) == 81_920 * 8192 + (901_120 - 81_920) * 1024
    # 50 (5376 x 256 x 64 + 32 x 256 x 5376) + 10 (5376 x 512 x (32 + 4) + 32 x 512 x 5376) + 60 x 3 x 5376 x 21504
    # + 262144 x 5376 (tied) = 30,696,013,824
    assert read_config(CORPUS / "nvidia--Gemma-4-31B-IT-NVFP4_config.json").params_derived == 30_696_013_824


def test_llama_4_chunked_layers_follow_the_reference_pattern(catalog):
    # Llama-4-Scout lists no no_rope_layers: Llama4TextConfig makes every 4th layer global (12) and the rest chunked
    # at attention_chunk_size 8,192 (36); 8 KV heads x 128 each.
    m = model(catalog, "meta-llama--Llama-4-Scout-17B-16E-Instruct")
    assert groups(m) == [("full", 12, 8, 128, 0.0, 2, 0, 0.0), ("chunked", 36, 8, 128, 8192.0, 2, 0, 0.0)]
    assert kv_bytes_per_token(m, BF16) == 2 * 48 * 8 * 128 * 2 and kv_bytes_per_token_beyond_window(m, BF16) == 2 * 12 * 8 * 128 * 2
    # 48 (5120 x 128 x 56 + 40 x 128 x 5120) + 48 (16 x 3 x 5120 x 8192 + 5120 x 16 + 3 x 5120 x 8192 shared)
    # + 2 x 202048 x 5120 = 107,769,364,480
    imported = read_config(CORPUS / "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json")
    assert imported.params_derived == 107_769_364_480
    assert imported.entry["moe"]["shared_experts"]["value"] == 1


def test_deepseek_v4_compressed_layers(catalog):
    # V4-Flash: compress_ratios 0, 0, then 4 and 128 alternating (its 44th entry, the MTP layer's, dropped):
    # 2 window, 21 CSA, 20 HCA layers, one 512-wide head cached as key and value over 128 tokens.
    m = model(catalog, "deepseek-ai--DeepSeek-V4-Flash")
    assert groups(m) == [("window", 2, 1, 512, 128.0, 1, 0, 0.0), ("compressed", 21, 1, 512, 128.0, 1, 128, 4.0),
                         ("compressed", 20, 1, 512, 128.0, 1, 0, 128.0)]
    # beyond the window: 21 x (512 + 128) / 4 + 20 x 512 / 128 = 3,440 elements, 6,880 B/token
    assert kv_bytes_per_token_beyond_window(m, BF16) == pytest.approx(6_880, rel=1e-15)
    d, nq, dh, q, o = 4096, 64, 512, 1024, 1024
    attention = 43 * (d * q + q * nq * dh + d * dh + nq * dh * o + 8 * o * d)
    csa = 21 * (2 * d * 2 * dh + 2 * d * 2 * 128 + q * 64 * 128 + d * 64)
    hca = 20 * 2 * d * dh
    moe = 43 * (256 * 3 * d * 2048 + d * 256 + 3 * d * 2048)
    params = read_config(CORPUS / "deepseek-ai--DeepSeek-V4-Flash_config.json").params_derived
    assert params == attention + csa + hca + moe + 2 * 129280 * d
    assert abs(params / 284e9 - 1) < 0.01  # model card: 284B total
    # the SGLang checkpoint (model_type deepseek_ref) is read alike
    assert groups(model(catalog, "sgl-project--DeepSeek-V4-Flash-FP8")) == groups(m)


def test_deepseek_v4_default_pattern_when_the_config_lists_none(tmp_path):
    # DeepseekV4Config without layer_types or compress_ratios: 2 HCA layers, then HCA and CSA alternating over the
    # other 59 of V4-Pro's 61 (CSA at odd positions): 29 CSA, 2 + 30 HCA
    config = json.loads((CORPUS / "deepseek-ai--DeepSeek-V4-Pro_config.json").read_text())
    del config["compress_ratios"]
    path = tmp_path / "org--v4_config.json"
    path.write_text(json.dumps(config))
    attention = read_config(path).entry["attention"]
    assert [(g["kind"], g["layers"]["value"], g.get("compress_ratio", {}).get("value")) for g in attention["groups"]] == [
        ("compressed", 29, 4), ("compressed", 32, 128)]
    assert attention["groups"][1]["compress_ratio"]["source"].endswith("compress-rates")


def test_minimax_m3_sparse_layers_cache_an_index_key(catalog):
    # 3 full layers, 57 sparse ones whose indexer caches one 128-wide key per token: 2 x 60 x 4 x 128 + 57 x 128
    # = 68,736 elements, 137,472 B/token
    m = model(catalog, "MiniMaxAI--MiniMax-M3")
    assert groups(m) == [("full", 3, 4, 128, 0.0, 2, 0, 0.0), ("full", 57, 4, 128, 0.0, 2, 128, 0.0)]
    assert kv_bytes_per_token(m, BF16) == 137_472
    # 60 (6144 x 128 x 72 + 64 x 128 x 6144) + 57 (6144 x 4 x 128 + 6144 x 128) indexer
    # + 57 (128 x 3 x 6144 x 3072 + 6144 x 128 + 3 x 6144 x 3072) + 3 x 3 x 6144 x 12288 dense + 2 x 200064 x 6144
    assert read_config(CORPUS / "MiniMaxAI--MiniMax-M3_config.json").params_derived == 426_173_792_256
    assert m.moe.dense_layers == 3  # moe_layer_freq: 0, 0, 0, then 1


def test_nemotron_nas_blocks(catalog):
    # block_configs: 49 attention blocks of 64 / 8 = 8 KV heads, 31 no-op ones; 2 x 49 x 8 x 128 x 2 B = 200,704 B/token
    m = model(catalog, "nvidia--Llama-3_3-Nemotron-Super-49B-v1")
    assert groups(m)[0] == ("full", 49, 8, 128, 0.0, 2, 0, 0.0) and (groups(m)[1][:2]) == ("none", 31)
    assert kv_bytes_per_token(m, BF16) == 200_704
    config = json.loads((CORPUS / "nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json").read_text())
    d = 8192

    def width(mult):  # vLLM's nemotron_nas: int(2 mult d / 3) rounded up to a multiple of 256
        return -(-int(2 * mult * d / 3) // 256) * 256

    attention = 49 * (d * 128 * (64 + 16) + 64 * 128 * d)
    ffn = sum(3 * d * width(b["ffn"]["ffn_mult"]) for b in config["block_configs"])
    assert width(5.25) == 28672 and width(1.3125) == 7168  # the 48 widest blocks, Llama-3-70B's width
    assert read_config(CORPUS / "nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json").params_derived == (
        attention + ffn + 2 * 128256 * d)


def test_nemotron_3_latent_experts(catalog):
    # Nemotron-3-Super: 512 relu2 experts of 2,688 working in moe_latent_size 1,024; 40 MoE layers
    m = model(catalog, "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    assert (m.moe.latent_size, m.moe.routed_experts, m.moe.expert_matrices) == (1024, 512, 2)
    from kvwall.model.params import routed_expert_params

    assert routed_expert_params(m) == 40 * 512 * 2 * 1024 * 2688
    d = 4096
    attention = 8 * (d * 128 * (32 + 4) + 32 * 128 * d)
    mamba = 40 * (d * (2 * 8192 + 2 * 8 * 128 + 128) + (8192 + 2 * 8 * 128) * 4 + 8192 * d)
    moe = 40 * (512 * 2 * 1024 * 2688 + d * 512 + 2 * d * 5376 + 2 * d * 1024)
    params = read_config(CORPUS / "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8_config.json").params_derived
    assert params == attention + mamba + moe + 2 * 131072 * d
    assert abs(params / 120e9 - 1) < 0.01  # model card: 120B total
    # the state is split over the 128 Mamba heads under TP
    assert [g.state_heads for g in m.attention.groups if g.kind == "state"] == [128]


def test_nemotron_3_ultra_counts_its_layers_from_the_pattern(catalog):
    # no num_hidden_layers: NemotronHConfig takes the length of layers_block_type, 108
    m = model(catalog, "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    assert m.n_layers == 108 and [(g.kind, g.layers) for g in m.attention.groups] == [("full", 12), ("state", 48), ("none", 48)]
    imported = read_config(CORPUS / "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16_config.json")
    assert imported.entry["n_layers"]["source"].endswith("layers-block-type")
    assert abs(imported.params_derived / 550e9 - 1) < 0.01  # the name's 550B


def test_a_layer_count_that_contradicts_the_pattern_is_refused(tmp_path):
    config = json.loads((CORPUS / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json").read_text())
    config["num_hidden_layers"] = 50
    path = tmp_path / "org--nano_config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ImportRefused, match="num_hidden_layers: 50, but hybrid_override_pattern has 52 blocks"):
        read_config(path)


@pytest.mark.parametrize("name", ["nvidia--Qwen3.5-122B-A10B-NVFP4", "nvidia--Qwen3.5-397B-A17B-NVFP4",
                                  "nvidia--Qwen3.6-35B-A3B-NVFP4", "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"])
def test_long_names_give_safe_source_ids(catalog, name):
    # 'qwen3.5-122b-a10b-nvfp4.text-config.shared-expert-intermediate-size' is 68 characters: the id's model part is
    # cut and ends in six hex digits of its hash, the key part kept
    imported = read_config(CORPUS / f"{name}_config.json")
    assert all(len(sid) <= LONGEST_ID for sid in imported.sources)
    assert model(catalog, name).params_nominal == pytest.approx(imported.params_derived, rel=1e-5)
    cut = [sid for sid in imported.sources if sid != imported.model_id and not sid.startswith(imported.model_id + ".")]
    assert cut and all(re.search(r"-[0-9a-f]{6}\.(text-config\.)?[a-z-]+\Z", sid) for sid in cut)


def test_a_null_head_dim_is_the_reference_default(tmp_path):
    # Llama: head_dim null is hidden / heads (LlamaConfig), 8192 / 64 = 128; Qwen3: its class default, 128
    for name, expected, note in (("meta-llama--Meta-Llama-3.1-70B", 128, "hidden_size / num_attention_heads"),
                                 ("Qwen--Qwen3-8B", 128, "default of the qwen3 configuration class")):
        config = json.loads((CORPUS / f"{name}_config.json").read_text())
        config["head_dim"] = None
        path = tmp_path / f"{name}_config.json"
        path.write_text(json.dumps(config))
        imported = read_config(path)
        assert imported.entry["head_dim"]["value"] == expected and any(note in n for n in imported.notes)


def test_a_mixed_precision_checkpoint_is_read_part_by_part(catalog):
    # Qwen3.6-27B-NVFP4: quant_algo MIXED_PRECISION in hf_quant_config.json; of its 401 quantized_layers, the attention
    # projections are FP8 and the MLPs and lm_head W4A16_NVFP4; the embedding is not listed (bf16, torch_dtype)
    imported = read_config(CORPUS / "nvidia--Qwen3.6-27B-NVFP4_config.json")
    assert imported.entry["weight_format"] == {"attention": "fp8", "dense_mlp": "fp4", "embedding": "bf16", "lm_head": "fp4"}
    assert any("quantization.quant_algo" in n for n in imported.notes)
    assert model(catalog, "nvidia--Qwen3.6-27B-NVFP4").weight_format.label == "fp4 (fp8: attention; bf16: embedding)"


def broken(tmp_path, name, **changes):
    config = json.loads((CORPUS / f"{name}_config.json").read_text())
    for key, value in changes.items():
        target = config["text_config"] if "text_config" in config and key in config["text_config"] else config
        target[key] = value
    path = tmp_path / f"{name}_config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("name, changes, message", [
    ("meta-llama--Meta-Llama-3.1-8B", {"num_hidden_layers": [32]}, "num_hidden_layers: must be an integer >= 1 (got list [32])"),
    ("meta-llama--Meta-Llama-3.1-8B", {"hidden_size": True}, "hidden_size: must be an integer >= 1 (got bool True)"),
    ("meta-llama--Meta-Llama-3.1-8B", {"vocab_size": 10**200}, "vocab_size: must be an integer from 1 to 1e15"),
    ("meta-llama--Meta-Llama-3.1-8B", {"num_key_value_heads": 0}, "num_key_value_heads: must be an integer from 1"),
    ("meta-llama--Meta-Llama-3.1-8B", {"model_type": ["llama"]}, "model_type: must name the architecture"),
    ("openai--gpt-oss-120b", {"layer_types": [{"type": "full"}] * 36}, "layer_types[0]: must be a name (got dict"),
    ("openai--gpt-oss-120b", {"layer_types": ["full_attention"] * 35}, "layer_types: must list one entry per layer (36), lists 35"),
    ("openai--gpt-oss-120b", {"layer_types": ["global"] * 36}, "layer_types: layer type 'global' is not understood"),
    ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"hybrid_override_pattern": 52}, "hybrid_override_pattern: must be a string"),
    ("nvidia--Llama-3_3-Nemotron-Super-49B-v1", {"block_configs": "uniform"}, "block_configs: must be a list (got str"),
    ("deepseek-ai--DeepSeek-V4-Flash", {"compress_ratios": [0, 0] + [8] * 42}, "compress_ratios: ratio 8 is neither 0 nor"),
    ("Qwen--Qwen3-8B", {"tie_word_embeddings": "yes"}, "tie_word_embeddings: must be true or false"),
])
def test_a_field_of_the_wrong_type_or_size_is_refused_in_one_line(tmp_path, capsys, name, changes, message):
    path = broken(tmp_path, name, **changes)
    assert main(["import", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"kvwall: {path}: ") and message in err


def test_a_block_whose_heads_do_not_divide_is_refused(tmp_path):
    config = json.loads((CORPUS / "nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json").read_text())
    config["block_configs"][0]["attention"]["n_heads_in_group"] = 7
    path = tmp_path / "org--nas_config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ImportRefused) as err:
        read_config(path)
    assert (err.value.key, err.value.reason) == ("block_configs[0].attention.n_heads_in_group",
                                                 "7 does not divide num_attention_heads 64")
