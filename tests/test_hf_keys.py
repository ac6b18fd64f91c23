"""The key table of kvwall.inputs.hf_keys: every key of every shared config is read, known not to matter or refused;
an architecture kvwall does not name is read by the convention its keys follow, with one warning, or refused naming
the key it does not understand."""

import json
from pathlib import Path

import pytest
from hf_config_files import write

from kvwall.cli.hf_config import with_hf_config
from kvwall.cli.main import main
from kvwall.inputs.hf_import import ImportRefused, read_config
from kvwall.inputs.hf_keys import NOT_CACHE, READ, REFUSED, convention, refused_key, unknown_keys
from kvwall.model.footprint import kv_bytes_per_token

CORPUS = Path(__file__).parent / "fixtures" / "hf-configs"
BF16 = 2.0
#: Llama-3.1-8B's fields under a model type kvwall does not name.
LLAMA_LIKE = {"model_type": "acme_lm", "architectures": ["AcmeForCausalLM"], "hidden_size": 4096,
              "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
              "vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
              "torch_dtype": "bfloat16", "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}


def corpus_keys():
    """Every key of every model config of the corpus, its text_config's among them."""
    keys = set()
    for path in CORPUS.glob("*_config.json"):
        if path.name.endswith("_hf_quant_config.json"):
            continue
        config = json.loads(path.read_text())
        keys |= set(config) | set(config.get("text_config") or {})
    return keys


def test_every_key_of_the_shared_corpus_is_in_one_table():
    keys = corpus_keys()
    assert len(keys) == 231  # the 70 configs of the corpus and their text_config
    assert not [key for key in keys if key not in READ and key not in NOT_CACHE and key not in REFUSED]
    # the three tables are apart: no key both read and refused, or both read and known not to matter
    assert not set(READ) & set(NOT_CACHE) and not set(READ) & set(REFUSED) and not set(NOT_CACHE) & set(REFUSED)
    assert "kv_lora_rank" in READ and "rope_theta" in NOT_CACHE and "global_head_dim" in REFUSED


def test_every_shared_config_is_read_by_its_family_with_nothing_unread():
    for path in CORPUS.glob("*_config.json"):
        if not path.name.endswith("_hf_quant_config.json"):
            imported = read_config(path)
            assert imported.unread == [] and imported.warnings == [] and imported.convention, path.name


def test_an_unnamed_architecture_with_standard_names_is_answered_with_one_warning(tmp_path, catalog, capsys):
    # 2 x 32 layers x 8 KV heads x (4096 / 32 = 128) x 2 B = 131,072 B/token, Llama-3.1-8B's
    path = write(tmp_path, LLAMA_LIKE)
    imported = read_config(path)
    assert imported.convention == "gqa by LlamaConfig's field names" and len(imported.warnings) == 1
    assert "model_type 'acme_lm' is not one kvwall names: read as a gqa model by LlamaConfig's field names" in \
        imported.warnings[0]
    cat, model_id = with_hf_config(catalog, str(path))
    assert kv_bytes_per_token(cat.models[model_id], BF16) == 2 * 32 * 8 * 128 * 2 == 131_072
    # the parameters of Llama-3.1-8B: 32 (4096 x 128 x 48 + 32 x 128 x 4096 + 3 x 4096 x 14336) + 2 x 128256 x 4096
    assert imported.params_derived == 32 * (4096 * 128 * 48 + 32 * 128 * 4096 + 3 * 4096 * 14336) + 2 * 128256 * 4096
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and f"kvwall: warning: {path}: model_type 'acme_lm'" in err


def test_the_convention_is_chosen_by_the_keys_that_mark_it():
    assert convention(LLAMA_LIKE)[0] == "gqa"
    assert convention({**LLAMA_LIKE, "kv_lora_rank": 512}) == ("mla", "DeepseekV3Config's field names")
    assert convention({**LLAMA_LIKE, "hybrid_override_pattern": "M*"})[0] == "mamba hybrid"
    assert convention({**LLAMA_LIKE, "linear_attn_config": {}})[0] == "delta hybrid"


@pytest.mark.parametrize("key, value, reason", [
    ("attention_sink_tokens", 4, "not understood: it could change the cache"),
    ("global_head_dim", 512, "read only for model_type 'gemma4_text'"),
    ("compress_ratios", [4, 128], "read only for model_type 'deepseek_v4'"),
])
def test_an_unnamed_architecture_with_a_key_it_cannot_read_is_refused_naming_it(tmp_path, key, value, reason):
    path = write(tmp_path, {**LLAMA_LIKE, key: value})
    with pytest.raises(ImportRefused) as err:
        read_config(path)
    assert err.value.key == key and reason in err.value.reason and "acme_lm" in err.value.reason
    assert str(err.value).startswith(f"{path}: {key}: ") and "\n" not in str(err.value)
    assert refused_key({**LLAMA_LIKE, key: value})[0] == key and unknown_keys({**LLAMA_LIKE, key: value}) == (
        [key] if reason.startswith("not understood") else [])


def test_a_key_never_modelled_is_refused_whatever_the_architecture(tmp_path):
    config = json.loads((CORPUS / "deepseek-ai--DeepSeek-V3_config.json").read_text())
    path = write(tmp_path, {**config, "kv_lora_rank_per_layer": [512] * 61})
    with pytest.raises(ImportRefused, match="kv_lora_rank_per_layer: per-layer latent ranks are not read"):
        read_config(path)


def test_the_command_line_refuses_in_one_line(tmp_path, capsys):
    path = write(tmp_path, {**LLAMA_LIKE, "attention_sink_tokens": 4})
    assert main(["import", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"kvwall: {path}: attention_sink_tokens: not understood")
