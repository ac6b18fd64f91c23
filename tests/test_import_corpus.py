"""tables/derived/import_corpus: every config of the corpus imported, its bytes per token and its parameters against
the count its model card prints (config/published_params.yaml); values computed by hand from the configs."""

from pathlib import Path

import pytest

from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import load_catalog
from kvwall.inputs.published_params import load_published_params
from kvwall.render import to_csv
from kvwall.tables.import_corpus import corpus_configs, import_corpus

CORPUS = Path(__file__).parent / "fixtures" / "hf-configs"
PUBLISHED = Path(__file__).parents[1] / "config" / "published_params.yaml"


@pytest.fixture(scope="module")
def table():
    return import_corpus(load_catalog("config"), corpus_configs(CORPUS), load_published_params(PUBLISHED))


@pytest.fixture(scope="module")
def rows(table):
    return {row["hf_id"]: row for row in table.rows}


def test_one_row_per_config_and_none_refused(table):
    assert len(table.rows) == 70 and not [row for row in table.rows if row["refused"]]
    assert {row["model_type"] for row in table.rows} >= {"deepseek_v4", "gemma4_text", "llama4_text", "minimax_m3",
                                                         "nemotron-nas", "nemotron_h", "glm_moe_dsa", "qwen3_5_text"}


def test_each_row_names_its_reading_and_no_key_is_left_unread(rows):
    assert {row["read_as"] for row in rows.values()} == {"gqa", "mla", "compressed", "mamba hybrid", "blocks"}
    assert rows["zai-org/GLM-5"]["read_as"] == "mla" and rows["nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"][
        "read_as"] == "mamba hybrid"
    assert not [row["hf_id"] for row in rows.values() if row["unread"]]


def test_an_indexer_key_in_the_engines_format(rows):
    # GLM-5: 78 x 576 x 2 B of latent and 78 x (128 + 4) B of fp8 index keys with their fp32 scales = 100,152
    glm = rows["zai-org/GLM-5"]
    assert (glm["kv_8k"], glm["kv_1m"]) == (100_152, 100_152) == (78 * (576 * 2 + 132),) * 2
    assert glm["layers"] == "78 x latent 576 + index 128 (132 B)"


def test_bytes_per_token_at_8k_and_1m(rows):
    # DeepSeek-V4-Flash: 50,912 B/token within the 128-token window, 6,880 beyond it:
    # (50,912 x 128 + 6,880 x 8,064) / 8,192 = 7,568 B/token at 8k
    v4 = rows["deepseek-ai/DeepSeek-V4-Flash"]
    assert v4["kv_8k"] == pytest.approx(7_568, rel=1e-12)
    assert v4["kv_1m"] == pytest.approx((50_912 * 128 + 6_880 * (1_048_576 - 128)) / 1_048_576, rel=1e-12)
    assert v4["layers"] == ("2 x window 128 (1 x 512, K=V) + 21 x compressed 128 + 1/4 (1 x 512, K=V) + index 128 + "
                            "20 x compressed 128 + 1/128 (1 x 512, K=V)")
    # Qwen3.5-397B: 15 full layers, 30,720 B/token at every context, and 45 x 1,085,440 x 4 B of state apart
    qwen = rows["Qwen/Qwen3.5-397B-A17B"]
    assert (qwen["kv_8k"], qwen["kv_1m"], qwen["state"]) == (30_720, 30_720, 195_379_200)


def test_parameters_within_one_percent_of_the_published_count(rows):
    published = load_published_params(PUBLISHED)
    assert set(published) <= set(rows)
    # counts printed to one or two digits: Kimi-K2.5's 1T (derived 1.026T) and DeepSeek-V4-Pro's 1.6T (1.573T) round
    # to them; Llama 4 Scout's 109B counts its vision encoder beside the 107.77B of its text model
    rounded = {"moonshotai/Kimi-K2.5": -12, "deepseek-ai/DeepSeek-V4-Pro": -11}
    for hf_id, count in published.items():
        derived = rows[hf_id]["params"]
        if hf_id in rounded:
            assert round(derived, rounded[hf_id]) == count.value
        elif hf_id == "meta-llama/Llama-4-Scout-17B-16E-Instruct":
            assert -0.02 < rows[hf_id]["vs_published"] < 0
        else:
            assert abs(rows[hf_id]["vs_published"]) < 0.01, hf_id
    assert rows["XiaomiMiMo--MiMo-7B-Base".replace("--", "/")]["vs_published"] is None  # its card states no count


def test_the_table_is_the_same_from_run_to_run(table):
    again = import_corpus(load_catalog("config"), corpus_configs(CORPUS), load_published_params(PUBLISHED))
    assert to_csv(again) == to_csv(table)


@pytest.mark.parametrize("change, key, reason", [
    ("unit: count, source: glm-5}}", "counts.glm-5.params.unit", "measures"),
    ("hf_id: zai-org/GLM-5,", "counts.glm-5.hf_id", "listed twice"),
])
def test_a_bad_published_count_is_refused_naming_the_key(tmp_path, change, key, reason):
    text = PUBLISHED.read_text()
    if key.endswith("unit"):
        text = text.replace(change, "unit: GB, source: glm-5}}")
    else:
        text = text.replace("hf_id: openai/gpt-oss-120b,", change)
        key = "counts.gpt-oss-120b.hf_id"
    path = tmp_path / "published_params.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_published_params(path)
    assert err.value.key == key and reason in err.value.reason
