"""KV bytes per token (SoK Eq. 1, Table 1) and the unified footprint (Eq. 2), against the paper's printed values."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvwall.model.footprint import capacity_compression, effective_kv_bytes, kv_bytes, kv_bytes_per_token, traffic_compression
from kvwall.formats import format_value

# SoK Table 1, MB/token in BF16, as printed.
TABLE1 = {
    "llama-2-13b": "0.82 MB",
    "mixtral-8x7b": "0.13 MB",
    "llama-3-8b": "0.13 MB",
    "llama-3-70b": "0.33 MB",
    "llama-3.1-405b": "0.52 MB",
    "deepseek-v2": "0.07 MB",
}


@pytest.mark.parametrize("model_id, printed", TABLE1.items())
def test_table1_mb_per_token(catalog, model_id, printed):
    assert format_value(kv_bytes_per_token(catalog.models[model_id], 2.0), "mb_per_token") == printed


def test_llama70_bytes_per_token_exact(llama70):
    assert kv_bytes_per_token(llama70, 2.0) == 327_680  # SoK section 2.1


def test_mla_caches_one_latent_without_factor_two(catalog):
    # DeepSeek-V2: 60 layers x (512 + 64) latent dims x 2 B (Table 1, dagger).
    assert kv_bytes_per_token(catalog.models["deepseek-v2"], 2.0) == 60 * 576 * 2


def test_kv_of_one_sequence_section_1_2(llama70):
    assert round(kv_bytes(llama70, 128_000, 2.0) / 1e9) == 42
    assert round(kv_bytes(llama70, 1_000_000, 2.0) / 1e9) == 328


def test_unified_footprint_combination_is_one_sixty_fourth(llama70):
    # SoK section 2.6: 2-bit (w/8), r = 0.5, sigma = 4 cut the footprint to 1/64.
    base = effective_kv_bytes(llama70, 128_000, 2.0)
    combined = effective_kv_bytes(llama70, 128_000, 0.25, retention=0.5, sharing=4.0)
    assert combined / base == pytest.approx(1 / 64)
    assert capacity_compression(16, 2, 0.5, 4) == 64


def test_fragmentation_scales_by_one_plus_phi(llama70):
    assert effective_kv_bytes(llama70, 1000, 2.0, fragmentation=0.7) == pytest.approx(1.7 * 1000 * 327_680)


def test_traffic_compression_ignores_sharing():
    assert traffic_compression(16, 2, 0.5) == 16
    assert traffic_compression(16, 3) == pytest.approx(16 / 3)


@given(s=st.floats(1, 1e7), k=st.floats(1.01, 100))
def test_footprint_is_linear_in_context(llama70, s, k):
    assert effective_kv_bytes(llama70, k * s, 2.0) == pytest.approx(k * effective_kv_bytes(llama70, s, 2.0))


def test_footprint_broadcasts_over_arrays(llama70):
    out = effective_kv_bytes(llama70, np.array([1.0, 2.0, 3.0]), np.array([[2.0], [1.0]]))
    assert out.shape == (2, 3)
    assert out[1, 2] == 3 * 327_680 / 2
