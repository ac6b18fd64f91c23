"""The storage format of each part of a checkpoint, read from its quantization config and exclusion lists
(kvwall.inputs.quantization), against the published configs of tests/fixtures/hf-configs/; and the models.yaml form
of a format per part, refused with one line where it is wrong."""

from pathlib import Path

import pytest

from kvwall.inputs.errors import ImportRefused, SpecError
from kvwall.inputs.hf_import import read_config
from kvwall.inputs.loader import load_user_specs
from kvwall.inputs.quantization import PartLayout, checkpoint_formats

CORPUS = Path(__file__).resolve().parent / "fixtures" / "hf-configs"


def formats(name: str):
    imported = read_config(CORPUS / f"{name}_config.json")
    return imported.entry["weight_format"], imported.entry.get("kv_format"), imported.notes


def test_gpt_oss_modules_to_not_convert_keep_all_but_the_experts_in_bf16():
    # quant_method mxfp4, modules_to_not_convert: lm_head, model.embed_tokens, model.layers.*.mlp.router,
    # model.layers.*.self_attn
    weights, kv, _ = formats("openai--gpt-oss-120b")
    assert weights == {"attention": "bf16", "experts": "mxfp4", "router": "bf16", "embedding": "bf16", "lm_head": "bf16"}
    assert kv is None


def test_kimi_k2_5_compressed_tensors_int4_experts():
    # config_groups: weights num_bits 4, type int, group_size 32, symmetric; ignore: lm_head, the dense MLP
    # (re:.*mlp\.(gate|up|gate_up|down)_proj.*), re:.*self_attn.*, re:.*shared_experts.*; targets Linear: the router
    # (DeepSeek's MoE gate, not a linear layer) and the embedding stay bf16
    weights, kv, notes = formats("moonshotai--Kimi-K2.5")
    assert weights == {"attention": "bf16", "dense_mlp": "bf16", "shared_experts": "bf16", "experts": "int4-g32",
                       "router": "bf16", "embedding": "bf16", "lm_head": "bf16"}
    assert kv is None and "weight_format read from quantization_config.config_groups.weights.num_bits" in notes


def test_fp8_checkpoints_keep_the_embedding_head_and_router():
    for name in ("deepseek-ai--DeepSeek-V3", "moonshotai--Kimi-K2-Instruct"):  # quant_method fp8, nothing excluded
        weights, _, _ = formats(name)
        assert {part: weights[part] for part in ("attention", "experts", "router", "embedding", "lm_head")} == {
            "attention": "fp8", "experts": "fp8", "router": "bf16", "embedding": "bf16", "lm_head": "bf16"}
    # Qwen3-235B-A22B-FP8 names the gates and lm_head (and the norms) in modules_to_not_convert
    assert formats("Qwen--Qwen3-235B-A22B-FP8")[0] == {"attention": "fp8", "experts": "fp8", "router": "bf16",
                                                       "embedding": "bf16", "lm_head": "bf16"}


def test_modelopt_checkpoints_and_their_kv_format():
    # nvidia/Llama-3.1-70B-Instruct-FP8: hf_quant_config.json quant_algo FP8, kv_cache_quant_algo FP8, lm_head excluded
    weights, kv, _ = formats("nvidia--Llama-3.1-70B-Instruct-FP8")
    assert weights == {"attention": "fp8", "dense_mlp": "fp8", "embedding": "bf16", "lm_head": "bf16"} and kv == "fp8"
    # GLM-5.1-NVFP4: layers 0, 1 and 2 (its dense layers) whole, the shared experts and self_attn excluded; the
    # multi-token-prediction layer 78 is past the 78 layers and prices nothing
    weights, kv, _ = formats("nvidia--GLM-5.1-NVFP4")
    assert weights == {"attention": "bf16", "dense_mlp": "bf16", "shared_experts": "bf16", "experts": "fp4",
                       "router": "bf16", "embedding": "bf16", "lm_head": "bf16"} and kv == "fp8"
    # GLM-5-NVFP4 excludes every attention projection but quantizes its dense layers and shared experts
    weights, _, _ = formats("nvidia--GLM-5-NVFP4")
    assert (weights["attention"], weights["dense_mlp"], weights["shared_experts"]) == ("bf16", "fp4", "fp4")


