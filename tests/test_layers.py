"""Per-layer cache kinds (kvwall.inputs.specs.LayerStack): groups that differ in kind and heads, each at its own
positions, constant state per sequence; values computed by hand in each test."""

from dataclasses import replace

import pytest

from kvwall.cli.main import main
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import load_user_specs
from kvwall.inputs.specs import LayerGroup, LayerStack
from kvwall.model.footprint import context_holding, kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.model.regimes import capacity_crossover, traffic_crossover
from kvwall.model.roofline import step_flops, token_rate_ceiling
from kvwall.model.workloads import prefill_flops, stored_kv_bytes

BF16 = 2.0

# 4 full layers (2 kv heads x 256), 8 window layers of 1,024 (16 kv heads x 128), 4 state layers of 1,000 elements.
STACK = LayerStack((
    LayerGroup("full", 4, n_q_heads=32, n_kv_heads=2, head_dim=256),
    LayerGroup("window", 8, n_q_heads=32, n_kv_heads=16, head_dim=128, span=1024.0),
    LayerGroup("state", 4, state_elements=1000.0),
), state_bytes_per_element=4.0)
FULL_RATE = 2 * 4 * 2 * 256 * 2  # 8,192 B/token
WINDOW_RATE = 2 * 8 * 16 * 128 * 2  # 65,536 B/token
STATE = 4 * 1000 * 4  # 16,000 B/sequence


@pytest.fixture
def model(llama70):
    return replace(llama70, attention=STACK, n_layers=16, moe=None)


def test_rates_below_and_beyond_the_window(model):
    assert kv_bytes_per_token(model, BF16) == FULL_RATE + WINDOW_RATE
    assert kv_bytes_per_token_beyond_window(model, BF16) == FULL_RATE
    assert STACK.label == "full+SWA+state" and STACK.full_layers == 4 and STACK.window == 1024


@pytest.mark.parametrize("s, expected", [(0, STATE), (500, (FULL_RATE + WINDOW_RATE) * 500 + STATE),
                                         (10_000, FULL_RATE * 10_000 + WINDOW_RATE * 1024 + STATE)])
def test_footprint_is_piecewise_with_constant_state(model, s, expected):
    assert float(kv_bytes(model, s, BF16)) == pytest.approx(expected, rel=1e-15)
    assert float(kv_bytes(model, s, BF16, batch=3)) == pytest.approx(3 * expected, rel=1e-15)


@pytest.mark.parametrize("s", [100.0, 1024.0, 5_000.0, 1e6])
def test_context_holding_inverts_the_footprint(model, s):
    held = float(kv_bytes(model, s, BF16, batch=4))
    assert float(context_holding(model, held, BF16, batch=4)) == pytest.approx(s, rel=1e-12)


def test_crossovers_on_the_piecewise_footprint(model):
    # weights 1e9 B, batch 2: beyond the window, 2 (8,192 s + 65,536 x 1,024 + 16,000) = 1e9
    s_star = (1e9 / 2 - WINDOW_RATE * 1024 - STATE) / FULL_RATE
    assert float(traffic_crossover(model, 1e9, BF16, 2)) == pytest.approx(s_star, rel=1e-12)
    s_cap = (80e9 - 1e9 - WINDOW_RATE * 1024 - STATE) / FULL_RATE
    assert float(capacity_crossover(model, 80e9, 1e9, BF16)) == pytest.approx(s_cap, rel=1e-12)
    assert float(token_rate_ceiling(model, 8e12, BF16)) == pytest.approx(8e12 / FULL_RATE)


def test_attention_flops_per_group(model):
    # decode at s = 2,000: 4 L n_q d_h per position, full layers at s, window layers at W
    full, window = 4 * 4 * 32 * 256, 4 * 8 * 32 * 128
    attention = full * 2000 + window * 1024
    assert float(step_flops(model, 2000, 1)) == pytest.approx(2 * model.params_nominal + attention, rel=1e-15)
    # prefill of 2,000 tokens: full layers sum s, window layers min(s, W)
    prefill = full * 2000**2 / 2 + window * (1024**2 / 2 + 1024 * (2000 - 1024))
    assert float(prefill_flops(model, 2000)) == pytest.approx(2 * model.params_nominal * 2000 + prefill, rel=1e-12)


def test_prefix_sharing_shares_only_growing_layers(model):
    # 4 requests of 10,000 tokens sharing 6,000: full layers store 6,000 + 4 x 4,000; window and state per request
    expected = FULL_RATE * (6000 + 4 * 4000) + 4 * WINDOW_RATE * 1024 + 4 * STATE
    assert float(stored_kv_bytes(model, 4, 10_000, 6_000, BF16)) == pytest.approx(expected, rel=1e-15)


def test_chunked_and_latent_groups():
    chunked = LayerGroup("chunked", 3, n_q_heads=8, n_kv_heads=8, head_dim=64, span=8192.0)
    latent = LayerGroup("latent", 2, n_q_heads=16, kv_lora_rank=512, qk_rope_head_dim=64)
    assert chunked.kv_elements_per_token == 2 * 3 * 8 * 64 and float(chunked.positions(10_000)) == 8192
    assert latent.kv_elements_per_token == 2 * 576  # one latent per layer, no factor 2
    assert latent.attention_flops_per_position == 2 * 2 * 16 * (576 + 512)


