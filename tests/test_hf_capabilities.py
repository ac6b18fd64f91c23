"""Layouts the shared corpus does not hold, each from a small config written here with the fields its family uses and
pinned to bytes per token (and parameters) computed by hand: an MLA model with a sparse-attention indexer, a dense
Mamba hybrid, sliding layers with their own heads and head sizes, Kimi Delta Attention beside MLA, a dense MLP beside
the experts; and the bad inputs of those fields, each refused in one line naming the file and the key."""

from pathlib import Path

import pytest
from hf_config_files import write

from kvwall.cli.hf_config import with_hf_config
from kvwall.inputs.hf_import import ImportRefused, read_config
from kvwall.inputs.index_storage import ENGINE_INDEX_STORAGE, INDEX_STORAGE
from kvwall.model.footprint import kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.model.params import weight_part_params
from kvwall.model.roofline import active_params_per_token, experts_touched_fraction
from kvwall.model.sharding import device_cache

BF16, FP8 = 2.0, 1.0
FP32_STATE = 4.0  # config/assumptions.yaml state_dtype
COMMON = {"vocab_size": 1000, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6, "max_position_embeddings": 131072}
#: DeepSeek-V3.2's attention: 61 MLA layers, a latent of 512 + 64, a lightning indexer of 64 heads of 128.
DSA = {**COMMON, "model_type": "deepseek_v32", "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
       "num_key_value_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
       "v_head_dim": 128, "q_lora_rank": 1536, "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048,
       "intermediate_size": 18432, "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
       "n_shared_experts": 1, "first_k_dense_replace": 3}
#: A Nemotron-H dense hybrid: 3 Mamba-2, 1 attention and 4 relu2 MLP blocks, no experts.
DENSE_HYBRID = {**COMMON, "model_type": "nemotron_h", "hybrid_override_pattern": "M-M-*-M-", "hidden_size": 1024,
                "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "mamba_num_heads": 16,
                "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 2, "conv_kernel": 4,
                "mlp_hidden_act": "relu2", "intermediate_size": 4096}
#: MiMo-V2-style: 2 full layers of 4 KV heads, 6 sliding layers of 8, keys of 192 and values of 128 in both.
OWN_WINDOW_HEADS = {**COMMON, "model_type": "mimo_v2_flash", "num_hidden_layers": 8, "hidden_size": 4096,
                    "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192, "v_head_dim": 128,
                    "swa_num_attention_heads": 64, "swa_num_key_value_heads": 8, "swa_head_dim": 192,
                    "swa_v_head_dim": 128, "sliding_window": 128, "hybrid_layer_pattern": [0, 1, 1, 1, 0, 1, 1, 1],
                    "intermediate_size": 16384}
#: Kimi-Linear-style: 6 KDA layers of 32 heads of 128 with a 4-wide short convolution, 2 MLA layers, MoE.
DELTA = {**COMMON, "model_type": "kimi_linear", "num_hidden_layers": 8, "hidden_size": 2304, "num_attention_heads": 32,
         "num_key_value_heads": 32, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
         "v_head_dim": 128, "mla_use_nope": True, "intermediate_size": 9216, "num_experts": 64,
         "num_experts_per_token": 8, "moe_intermediate_size": 1024, "num_shared_experts": 1, "first_k_dense_replace": 1,
         "linear_attn_config": {"kda_layers": [1, 2, 3, 5, 6, 7], "full_attn_layers": [4, 8], "num_heads": 32,
                                "head_dim": 128, "short_conv_kernel_size": 4}}
