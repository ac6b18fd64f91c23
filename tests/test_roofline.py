"""Decode-step roofline (SoK sections 3.1-3.3, Tables 3, 5 and 8): intensity, its limits, ridge, placement."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvwall.formats import format_value
from kvwall.model.roofline import (
    arithmetic_intensity,
    intensity_long_context_limit,
    intensity_short_context_limit,
    partition_bandwidth,
    pinned_bandwidth,
    ridge_point,
    step_flops,
    step_weight_bytes,
    striped_bandwidth,
    token_rate_ceiling,
)


@pytest.mark.parametrize("device_id, ridge, part", [("h100-sxm", "295", "3.35 TB/s"), ("b200", "281", "4.0 TB/s"), ("mi300x", "247", "0.66 TB/s")])
def test_table3_derived_columns(catalog, device_id, ridge, part):
    d = catalog.devices[device_id]
    assert format_value(ridge_point(d, "bf16"), "int") == ridge
    assert format_value(partition_bandwidth(d), "tbps") == part


@pytest.mark.parametrize(
    "device_id, layout, printed",
    [("h100-sxm", "striped", "10.2M"), ("b200", "striped", "24.4M"), ("b200", "pinned", "12.2M"), ("mi300x", "striped", "16.2M"), ("mi300x", "pinned", "2.0M")],
)
def test_token_rate_ceiling_row(catalog, llama70, device_id, layout, printed):
    d = catalog.devices[device_id]
    bandwidth = striped_bandwidth(d) if layout == "striped" else pinned_bandwidth(d)
    assert format_value(float(token_rate_ceiling(llama70, bandwidth, 2.0)), "mega1") == printed


def test_placement_gap_is_up_to_eight(catalog):
    assert striped_bandwidth(catalog.devices["mi300x"]) / pinned_bandwidth(catalog.devices["mi300x"]) == pytest.approx(8)
    assert striped_bandwidth(catalog.devices["b200"]) / pinned_bandwidth(catalog.devices["b200"]) == pytest.approx(2)


def test_fabric_caps_striping_when_it_is_the_bottleneck(catalog):
    from dataclasses import replace

    slow_fabric = replace(catalog.devices["b200"], die_to_die_bandwidth=2e12)  # 2 TB/s fabric, 2 dies
    assert striped_bandwidth(slow_fabric) == pytest.approx(4e12)


@pytest.mark.parametrize("s, w_kv, printed", [(128_000, 2.0, "2.6"), (128_000, 1.0, "3.0"), (512_000, 2.0, "4.8"), (512_000, 0.25, "9.2")])
def test_table5_intensity(llama70, s, w_kv, printed):
    assert format_value(float(arithmetic_intensity(llama70, s, 1, 2.0, w_kv)), "fixed1") == printed


def test_intensity_limits_section_3_2(llama70):
    assert intensity_short_context_limit(1, 2.0) == 1.0
    assert intensity_long_context_limit(llama70, 2.0) == 8.0
    assert intensity_long_context_limit(llama70, 0.25) == 64.0
    assert float(arithmetic_intensity(llama70, 1e-3, 7, 2.0, 2.0)) == pytest.approx(7.0, rel=1e-6)
    assert float(arithmetic_intensity(llama70, 1e13, 7, 2.0, 2.0)) == pytest.approx(8.0, rel=1e-3)


@given(b=st.integers(1, 512))
def test_long_context_floor_is_independent_of_batch(llama70, b):
    assert float(arithmetic_intensity(llama70, 1e12, b, 2.0, 2.0)) == pytest.approx(8.0, rel=1e-2)


@given(b=st.integers(1, 256), w_kv=st.sampled_from([2.0, 1.0, 0.5, 0.25]))
def test_intensity_is_monotone_between_its_limits(llama70, b, w_kv):
    s = np.geomspace(1, 1e8, 200)
    ai = arithmetic_intensity(llama70, s, b, 2.0, w_kv)
    steps = np.diff(ai)
    short, floor = 2.0 * b / 2.0, float(intensity_long_context_limit(llama70, w_kv))
    assert (steps >= -1e-9).all() if floor > short else (steps <= 1e-9).all()


def test_dense_weight_bytes_do_not_depend_on_batch(llama70):
    assert np.all(step_weight_bytes(llama70, 2.0, [1, 32, 256]) == 140e9)


def test_moe_reads_only_touched_experts(catalog):
    mixtral = catalog.models["mixtral-8x7b"]
    per_batch = step_weight_bytes(mixtral, 1.0, np.array([1, 2, 8, 64, 1024]))
    assert per_batch[0] / 1e9 == pytest.approx(12.9, abs=0.05)  # published active parameters
    assert np.all(np.diff(per_batch) > 0)
    assert per_batch[-1] == pytest.approx(mixtral.params_nominal, rel=1e-6)


def test_step_flops_include_softmax_when_asked(llama70):
    without = step_flops(llama70, 1000, 1)
    assert step_flops(llama70, 1000, 1, include_softmax=True) - without == 3 * 80 * 64 * 1000
