"""Sliding-window attention (Gemma 3, gpt-oss): a window layer caches at most its window, so the footprint grows at the
full layers' rate beyond it. Golden values are the per-token bytes of reference/specs-sources.md; the rest are the
properties the piecewise footprint must keep (exact below the window, its inverse, the crossovers on it)."""

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvwall.cli.main import main
from kvwall.model.footprint import context_holding, kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window
from kvwall.inputs.errors import SpecError
from kvwall.measure.config import load_measure_config
from kvwall.model.regimes import capacity_crossover, traffic_crossover
from kvwall.model.roofline import intensity_long_context_limit, resident_weight_bytes, step_kv_bytes, step_weight_bytes
from kvwall.inputs.specs import FullAttention, SlidingWindowAttention
from kvwall.tables.sliding_window import sliding_window_footprint
from kvwall.tier.inputs import load_tiers
from kvwall.model.workloads import prefill_flops, stored_kv_bytes
from test_bad_input import break_config, spec_error

BF16 = 2.0


@pytest.fixture(scope="module")
def gemma(catalog):
    return catalog.models["gemma-3-27b"]


@pytest.fixture(scope="module")
def gpt_oss(catalog):
    return catalog.models["gpt-oss-120b"]


@pytest.mark.parametrize("model_id, all_layers, beyond", [("gpt-oss-120b", 73_728, 36_864), ("gemma-3-27b", 507_904, 81_920)])
def test_per_token_bytes_below_and_beyond_the_window(catalog, model_id, all_layers, beyond):
    model = catalog.models[model_id]
    assert model.attention.label == "GQA+SWA"
    assert kv_bytes_per_token(model, BF16) == all_layers
    assert kv_bytes_per_token_beyond_window(model, BF16) == beyond


def test_gemma_per_sequence_footprint_at_128k(gemma):
    # 10 global layers hold 128,000 tokens, 52 local layers 1,024: 2 x 16 x 128 x 2 B x (10 x 128,000 + 52 x 1,024)
    assert kv_bytes(gemma, 128_000, BF16) == 10_921_967_616
    assert kv_bytes(gemma, 128_000, BF16, batch=8) == 8 * 10_921_967_616


def test_the_table_lists_only_window_models_and_their_share_of_all_global(catalog, selections):
    rows = {r["model_id"]: r for r in sliding_window_footprint(catalog, selections).rows}
    assert set(rows) == {"gpt-oss-120b", "gemma-3-27b"}
    assert rows["gpt-oss-120b"]["share_512000"] == pytest.approx(0.5, abs=1e-3)  # half the layers are windowed
    assert rows["gemma-3-27b"]["share_128000"] == pytest.approx(10 / 62, abs=0.01)


@given(s=st.floats(1.0, 1024.0))
def test_below_the_window_every_layer_caches_every_token(gemma, s):
    assert kv_bytes(gemma, s, BF16) == pytest.approx(s * kv_bytes_per_token(gemma, BF16), rel=1e-12)


@given(s=st.floats(1024.0, 1e7), extra=st.floats(1.0, 1e6))
def test_beyond_the_window_the_cache_grows_at_the_full_layers_rate(gemma, s, extra):
    growth = kv_bytes(gemma, s + extra, BF16) - kv_bytes(gemma, s, BF16)
    assert growth == pytest.approx(extra * kv_bytes_per_token_beyond_window(gemma, BF16), rel=1e-6)


@given(s=st.floats(1.0, 1e7), batch=st.integers(1, 512))
def test_context_holding_inverts_the_footprint(gpt_oss, s, batch):
    held = kv_bytes(gpt_oss, s, BF16, batch)
    assert float(context_holding(gpt_oss, held, BF16, batch)) == pytest.approx(s, rel=1e-9)


def test_a_model_of_window_layers_only_is_capped_and_never_reaches_a_larger_footprint(gemma):
    local_only = replace(gemma, attention=SlidingWindowAttention(62, 32, 16, 128, window_layers=62, window=1024.0))
    cap = kv_bytes(local_only, 1024, BF16)
    assert kv_bytes(local_only, 1e6, BF16) == cap
    assert np.isinf(context_holding(local_only, 2 * cap, BF16))
    assert np.isinf(traffic_crossover(local_only, 100 * cap, BF16, 1))  # KV never outgrows the weights


def test_a_window_wider_than_any_context_is_full_attention(catalog):
    llama = catalog.models["llama-3-70b"]
    windowed = replace(llama, attention=SlidingWindowAttention(80, 64, 8, 128, window_layers=40, window=1e12))
    for s in (1_000, 128_000, 1_000_000):
        assert kv_bytes(windowed, s, BF16) == kv_bytes(llama, s, BF16)
        assert prefill_flops(windowed, s, 1_000) == pytest.approx(prefill_flops(llama, s, 1_000), rel=1e-12)
    assert isinstance(llama.attention, FullAttention) and not llama.attention.has_window


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_at_the_traffic_crossover_kv_bytes_equal_weight_bytes(gemma, batch):
    weights = step_weight_bytes(gemma, BF16, batch)
    s_star = traffic_crossover(gemma, weights, BF16, batch)
    assert step_kv_bytes(gemma, s_star, batch, BF16) == pytest.approx(weights, rel=1e-12)


