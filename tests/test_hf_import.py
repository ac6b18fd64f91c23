"""`kvwall import` over the corpus of published configs (tests/fixtures/hf-configs): each file imports or is refused
with a named reason; per-token bytes, constant state and derived parameter counts against values computed by hand
from the configs."""

import json
from pathlib import Path

import pytest

from kvwall.cli.hf_config import with_hf_config
from kvwall.cli.main import main
from kvwall.inputs.errors import ImportRefused
from kvwall.inputs.hf_import import read_config
from kvwall.inputs.loader import load_catalog
from kvwall.model.footprint import context_holding, kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window

CORPUS = Path(__file__).parent / "fixtures" / "hf-configs"
CONFIGS = sorted(CORPUS.glob("*.json"))
#: The id a test imports a model under: no catalogue id starts with "test-".
FIXTURE_ID = "test-qwen3-8b"
BF16 = 2.0


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("config")


def imported(catalog, name):
    return with_hf_config(catalog, str(CORPUS / f"{name}_config.json"))


def test_the_corpus_is_all_there():
    assert len([p for p in CONFIGS if not p.name.endswith("_hf_quant_config.json")]) == 70
    assert len([p for p in CONFIGS if p.name.endswith("_hf_quant_config.json")]) == 23


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_file_imports_or_is_refused_with_a_named_key(path):
    try:
        model = read_config(path)
    except ImportRefused as err:
        assert err.file == str(path) and err.key and err.reason
    else:
        assert model.entry["n_layers"]["value"] >= 1 and model.params_derived > 0


def test_refusals_name_the_key(capsys, tmp_path):
    assert main(["import", str(CORPUS / "nvidia--GLM-5-NVFP4_hf_quant_config.json")]) == 2
    assert "quantization: a quantization companion" in capsys.readouterr().err
    unknown = tmp_path / "org--unknown_config.json"
    unknown.write_text('{"model_type": "bert", "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12, '
                       '"intermediate_size": 3072, "vocab_size": 30522, "type_vocab_size": 2}')
    with pytest.raises(ImportRefused, match="type_vocab_size: not understood: it could change the cache") as err:
        read_config(unknown)
    assert err.value.key == "type_vocab_size" and "model_type 'bert' is not one kvwall names" in err.value.reason


def test_llama_head_dim_from_hidden_over_heads_stated(catalog):
    # Llama-3.1-70B: no head_dim; 8192 / 64 = 128; 2 x 80 layers x 8 kv heads x 128 x 2 B = 327,680 B/token.
    m = read_config(CORPUS / "meta-llama--Meta-Llama-3.1-70B_config.json")
    assert m.entry["head_dim"]["value"] == 128 and any("hidden_size / num_attention_heads" in n for n in m.notes)
    cat, model_id = imported(catalog, "meta-llama--Meta-Llama-3.1-70B")
    assert kv_bytes_per_token(cat.models[model_id], BF16) == 327_680
    # 80 (8192 x 128 x (64 + 16) + 64 x 128 x 8192 + 3 x 8192 x 28672) + 2 x 128256 x 8192
    assert m.params_derived == 80 * (8192 * 128 * 80 + 64 * 128 * 8192 + 3 * 8192 * 28672) + 2 * 128256 * 8192


def test_qwen3_head_dim_as_given_not_hidden_over_heads(catalog):
    # Qwen3-235B-A22B: head_dim 128 (4096 / 64 = 64 would be wrong); 94 layers, 4 kv heads: 2 x 94 x 4 x 128 x 2 B.
    cat, model_id = imported(catalog, "Qwen--Qwen3-235B-A22B")
    model = cat.models[model_id]
    assert model.head_dim == 128 and kv_bytes_per_token(model, BF16) == 2 * 94 * 4 * 128 * 2 == 192_512
    assert (model.moe.routed_experts, model.moe.experts_per_token, model.moe.expert_intermediate_size) == (128, 8, 1536)
    m = read_config(CORPUS / "Qwen--Qwen3-235B-A22B_config.json")
    # 94 (4096 x 128 x (64 + 8) + 64 x 128 x 4096 + 128 x 3 x 4096 x 1536 + 4096 x 128 router) + 2 x 151936 x 4096
    assert m.params_derived == 94 * (4096 * 128 * 72 + 64 * 128 * 4096 + 128 * 3 * 4096 * 1536 + 4096 * 128) + 2 * 151936 * 4096