def test_a_part_named_only_in_part_keeps_its_quantized_format_and_says_so():
    # DeepSeek-V3.1-NVFP4 excludes q_a, q_b, kv_a and kv_b of every layer but not o_proj, the larger projection
    weights, _, notes = formats("nvidia--DeepSeek-V3.1-NVFP4")
    assert weights["attention"] == "fp4"
    assert any("names the attention only in part (some of its modules)" in note and "lower bound" in note for note in notes)


def test_mixed_precision_reads_each_modules_algorithm():
    # Qwen3.6-27B-NVFP4: quant_algo MIXED_PRECISION; self_attn and linear_attn FP8, the MLP and lm_head W4A16_NVFP4
    weights, kv, notes = formats("nvidia--Qwen3.6-27B-NVFP4")
    assert weights == {"attention": "fp8", "dense_mlp": "fp4", "embedding": "bf16", "lm_head": "fp4"} and kv == "fp8"
    assert not [note for note in notes if "only in part" in note]  # mtp.* names no part of the model


def test_unknown_quantization_is_refused_with_the_key():
    layout = PartLayout.of(32, None, False, False)
    config = {"quantization_config": {"quant_method": "awq", "bits": 4}}
    with pytest.raises(ImportRefused, match=r"^c.json: quantization_config.quant_method: quant_method 'awq' is not read$"):
        checkpoint_formats("c.json", config, None, layout)
    config = {"quantization_config": {"config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 64}}}}}
    with pytest.raises(ImportRefused, match="group 64 are not a format kvwall knows"):
        checkpoint_formats("c.json", config, None, layout)
    with pytest.raises(ImportRefused, match="quantization algorithm 'W8A8_SQ' is not read"):
        checkpoint_formats("c.json", {}, {"quantization": {"quant_algo": "W8A8_SQ"}}, layout)


MODEL = """evidence: spec
sources: {mine: "my notes"}
models:
  tiny:
    name: Tiny
    source: mine
    attention: {kind: full}
    n_layers: {value: 2, unit: count}
    n_q_heads: {value: 4, unit: count}
    n_kv_heads: {value: 2, unit: count}
    head_dim: {value: 64, unit: count}
    hidden_size: {value: 256, unit: count}
    intermediate_size: {value: 512, unit: count}
    vocab_size: {value: 1000, unit: count}
    params_nominal: {value: 2.0e6, unit: count}
"""


@pytest.mark.parametrize("weight_format, key, reason", [
    ("{attention: fp8, dense_mlp: fp8, embedding: bf16}", "models.tiny.weight_format",
     "no format for the LM head (give every part of attention, dense_mlp, embedding, lm_head)"),
    ("{attention: fp8, dense_mlp: fp8, embedding: bf16, lm_head: bf16, experts: fp4}", "models.tiny.weight_format.experts",
     "Tiny has no experts (its parts: attention, dense_mlp, embedding, lm_head)"),
    ("{attention: fp7, dense_mlp: fp8, embedding: bf16, lm_head: bf16}", "models.tiny.weight_format.attention",
     "storage format 'fp7' is not understood"),
    ("fp9", "models.tiny.weight_format", "storage format 'fp9' is not understood"),
])
def test_a_wrong_format_per_part_is_refused_with_file_key_and_reason(catalog, tmp_path, weight_format, key, reason):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(MODEL + f"    weight_format: {weight_format}\n")
    with pytest.raises(SpecError) as error:
        load_user_specs(spec, catalog)
    assert (error.value.file, error.value.key) == (str(spec), key) and error.value.reason.startswith(reason)


def test_a_format_per_part_loads(catalog, tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(MODEL + "    weight_format: {attention: fp8, dense_mlp: fp8, embedding: bf16, lm_head: bf16}\n"
                    "    kv_format: fp8\n")
    model = load_user_specs(spec, catalog).models["tiny"]
    assert str(model.weight_format) == "fp8 (bf16: embedding, LM head)" and model.kv_format == "fp8"
