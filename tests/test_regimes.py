"""Traffic and capacity crossovers, regimes and the speedup law (SoK sections 3.4-3.5, Table 4)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvwall.formats import format_value
from kvwall.model.regimes import (
    CAPACITY_BOUND, KV_BOUND, REGIMES, WEIGHT_BOUND, capacity_crossover, regime, regime_index, speedup, traffic_crossover,
)
from kvwall.model.roofline import resident_weight_bytes, step_weight_bytes

TABLE4 = {
    "llama-3-8b": ["122.5k", "15.3k", "3.8k", "957", "479"],
    "llama-3-70b": ["427.2k", "53.4k", "13.4k", "3.3k", "1.7k"],
    "llama-3.1-405b": ["1.57M", "196.2k", "49.0k", "12.3k", "6.1k"],
}
BATCHES = [1, 8, 32, 128, 256]


def s_star(model, b):
    return float(traffic_crossover(model, step_weight_bytes(model, 2.0, b), 2.0, b))


@pytest.mark.parametrize("model_id", TABLE4)
def test_table4(catalog, model_id):
    m = catalog.models[model_id]
    assert [format_value(s_star(m, b), "tokens") for b in BATCHES] == TABLE4[model_id]


@given(b=st.integers(1, 4096))
def test_traffic_crossover_is_inversely_proportional_to_batch(llama70, b):
    assert s_star(llama70, b) * b == pytest.approx(s_star(llama70, 1))


@pytest.mark.parametrize(
    "model_id, device_id, printed",
    [("llama-3-8b", "h100-sxm", "488k"), ("llama-3-70b", "b200", "159k"), ("llama-3-70b", "mi300x", "159k"),
     ("llama-3-70b", "h100-sxm", "cannot load"), ("llama-3.1-405b", "b200", "cannot load")],
)
def test_capacity_crossover_section_3_4(catalog, model_id, device_id, printed):
    m, d = catalog.models[model_id], catalog.devices[device_id]
    value = float(capacity_crossover(m, d.hbm_capacity, resident_weight_bytes(m, 2.0), 2.0))
    assert format_value(value, "capacity_tokens") == printed


def test_speedup_examples_section_3_5():
    # 2-bit (c = 8) at b = 1: 128k below s* gives 1.25x, 512k above it 1.91x.
    assert format_value(float(speedup(140e9, 41.94e9, 8)), "times2") == "1.25×"
    assert format_value(float(speedup(140e9, 167.77e9, 8)), "times2") == "1.91×"


@given(w=st.floats(1e6, 1e13), k=st.floats(0, 1e14), c=st.floats(1, 1000))
def test_speedup_is_bounded_by_one_and_c(w, k, c):
    s = float(speedup(w, k, c))
    assert 1 - 1e-12 <= s <= c * (1 + 1e-12)


def test_speedup_limits_and_monotonicity(llama70):
    contexts = np.geomspace(1, 1e9, 400)
    for b in (1, 32):
        s = speedup(140e9, b * contexts * 327_680, 8)
        assert np.all(np.diff(s) > 0)
        assert s[0] == pytest.approx(1, abs=1e-4) and s[-1] == pytest.approx(8, rel=1e-2)
    at_128k = [float(speedup(140e9, b * 128_000 * 327_680, 8)) for b in (1, 8, 32, 128)]
    assert at_128k == sorted(at_128k)


def test_regime_classification():
    assert list(regime([1e3, 5e5, 2e6], 4e5, 1e6)) == [WEIGHT_BOUND, KV_BOUND, CAPACITY_BOUND]
    assert str(regime(10, 4e5, -1.0)) == CAPACITY_BOUND  # weights do not fit at all


def test_regime_index_names_the_same_regime_in_one_byte():
    contexts, s_star, s_cap = np.array([1e3, 4e5, 5e5, 1e6, 2e6]), 4e5, 1e6
    index = regime_index(contexts, s_star, s_cap)
    assert index.dtype == np.int8 and list(index) == [0, 1, 1, 1, 2]  # s = s* is KV-bound, s = s_cap still fits
    assert [REGIMES[i] for i in index] == list(regime(contexts, s_star, s_cap))
