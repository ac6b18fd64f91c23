"""The busiest expert-parallel rank (kvwall.model.expert_imbalance), by hand: the estimate prices it, the bound not."""

from math import comb

import numpy as np
import pytest

from kvwall.inputs.deployment import Deployment, checked_deployment, load_serving_inputs
from kvwall.inputs.loader import load_catalog
from kvwall.model.expert_imbalance import busiest_rank_touched_fraction
from kvwall.model.roofline import experts_touched_fraction
from kvwall.model.sharding import imbalance_bytes_per_step, resident_params_per_device
from kvwall.model.step_time import device_step
from kvwall.inputs.specs import EXPERTS


@pytest.fixture(scope="module")
def catalog():
    return load_catalog("config")


def _binomial_max(n: int, q: float, ranks: int) -> float:
    """E[max of `ranks` Binomial(n, q)], written out."""
    def cdf(m):
        return sum(comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(m + 1))
    return sum(1 - cdf(m) ** ranks for m in range(n))


def _hypergeometric_max(experts: int, k: int, ranks: int) -> float:
    """E[max over ranks] of one token's k experts drawn without replacement from ranks x experts/ranks."""
    n = experts // ranks
    def at_most(m):
        ways = [1]
        for _ in range(ranks):
            ways = [sum(ways[i - j] * comb(n, j) for j in range(m + 1) if 0 <= i - j < len(ways)) for i in range(len(ways) + m)]
        return ways[k] / comb(experts, k) if k < len(ways) else 0.0
    return sum(1 - at_most(m) for m in range(k))


def test_one_token_of_qwen3_235b_over_8_ranks_loads_the_busiest_with_two_and_a_half_experts(catalog):
    model = catalog.models["qwen3-235b-a22b"]
    d = checked_deployment(model, Deployment(8, 8, 1, 8, 1, "fp8", "fp8"))
    busiest = float(busiest_rank_touched_fraction(model, d, 1.0)) * 16  # 128 experts over 8 ranks: 16 each
    assert busiest == pytest.approx(_binomial_max(16, 8 / 128, 8), rel=1e-12)
    assert busiest == pytest.approx(2.51, abs=0.005)
    assert busiest == pytest.approx(_hypergeometric_max(128, 8, 8), rel=0.01)  # 2.53 without replacement
    assert float(experts_touched_fraction(model, 1.0)) * 16 == pytest.approx(1.0)  # the average rank


def test_the_extra_bytes_are_the_busiest_ranks_experts_beyond_the_average(catalog):
    model = catalog.models["qwen3-235b-a22b"]
    d = checked_deployment(model, Deployment(8, 8, 1, 8, 1, "fp8", "fp8"))
    held = resident_params_per_device(model, d)[EXPERTS]  # 16 experts' parameters, 1 B each in fp8
    extra = float(imbalance_bytes_per_step(model, d, 1.0))
    assert extra == pytest.approx(held * (_binomial_max(16, 1 / 16, 8) - 1.0) / 16, rel=1e-12)


def test_more_tokens_even_the_ranks_out_and_no_ep_means_no_imbalance(catalog):
    model = catalog.models["qwen3-235b-a22b"]
    d = checked_deployment(model, Deployment(8, 8, 1, 8, 1, "fp8", "fp8"))
    b = np.array([1.0, 8.0, 64.0, 1024.0])
    excess = busiest_rank_touched_fraction(model, d, b) - experts_touched_fraction(model, b)
    assert np.all(excess >= 0) and np.all(np.diff(excess / experts_touched_fraction(model, b)) < 0)
    assert excess[-1] < 1e-6  # every expert touched on every rank
    no_ep = checked_deployment(model, Deployment(8, 8, 1, 1, 1, "fp8", "fp8"))
    assert np.all(imbalance_bytes_per_step(model, no_ep, b) == 0)
    dense = catalog.models["llama-3.1-70b"]
    assert np.all(imbalance_bytes_per_step(dense, checked_deployment(dense, Deployment(8, 8)), b) == 0)


def test_the_estimate_reads_the_busiest_rank_and_the_bound_the_average(catalog):
    model, device = catalog.models["qwen3-235b-a22b"], catalog.devices["h200-sxm"]
    serving = load_serving_inputs(catalog)
    d = checked_deployment(model, Deployment(8, 8, 1, 8, 1, "fp8", "fp8"))
    step = device_step(model, d, 2048.0, 1.0, device.hbm_bandwidth, device.dense_flops["fp8"], serving.link_for(device, d),
                       serving.collective_latency, serving.activation_bytes, serving.hbm_bandwidth_efficiency)
    memory = (step.weight_bytes + step.kv_bytes) / device.hbm_bandwidth
    assert float(step.bound) == pytest.approx(float(max(memory, step.compute_time)))
    busiest = (step.weight_bytes + step.kv_bytes + step.imbalance_bytes) / device.hbm_bandwidth
    assert float(step.estimate) == pytest.approx(float(busiest / serving.hbm_bandwidth_efficiency + step.collectives_time))
    assert float(step.imbalance_bytes) > 0


def test_whole_token_counts_give_the_binomial_written_out_and_fractional_ones_its_interpolation(catalog):
    """The values kept per EP at whole token counts are the sum written out; at a PP microbatch's fractional count
    the excess over q is within 0.05% of the written-out one and 1e-4 of an expert; at once for many batches as for
    one."""
    model = catalog.models["qwen3-235b-a22b"]
    d = checked_deployment(model, Deployment(8, 8, 1, 8, 1, "fp8", "fp8"))
    tokens = np.array([1.0, 1.125, 1.5, 2.5, 7.0, 33.25, 64.0, 120.5])
    swept = busiest_rank_touched_fraction(model, d, tokens)
    for t, value in zip(tokens, swept):
        q = 1 - (1 - 8 / 128) ** t
        written_out = _binomial_max(16, q, 8) / 16
        if t == int(t):
            assert value == pytest.approx(written_out, rel=1e-12)
        else:
            assert abs(value - written_out) <= 5e-4 * (written_out - q) and abs(value - written_out) * 16 <= 1e-4
        assert value == float(busiest_rank_touched_fraction(model, d, t))