def test_mla_latent_without_factor_two(catalog):
    # DeepSeek-V3: 61 layers x (512 + 64) x 2 B = 70,272 B/token, not 2 x 128 heads x 192.
    cat, model_id = imported(catalog, "deepseek-ai--DeepSeek-V3")
    model = cat.models[model_id]
    assert kv_bytes_per_token(model, BF16) == 61 * 576 * 2 == 70_272
    assert kv_bytes_per_token_beyond_window(model, BF16) == 70_272
    assert (model.moe.routed_experts, model.moe.shared_experts, model.moe.dense_layers) == (256, 1, 3)
    m = read_config(CORPUS / "deepseek-ai--DeepSeek-V3_config.json")
    d, nq = 7168, 128
    attention = d * 1536 + 1536 * nq * 192 + d * 576 + 512 * nq * 256 + nq * 128 * d
    moe = 58 * (256 * 3 * d * 2048 + 3 * d * 2048 + d * 256) + 3 * 3 * d * 18432
    assert m.params_derived == 61 * attention + moe + 2 * 129280 * d
    assert abs(m.params_derived / 671e9 - 1) < 0.03


def test_sliding_window_rates(catalog):
    # gpt-oss-120b: 36 layers alternating; 2 x 36 x 8 x 64 x 2 B = 73,728 below the window, half beyond it.
    cat, model_id = imported(catalog, "openai--gpt-oss-120b")
    model = cat.models[model_id]
    assert kv_bytes_per_token(model, BF16) == 73_728 and kv_bytes_per_token_beyond_window(model, BF16) == 36_864
    assert float(kv_bytes(model, 1000, BF16)) == 36_864 * 1000 + 36_864 * 128


def test_linear_attention_state_is_constant(catalog):
    # Qwen3.5-397B-A17B: 15 full layers (every 4th), 2 kv heads x 256: 2 x 15 x 2 x 256 x 2 B = 30,720 B/token;
    # 45 Gated DeltaNet layers, state 64 x 128 x 128 + 3 x (2 x 16 x 128 + 64 x 128) = 1,085,440 elements each, fp32.
    cat, model_id = imported(catalog, "Qwen--Qwen3.5-397B-A17B")
    model = cat.models[model_id]
    state = 45 * (64 * 128 * 128 + 3 * (2 * 16 * 128 + 64 * 128)) * 4
    assert model.attention.state_bytes == state == 195_379_200
    assert kv_bytes_per_token(model, BF16) == 30_720 and kv_bytes_per_token_beyond_window(model, BF16) == 30_720
    assert float(kv_bytes(model, 0, BF16)) == state
    assert float(kv_bytes(model, 1000, BF16, batch=2)) == 2 * (30_720 * 1000 + state)
    assert float(context_holding(model, 2 * (30_720 * 1000 + state), BF16, batch=2)) == pytest.approx(1000)
    assert [g.kind for g in model.attention.groups] == ["full", "state"]


def test_multimodal_text_config_is_read(catalog):
    cat, model_id = imported(catalog, "Qwen--Qwen3-VL-32B-Instruct")
    assert kv_bytes_per_token(cat.models[model_id], BF16) == 2 * 64 * 8 * 128 * 2


