"""W3 prefix sharing and W4 reuse economics (SoK sections 4.4-4.5, App. A)."""

import pytest

from kvwall.model.footprint import kv_bytes
from kvwall.formats import format_value
from kvwall.model.workloads import fetch_time, prefill_flops, recompute_time, sharing_factor, stored_tokens, warm_ttft_ratio


def test_w3_sharing(llama70):
    assert format_value(float(sharing_factor(8, 96_000, 32_000)), "fixed2") == "2.91"
    assert format_value(float(stored_tokens(8, 96_000, 32_000)) * 327_680, "gb1") == "115.3"
    assert format_value(8 * 128_000 * 327_680, "gb1") == "335.5"
    assert format_value(float(warm_ttft_ratio(llama70, 96_000, 32_000)), "times1") == "2.8×"


def test_prefill_splits_at_the_cached_prefix(llama70):
    whole = prefill_flops(llama70, 128_000)
    assert prefill_flops(llama70, 96_000) + prefill_flops(llama70, 32_000, 96_000) == pytest.approx(whole)


def test_w4_recompute_versus_fetch(catalog, llama70):
    b200 = catalog.devices["b200"]
    recompute = float(recompute_time(llama70, 128_000, b200.dense_flops["bf16"], 0.70))
    kv = kv_bytes(llama70, 128_000, 2.0)
    pcie, nvlink = catalog.links["pcie-gen5-x16"].bandwidth, catalog.links["nvlink-4"].bandwidth
    assert format_value(recompute, "fixed1") == "25.0"
    assert format_value(float(fetch_time(kv, pcie)), "fixed2") == "0.66"
    assert format_value(float(fetch_time(kv, pcie, 4)), "fixed2") == "0.16"
    assert format_value(float(fetch_time(kv, nvlink, 4)), "ms0") == "12"
    assert format_value(recompute / float(fetch_time(kv, pcie)), "two_significant") == "38"
    assert format_value(recompute / float(fetch_time(kv, nvlink, 4)), "two_significant") == "2,100"


def test_sharing_factor_limits():
    assert sharing_factor(1, 96_000, 32_000) == 1
    assert sharing_factor(1000, 1e9, 1) == pytest.approx(1000, rel=1e-5)