def test_stack_refusals():
    with pytest.raises(ValueError, match="different spans"):
        LayerStack((LayerGroup("full", 1, 8, 8, 64), LayerGroup("window", 1, 8, 8, 64, span=128.0),
                    LayerGroup("chunked", 1, 8, 8, 64, span=256.0)))
    with pytest.raises(ValueError, match="positive span"):
        LayerGroup("window", 1, 8, 8, 64)
    with pytest.raises(ValueError, match="at least one attention layer"):
        LayerStack((LayerGroup("state", 2, state_elements=10.0),))


def test_existing_uniform_models_describe_their_groups(catalog):
    gpt = catalog.models["gpt-oss-120b"].attention.groups
    assert [(g.kind, g.layers, g.span) for g in gpt] == [("full", 18, 0.0), ("window", 18, 128.0)]
    (mla,) = catalog.models["deepseek-v2"].attention.groups
    assert (mla.kind, mla.layers, mla.latent_dim) == ("latent", 60, 576)


LAYERS_SPEC = """evidence: spec
sources:
  hand: "a hand-written test model"
models:
  hybrid:
    name: Hybrid
    source: hand
    attention:
      kind: layers
      groups:
        - {kind: full, layers: {value: 2, unit: count}, n_q_heads: {value: 8, unit: count}, n_kv_heads: {value: 2, unit: count}, head_dim: {value: 64, unit: count}}
        - {kind: state, layers: {value: LAYERS, unit: count}, state_elements: {value: 100, unit: count}}
    n_layers: {value: 8, unit: count}
    n_q_heads: {value: 8, unit: count}
    n_kv_heads: {value: 2, unit: count}
    head_dim: {value: 64, unit: count}
    hidden_size: {value: 512, unit: count}
    intermediate_size: {value: 1024, unit: count}
    vocab_size: {value: 1000, unit: count}
    params_nominal: {value: 1.0e7, unit: count}
"""


def test_layers_entry_loads_with_the_assumed_state_dtype(tmp_path, catalog):
    spec = tmp_path / "hybrid.yaml"
    spec.write_text(LAYERS_SPEC.replace("LAYERS", "6"))
    model = load_user_specs(spec, catalog).models["hybrid"]
    assert kv_bytes_per_token(model, BF16) == 2 * 2 * 2 * 64 * 2
    assert model.attention.state_bytes == 6 * 100 * 4  # fp32, config/assumptions.yaml state_dtype
    assert model.provenance["state_dtype"].evidence == "assumption"


def test_layers_entry_whose_groups_miss_layers_is_refused(tmp_path, catalog):
    spec = tmp_path / "hybrid.yaml"
    spec.write_text(LAYERS_SPEC.replace("LAYERS", "5"))
    with pytest.raises(SpecError) as err:
        load_user_specs(spec, catalog)
    assert (err.value.key, err.value.reason) == ("models.hybrid.attention.groups", "the groups hold 7 layers, n_layers is 8")


def test_assumed_device_rates_keep_their_class(catalog):
    mi355x = catalog.devices["mi355x"]
    assert mi355x.dense_flops["bf16"] == pytest.approx(256 * 4096 * 2.4e9, rel=1e-3)  # 2,516 TFLOP/s as written
    assert mi355x.provenance["dense_flops.bf16"].evidence == "assumption"
    assert catalog.devices["b300"].provenance["dense_flops.bf16"].evidence == "spec"
    link = catalog.devices["tpu-v5p"].scale_up
    assert (link.name, link.bandwidth, link.direction) == ("ICI", 4800e9 / 8, "unstated")


def test_model_by_hugging_face_id_and_list(capsys):
    assert main(["footprint", "--model", "meta-llama/Llama-3.1-70B", "--context", "1000"]) == 0
    assert "327,680 B/token" in capsys.readouterr().out
    assert main(["list", "devices"]) == 0
    out = capsys.readouterr().out
    assert "gb300" in out and "tpu-v6e" in out
    assert main(["list", "formats"]) == 0
    assert "nvfp4" not in capsys.readouterr().out


def test_footprint_prints_the_constant_state(capsys, catalog):
    from kvwall.cli.answers import state

    # Qwen3.5-397B-A17B: 45 Gated DeltaNet layers x 1,085,440 elements x 4 B = 195,379,200 B (0.2 GB)
    assert state(catalog.models["qwen3.5-397b-a17b"], catalog.assumptions).value == 195_379_200
    assert main(["footprint", "--model", "qwen3.5-397b-a17b", "--context", "1000"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.strip().startswith("state per sequence"))
    assert "0.2 GB" in line and "fp32, assumption state_dtype" in line
    assert main(["footprint", "--model", "llama-3-70b", "--context", "1000"]) == 0
    assert "state per sequence" not in capsys.readouterr().out