def test_weight_format_from_the_checkpoint():
    # NVFP4 is kvwall.units' fp4: 4-bit values with an fp8 scale per 16, 4.5 bits; the attention, router, embedding
    # and LM head that the checkpoint excludes stay bf16 (kvwall.inputs.quantization, tests/test_quantization.py)
    assert read_config(CORPUS / "nvidia--GLM-5-NVFP4_config.json").entry["weight_format"]["experts"] == "fp4"
    assert read_config(CORPUS / "deepseek-ai--DeepSeek-V3_config.json").entry["weight_format"]["experts"] == "fp8"
    assert read_config(CORPUS / "zai-org--GLM-5_config.json").entry["weight_format"] == "bf16"


def test_import_writes_a_loadable_entry(tmp_path, capsys, catalog):
    from kvwall.inputs.loader import load_user_specs

    assert main(["import", str(CORPUS / "MiniMaxAI--MiniMax-M2.7_config.json"), "--params-nominal", "229e9",
                 "--params-source", "https://huggingface.co/MiniMaxAI/MiniMax-M2.7"]) == 0
    spec = tmp_path / "m.yaml"
    spec.write_text(capsys.readouterr().out)
    model = load_user_specs(spec, catalog).models["minimax-m2.7"]
    assert kv_bytes_per_token(model, BF16) == 2 * 62 * 8 * 128 * 2 and model.params_nominal == 229e9
    assert model.provenance["n_kv_heads"].source.endswith("config.json: num_key_value_heads")


def test_import_into_appends_sources_and_entry(tmp_path, capsys):
    target = tmp_path / "models.yaml"
    target.write_text((Path(__file__).parents[1] / "config" / "models.yaml").read_text())
    args = ["import", str(CORPUS / "Qwen--Qwen3-8B_config.json"), "--into", str(target), "--id", FIXTURE_ID]
    assert main(args) == 2
    assert "params_nominal: a catalogue entry needs the published count" in capsys.readouterr().err
    assert main([*args, "--params-nominal", "8.2e9", "--params-source", "Qwen3-8B model card (8.2B)"]) == 0
    from kvwall.inputs.loader import read_yaml

    document = read_yaml(target)
    assert document["models"][FIXTURE_ID]["params_nominal"]["value"] == 8.2e9
    assert document["sources"][f"{FIXTURE_ID}.params-nominal"] == "Qwen3-8B model card (8.2B)"
    assert main([*args, "--params-nominal", "8.2e9", "--params-source", "card"]) == 2  # already there
    assert "already in the catalogue" in capsys.readouterr().err


def test_a_nominal_count_far_from_the_derived_one_is_reported(capsys):
    assert main(["import", str(CORPUS / "Qwen--Qwen3-8B_config.json"), "--params-nominal", "7e9",
                 "--params-source", "wrong", "--id", FIXTURE_ID]) == 0
    err = capsys.readouterr().err
    assert err.startswith("kvwall: warning: ") and f"Qwen--Qwen3-8B_config.json: models.{FIXTURE_ID}.params_nominal: " in err
    assert "7e+09 is 17.0% off the count the architecture implies, 8.19e+09" in err


def test_regime_answers_for_a_config(capsys):
    assert main(["regime", "--hf-config", str(CORPUS / "Qwen--Qwen3-32B_config.json"), "--device", "b200",
                 "--batch", "8", "--context", "128k"]) == 0
    assert "Regime:" in capsys.readouterr().out