#: Qwen3-Next-style: Gated DeltaNet layers between full ones by full_attention_interval, no layer_types.
INTERVAL = {**COMMON, "model_type": "qwen3_next", "num_hidden_layers": 8, "hidden_size": 2048, "num_attention_heads": 16,
            "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4, "linear_num_key_heads": 16,
            "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "intermediate_size": 5120}
#: Snowflake-Arctic-style: 16 experts top-2 in every layer, and a dense MLP beside them (use_residual).
ARCTIC = {**COMMON, "model_type": "arctic", "num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8,
          "num_key_value_heads": 8, "intermediate_size": 2048, "num_local_experts": 16, "num_experts_per_tok": 2,
          "moe_layer_frequency": 1, "use_residual": True, "parallel_attn_mlp_res": True}


def load(catalog, tmp_path, config):
    cat, model_id = with_hf_config(catalog, str(write(tmp_path, config)))
    return cat.models[model_id]


def test_every_engine_stores_an_index_key_in_fp8_with_an_fp32_scale_per_128():
    assert {engine: rule.key_bytes(128) for engine, rule in ENGINE_INDEX_STORAGE.items()} == {
        "vllm": 132, "sglang": 132, "trtllm": 132}
    assert INDEX_STORAGE.key_bytes(256) == 256 + 2 * 4


def test_an_indexer_cache_is_priced_in_its_engines_format_whatever_the_kv_format(catalog, tmp_path):
    # 61 x 576 x 2 B = 70,272 B of latent at bf16, and 61 x (128 + 4) = 8,052 B of index keys: 78,324 B/token;
    # at fp8 KV the latent halves, the index keys do not: 35,136 + 8,052 = 43,188
    m = load(catalog, tmp_path, DSA)
    assert kv_bytes_per_token(m, BF16) == 70_272 + 8_052 == 78_324
    assert kv_bytes_per_token(m, FP8) == 35_136 + 8_052 == 43_188
    assert kv_bytes(m, 1000.0, BF16) == pytest.approx(78_324_000, rel=1e-12)
    assert device_cache(m, 8).attention == m.attention  # latent and index keys whole on every TP rank
    # the same fields under a name kvwall does not know: read as MLA by DeepseekV3Config's names, one warning
    unnamed = read_config(write(tmp_path, {**DSA, "model_type": "acme_dsa"}, "acme--dsa"))
    assert unnamed.convention == "mla by DeepseekV3Config's field names" and len(unnamed.warnings) == 1
    assert unnamed.entry["attention"]["index_head_dim"]["value"] == 128


def test_a_dense_mamba_hybrid(catalog, tmp_path):
    # 1 attention layer: 2 x 2 KV heads x 128 x 2 B = 1,024 B/token; 3 Mamba-2 layers of 16 x 64 x 128 +
    # (4 - 1) x (16 x 64 + 2 x 2 x 128) = 135,680 elements, x 4 B = 1,628,160 B per sequence
    m = load(catalog, tmp_path, DENSE_HYBRID)
    assert kv_bytes_per_token(m, BF16) == 1_024 and m.moe is None
    assert m.attention.state_bytes == 3 * (16 * 64 * 128 + 3 * (16 * 64 + 2 * 2 * 128)) * FP32_STATE == 1_628_160
    # TP 4: 4 of the 16 Mamba heads per rank, a quarter of the state; the 2 KV heads one per rank up to TP 2
    assert device_cache(m, 4).attention.state_bytes == 1_628_160 / 4
    # weights: attention 1024 x 128 x (8 + 4) + 8 x 128 x 1024; Mamba 1024 (2 x 1024 + 2 x 2 x 128 + 16) + 1536 x 4
    # + 1024 x 1024 each; 4 relu2 MLPs 2 x 1024 x 4096; embedding and head 2 x 1000 x 1024
    imported = read_config(write(tmp_path, DENSE_HYBRID))
    assert imported.params_derived == (1024 * 128 * 12 + 8 * 128 * 1024 + 3 * (1024 * 2576 + 1536 * 4 + 1024 * 1024)
                                       + 4 * 2 * 1024 * 4096 + 2 * 1000 * 1024) == 49_301_504


def test_sliding_layers_with_their_own_heads_and_head_sizes(catalog, tmp_path):
    # full: 2 layers x 4 KV heads x (192 + 128) x 2 B = 5,120 B; sliding: 6 x 8 x 320 x 2 = 30,720 B within the
    # 128-token window, nothing beyond it
    imported = read_config(write(tmp_path, OWN_WINDOW_HEADS))
    assert imported.convention == "gqa by LlamaConfig's field names" and len(imported.warnings) == 1
    m = load(catalog, tmp_path, OWN_WINDOW_HEADS)
    assert [(g.kind, g.layers, g.n_kv_heads, g.head_dim) for g in m.attention.groups] == [
        ("full", 2, 4, 160), ("window", 6, 8, 160)]
    assert kv_bytes_per_token(m, BF16) == 5_120 + 30_720 == 35_840
    assert kv_bytes_per_token_beyond_window(m, BF16) == 5_120
    assert kv_bytes(m, 10_000.0, BF16) == pytest.approx(5_120 * 10_000 + 30_720 * 128, rel=1e-12)
    # TP 8: the full layers' 4 heads one per rank, the sliding layers' 8 one per rank
    assert kv_bytes_per_token(device_cache(m, 8), BF16) == 2 * 1 * 320 * 2 + 6 * 1 * 320 * 2 == 5_120
    # weights per layer: q 4096 x 64 x 192, k n_kv x 192 and v n_kv x 128 from 4096, o 64 x 128 x 4096
    attention = 2 * 4096 * (64 * 192 + 4 * 320 + 64 * 128) + 6 * 4096 * (64 * 192 + 8 * 320 + 64 * 128)
    assert imported.params_derived == attention + 8 * 3 * 4096 * 16384 + 2 * 1000 * 4096


def test_kimi_delta_attention_beside_mla(catalog, tmp_path):
    # 2 MLA layers x 576 x 2 B = 2,304 B/token; 6 KDA layers of 32 x 128 x 128 + 3 x (4 - 1) x 32 x 128
    # = 561,152 elements, x 4 B = 13,467,648 B per sequence
    m = load(catalog, tmp_path, DELTA)
    assert kv_bytes_per_token(m, BF16) == 2_304
    assert m.attention.state_bytes == 6 * (32 * 128 * 128 + 9 * 32 * 128) * FP32_STATE == 13_467_648
    assert device_cache(m, 4).attention.state_bytes == 13_467_648 / 4  # split by its 32 heads
    assert kv_bytes_per_token(device_cache(m, 4), BF16) == 2_304  # the latent whole on every rank
    assert m.moe.routed_experts == 64 and m.moe.experts_per_token == 8 and m.moe.dense_layers == 1
    # weights: MLA 2304 x 32 x 192 (no query rank) + 2304 x 576 + 512 x 32 x 256 + 32 x 128 x 2304 per layer; KDA
    # q, k, v, o 4 x 2304 x 4096, convolutions 3 x 4096 x 4, gates 2 (2304 x 128 + 128 x 4096) and 2304 x 32; 7 MoE
    # layers of 64 x 3 x 2304 x 1024, a router 2304 x 64 and a shared expert 3 x 2304 x 1024; one dense layer
    mla = 2304 * 32 * 192 + 2304 * 576 + 512 * 32 * 256 + 32 * 128 * 2304
    kda = 4 * 2304 * 4096 + 3 * 4096 * 4 + 2 * (2304 * 128 + 128 * 4096) + 2304 * 32
    moe = 7 * (64 * 3 * 2304 * 1024 + 2304 * 64 + 3 * 2304 * 1024)
    assert read_config(write(tmp_path, DELTA)).params_derived == (2 * mla + 6 * kda + moe + 3 * 2304 * 9216
                                                                 + 2 * 1000 * 2304)


def test_linear_attention_layers_by_their_interval(catalog, tmp_path):
    # layers 4 and 8 full: 2 x 2 x 2 KV heads x 256 x 2 B = 4,096 B/token; 6 Gated DeltaNet layers of 32 x 128 x 128
    # + (4 - 1) x (2 x 16 x 128 + 32 x 128) = 548,864 elements, x 4 B = 13,172,736 B per sequence
    m = load(catalog, tmp_path, INTERVAL)
    assert [(g.kind, g.layers) for g in m.attention.groups] == [("full", 2), ("state", 6)]
    assert kv_bytes_per_token(m, BF16) == 4_096
    assert m.attention.state_bytes == 6 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * FP32_STATE == 13_172_736


def test_an_moe_block_beside_the_dense_mlp(catalog, tmp_path):
    # 4 layers x 2 x 8 heads x 128 x 2 B = 16,384 B/token; each layer: attention 1024 x 128 x 24 + 8 x 128 x 1024,
    # 16 experts of 3 x 1024 x 2048 and a router of 1024 x 16, and the dense MLP 3 x 1024 x 2048 beside them
    m = load(catalog, tmp_path, ARCTIC)
    assert kv_bytes_per_token(m, BF16) == 16_384
    routed = 4 * 16 * 3 * 1024 * 2048
    total = 4 * (1024 * 128 * 24 + 8 * 128 * 1024 + 1024 * 16 + 3 * 1024 * 2048) + routed + 2 * 1000 * 1024
    assert read_config(write(tmp_path, ARCTIC)).params_derived == total == 446_709_760
    assert m.params_nominal == pytest.approx(total, rel=1e-6)  # the entry holds the count to six digits
    assert (m.moe.dense_beside, m.moe.dense_layers, m.dense_mlp_layers) == (4, 0, 4)
    assert weight_part_params(m)["dense_mlp"] == 4 * 3 * 1024 * 2048
    # a token reads the dense MLP and 2 of 16 experts: P - routed + routed x 2 / 16
    assert total - routed + routed * 2 / 16 == 94_388_224
    assert active_params_per_token(m) == pytest.approx(94_388_224, rel=1e-5)
    assert experts_touched_fraction(m, 1.0) == pytest.approx(2 / 16, rel=1e-12)


@pytest.mark.parametrize("config, change, key, reason", [
    (OWN_WINDOW_HEADS, {"hybrid_layer_pattern": [0, 1, 1]}, "hybrid_layer_pattern",
     "must list one entry per layer (8), lists 3"),
    (OWN_WINDOW_HEADS, {"swa_num_key_value_heads": 6}, "swa_num_key_value_heads",
     "6 does not divide the sliding layers' query heads 64"),
    (ARCTIC, {"num_key_value_heads": 3}, "num_key_value_heads", "3 does not divide num_attention_heads 8"),
    (DSA, {"index_head_dim": 100}, "index_head_dim", "100 is not a multiple of 128"),
    (DENSE_HYBRID, {"ssm_state_size": -1}, "ssm_state_size", "must be an integer from 1 to 1e15 (got -1)"),
    (DENSE_HYBRID, {"ssm_state_size": None}, "ssm_state_size", "missing: an integer >= 1 is needed"),
    (DELTA, {"linear_attn_config": {**DELTA["linear_attn_config"], "short_conv_kernel_size": -4}},
     "linear_attn_config.short_conv_kernel_size", "must be an integer from 1 to 1e15 (got -4)"),
    (DELTA, {"linear_attn_config": {**DELTA["linear_attn_config"], "kda_layers": [1, 2, 3]}},
     "linear_attn_config.kda_layers", "with full_attn_layers must list every layer 1 to 8 once"),
    (ARCTIC, {"quantization_config": {"quant_method": "awq_marlin"}}, "quantization_config.quant_method",
     "quant_method 'awq_marlin' is not read"),
    (DENSE_HYBRID, {"hybrid_override_pattern": "M-E-*-M-"}, "hybrid_override_pattern",
     "1 MoE blocks, but no routed experts"),
])
def test_bad_input_is_refused_in_one_line_naming_the_file_and_the_key(tmp_path, config, change, key, reason):
    path = write(tmp_path, {**config, **change})
    with pytest.raises(ImportRefused) as err:
        read_config(path)
    assert err.value.file == str(path) and err.value.key == key and reason in err.value.reason
    assert "\n" not in str(err.value)