def test_the_capacity_crossover_fills_the_device(catalog, gemma):
    h100 = catalog.devices["h100-sxm"]
    resident = resident_weight_bytes(gemma, BF16)
    s_cap = float(capacity_crossover(gemma, h100.hbm_capacity, resident, BF16))
    assert resident + kv_bytes(gemma, s_cap, BF16) == pytest.approx(h100.hbm_capacity, rel=1e-12)
    assert round(s_cap, -3) == 312_000  # a linear, all-global footprint would give 51k
    for batch in (2, 8):  # s_cap(b) falls below s_cap / b: every sequence keeps a full window of its own
        s_cap_b = float(capacity_crossover(gemma, h100.hbm_capacity, resident, BF16, batch))
        assert resident + kv_bytes(gemma, s_cap_b, BF16, batch) == pytest.approx(h100.hbm_capacity, rel=1e-12)
        assert s_cap_b < s_cap / batch


def test_long_context_intensity_keeps_2g_over_w_kv(gemma):
    assert intensity_long_context_limit(gemma, BF16) == 2 * 2 / BF16  # g = 32 / 16


def test_prefill_attention_of_window_layers_stops_growing(gemma):
    attention = gemma.attention
    linear = 2.0 * 27.0e9  # the linear term per new token, 2P
    before = prefill_flops(gemma, 1, 200_000) - linear
    after = prefill_flops(gemma, 1, 400_000) - linear
    full_share = attention.attention_flops_per_position * attention.full_layers / attention.n_layers
    window_share = attention.attention_flops_per_position * attention.window_layers / attention.n_layers
    assert after - before == pytest.approx(full_share * 200_000, rel=1e-9)
    assert after == pytest.approx(full_share * 400_000.5 + window_share * 1024, rel=1e-9)


def test_the_regime_command_gives_the_rate_beyond_the_window(capsys):
    assert main(["regime", "--model", "gemma-3-27b", "--device", "h100-sxm", "--batch", "8", "--context", "128k", "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)["paper_frame"]["numbers"]
    assert numbers["kv_bytes_per_token"]["value"] == 507_904
    assert numbers["kv_bytes_per_token_beyond_window"]["value"] == 81_920
    assert numbers["step_kv_bytes"]["value"] == 8 * 10_921_967_616
    assert "L_window min(s, W)" in numbers["traffic_crossover"]["basis"]


def test_models_without_a_window_give_no_beyond_window_line(capsys):
    assert main(["regime", "--model", "llama-3-70b", "--device", "b200", "--batch", "1", "--context", "128k", "--json"]) == 0
    assert "kv_bytes_per_token_beyond_window" not in json.loads(capsys.readouterr().out)["paper_frame"]["numbers"]


def test_window_layers_beyond_the_layer_count_are_refused(tmp_path):
    error = spec_error(tmp_path, "models.yaml", "window_layers: {value: 52, unit: count}", "window_layers: {value: 63, unit: count}")
    assert (error.key, error.reason) == ("models.gemma-3-27b.attention.window_layers", "63 exceeds n_layers 62")


def test_a_window_not_in_tokens_is_refused(tmp_path):
    error = spec_error(tmp_path, "models.yaml", "window: {value: 1024, unit: tokens}", "window: {value: 1024, unit: GB}")
    assert error.key == "models.gemma-3-27b.attention.window.unit"
    assert error.reason == "unit 'GB' measures bytes, expected tokens"


def test_the_benchmark_and_the_tier_model_refuse_window_models(catalog, root, tmp_path):
    with pytest.raises(SpecError, match="without windows"):
        load_measure_config(root / "config" / "measure.yaml", catalog, model_id="gemma-3-27b")
    config = break_config(tmp_path, "tiers.yaml", "model: llama-3-70b", "model: gemma-3-27b")
    with pytest.raises(SpecError) as caught:
        load_tiers(config / "tiers.yaml", catalog)
    assert "GQA+SWA" in caught.value.reason and caught.value.key.endswith(".model")


def test_a_shared_prefix_is_stored_once_by_full_layers_only(catalog, gemma):
    # W3-like: 8 requests of 128k sharing 96k. Full layers store 96k + 8 x 32k tokens; each window layer its own 1,024.
    stored = stored_kv_bytes(gemma, 8, 128_000, 96_000, BF16)
    assert stored == 81_920 * (96_000 + 8 * 32_000) + 8 * 1_024 * (507_904 - 81_920)
    llama = catalog.models["llama-3-70b"]
    assert stored_kv_bytes(llama, 8, 128_000, 96_000, BF16) == (96_000 + 8 * 32_000) * 327_680
    assert stored_kv_bytes(llama, 8, 128_000, 0, BF16) == kv_bytes(llama, 128_000, BF16, batch=8)