def test_fit_answers_for_a_config_as_for_its_catalogue_model(capsys):
    # Qwen3-32B's published config.json and the catalogue's qwen3-32b: the same layouts at the same bounds
    argv = ["--device", "h200-sxm", "--batch", "64", "--context", "8k", "--json"]
    assert main(["fit", "--hf-config", str(CORPUS / "Qwen--Qwen3-32B_config.json"), *argv]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert main(["fit", "--model", "qwen3-32b", *argv]) == 0
    catalogued = json.loads(capsys.readouterr().out)
    def layouts(answer):
        return [(d["deployment"], d["step_time_bound"]["value"]) for d in answer["deployments"]]

    assert imported["model"] != catalogued["model"] and layouts(imported)
    assert [d for d, _ in layouts(imported)] == [d for d, _ in layouts(catalogued)]
    for (_, new), (_, old) in zip(layouts(imported), layouts(catalogued)):
        assert new == pytest.approx(old, rel=0.02)  # the parameter count derived from the config, not the published one


def test_plausibility_warnings_name_file_and_key(tmp_path, capsys):
    # a device typed in GB/s where TB/s was meant: 3.35 GB/s is 1,000x below the catalogue's slowest HBM
    spec = tmp_path / "dev.yaml"
    spec.write_text("""evidence: spec
sources: {mine: "my notes"}
devices:
  slow:
    name: Slow
    hbm_capacity: {value: 80, unit: GB, source: mine}
    hbm_bandwidth: {value: 3.35, unit: GB/s, source: mine}
    package: {description: one die, partitions: {value: 1, unit: count, source: mine}}
    dense_flops: {bf16: {value: 989, unit: TFLOP/s, source: mine}}
""")
    assert main(["list", "devices", "--specs", str(spec)]) == 0
    err = capsys.readouterr().err
    assert f"kvwall: warning: {spec}: devices.slow.hbm_bandwidth: 0.00335 TB/s is more than 10x outside" in err


CATALOGUE_IMPORTS = {  # catalogue id: (corpus file, Hugging Face id given to the import)
    "llama-3.1-8b": ("meta-llama--Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    "llama-3.1-70b": ("meta-llama--Meta-Llama-3.1-70B", "meta-llama/Llama-3.1-70B"),
    "qwen3-235b-a22b": ("Qwen--Qwen3-235B-A22B", None),
    "deepseek-v3": ("deepseek-ai--DeepSeek-V3", None),
    "deepseek-r1": ("deepseek-ai--DeepSeek-R1", None),
    "kimi-k2.5": ("moonshotai--Kimi-K2.5", None),
    "minimax-m2.5": ("MiniMaxAI--MiniMax-M2.5", None),
    "glm-5": ("zai-org--GLM-5", None),
    "qwen3.5-397b-a17b": ("Qwen--Qwen3.5-397B-A17B", None),
}


@pytest.mark.parametrize("model_id", CATALOGUE_IMPORTS)
def test_catalogue_entries_are_what_import_writes(catalog, model_id):
    from kvwall.inputs.hf_import import entry_lines, source_lines

    name, hf_id = CATALOGUE_IMPORTS[model_id]
    imported = read_config(CORPUS / f"{name}_config.json", hf_id=hf_id, model_id=model_id)
    text = (Path(__file__).parents[1] / "config" / "models.yaml").read_text()
    nominal = catalog.models[model_id].params_nominal
    assert "\n".join(entry_lines(imported, nominal)) in text
    assert "\n".join(source_lines(imported)) in text
    assert abs(imported.params_derived / nominal - 1) < 0.03


def test_kimi_text_config_and_glm_indexer(catalog):
    # Kimi-K2.5: a multimodal wrapper; its text_config holds the MLA model: 61 x (512 + 64) x 2 B.
    kimi = read_config(CORPUS / "moonshotai--Kimi-K2.5_config.json")
    assert kimi.entry["n_layers"]["source"] == "kimi-k2.5.text-config.num-hidden-layers"
    assert kimi.sources["kimi-k2.5.text-config.kv-lora-rank"].endswith("config.json: text_config.kv_lora_rank")
    assert catalog.models["kimi-k2.5"].attention.latent_dim == 576
    # GLM-5: 78 MLA layers, each a latent of 512 + 64 at bf16 and an indexer key of 128 in fp8 with one fp32 scale:
    # 78 x (576 x 2 + 132) = 100,152 B/token, all of it on every TP rank; at fp8 KV, 78 x (576 + 132) = 55,224.
    assert kv_bytes_per_token(catalog.models["glm-5"], BF16) == 78 * (576 * 2 + 132) == 100_152
    assert kv_bytes_per_token(catalog.models["glm-5"], 1.0) == 78 * (576 + 132) == 55_224
    assert any("index_head_dim" in n and "beside the latent" in n for n in read_config(CORPUS / "zai-org--GLM-5_config.json").notes)


def test_mixtral_moe_and_head_dim_convention():
    # Mixtral-8x7B: no head_dim, 4096 / 32 = 128; 8 experts top-2 of 14336; 32 (4096 x 128 x 48 + 32 x 128 x 4096
    # + 8 x 3 x 4096 x 14336 + 4096 x 8 router) + 2 x 32000 x 4096 = 46.70e9.
    m = read_config(CORPUS / "mistralai--Mixtral-8x7B-v0.1_config.json")
    assert m.entry["head_dim"]["value"] == 128
    assert {k: v["value"] for k, v in m.entry["moe"].items()} == {
        "routed_experts": 8, "experts_per_token": 2, "expert_intermediate_size": 14336, "shared_experts": 0, "dense_layers": 0}
    assert m.params_derived == 32 * (4096 * 128 * 48 + 32 * 128 * 4096 + 8 * 3 * 4096 * 14336 + 4096 * 8) + 2 * 32000 * 4096


def test_several_configs_to_one_document(tmp_path, capsys, catalog):
    from kvwall.inputs.errors import SpecError
    from kvwall.inputs.loader import load_user_specs, read_yaml

    assert main(["import", str(CORPUS / "Qwen--Qwen3-8B_config.json"), str(CORPUS / "Qwen--Qwen3-0.6B_config.json")]) == 0
    spec = tmp_path / "two.yaml"
    spec.write_text(capsys.readouterr().out)
    models = read_yaml(spec)["models"]
    assert models["qwen3-0.6b"]["head_dim"]["value"] == 128  # as given, not 1024 / 16
    assert "# params_nominal: the model card's count is needed here" in spec.read_text()
    with pytest.raises(SpecError, match="missing required field 'params_nominal'"):
        load_user_specs(spec, catalog)


def test_mamba_state_of_a_nemotron_h_stack(catalog):
    # Nemotron-3-Nano: pattern of 23 Mamba-2 (M), 23 MoE (E) and 6 attention (*) layers. Attention: 2 x 6 x 2 kv
    # heads x 128 x 2 B = 6,144 B/token; Mamba state per layer 64 heads x 64 x 128 + (4 - 1) x (4,096 + 2 x 8 x 128)
    # = 542,720 elements, fp32: 23 x 542,720 x 4 B per sequence.
    cat, model_id = imported(catalog, "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    model = cat.models[model_id]
    assert kv_bytes_per_token(model, BF16) == 6_144 and kv_bytes_per_token_beyond_window(model, BF16) == 6_144
    assert model.attention.state_bytes == 23 * 542_720 * 4 == 49_930_240
    assert [(g.kind, g.layers) for g in model.attention.groups] == [("full", 6), ("state", 23), ("none", 23)]
    assert (model.moe.expert_matrices, model.moe.dense_layers) == (2, 29)  # relu2 experts in 23 of 52 layers
    d = 2688
    attention = 6 * (d * 128 * (32 + 2 * 2) + 32 * 128 * d)
    mamba = 23 * (d * (2 * 4096 + 2 * 8 * 128 + 64) + 6144 * 4 + 4096 * d)
    moe = 23 * (128 * 2 * d * 1856 + 2 * d * 3712 + d * 128)
    m = read_config(CORPUS / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json")
    assert m.params_derived == attention + mamba + moe + 2 * 131072 * d
    assert abs(m.params_derived / 31.6e9 - 1) < 0.01  # NVIDIA's model card: 31.6B total
