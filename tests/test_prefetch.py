"""The per-layer prefetch simulation (kvwall.tier.prefetch): hand-computed timelines, and the two separations of
sustainability and hiding (CANONICAL-NUMBERS §5)."""

import numpy as np
import pytest

from kvwall.tier.prefetch import simulate, simulate_scenario
from kvwall.tier.inputs import load_tiers
from kvwall.tier.constraints import Prefetch, hiding, ingress, transfer_windows

ONES = np.ones(8)


@pytest.fixture(scope="module")
def tiers(root, catalog):
    return load_tiers(root / "config" / "tiers.yaml", catalog)


def test_no_transfers_no_stalls():
    t = simulate(ONES, np.array([], dtype=int), np.array([]), 1.0, 0.0, Prefetch(1, 0.0))
    assert t.step_time == 8.0 and t.stall_time == 0.0 and t.late_transfers == 0


@pytest.mark.parametrize("slack, stall", [(1.0, 0.0), (0.5, 0.25)])
def test_a_transfer_arrives_latency_plus_size_over_bandwidth_after_its_issue(slack, stall):
    t = simulate(ONES[:1], np.array([0]), np.array([0.5]), 1.0, 0.25, Prefetch(1, slack))
    assert t.arrival[0] == -slack + 0.75
    assert t.stall_time == stall


def test_sustained_yet_stalling_bursty_transfers():
    """Eight unit layers, a 1.5-unit transfer every other layer on a unit link, prefetched one layer ahead: the link
    carries 6 units in 8 (sustained), but each transfer needs 1.5 against a window of 1 and stalls compute by 0.5."""
    layers, sizes = np.array([0, 2, 4, 6]), np.full(4, 1.5)
    t = simulate(ONES, layers, sizes, 1.0, 0.0, Prefetch(1, 1.5))
    assert sizes.sum() / ONES.sum() <= 1.0
    assert t.stalls.tolist() == [0.0, 0.5, 0.5, 0.5]
    assert t.step_time == 9.5 and t.stall_time == 1.5
    assert t.link_utilization == pytest.approx(6.0 / 11.0)
    assert t.queue_waits.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_hidden_transfers_on_an_oversubscribed_link_queue_up():
    """A 1.5-unit transfer for every unit layer, prefetched four layers ahead: alone, each fits its window of 4; together
    they need 1.5 units of link per unit of compute, so they queue and the queue grows until compute stalls."""
    layers, sizes = np.arange(8), np.full(8, 1.5)
    windows = transfer_windows(layers, ONES, Prefetch(4, 4.0))
    assert np.all(1.5 <= windows)
    t = simulate(ONES, layers, sizes, 1.0, 0.0, Prefetch(4, 4.0))
    assert t.queue_waits.tolist() == [0.0, 1.5, 3.0, 4.5, 2.0, 2.5, 3.0, 3.5]
    assert t.stalls.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5]
    assert t.step_time == 9.0 and t.late_transfers == 2


def test_the_simulation_is_deterministic(tiers):
    scenario = tiers.scenario("w1-deep-prefetch", "cxl-mid")
    a, b = simulate_scenario(scenario), simulate_scenario(scenario)
    for field in ("compute_start", "compute_end", "issue", "link_start", "arrival"):
        assert np.array_equal(getattr(a, field), getattr(b, field))


def test_without_contention_each_stall_is_the_isolated_shortfall(tiers):
    """One transfer in flight at a time: the simulated stall of each equals latency + size / B minus its window."""
    scenario = tiers.scenario("w1-layer-pairs", "cxl-mid")
    d, t = hiding(scenario), simulate_scenario(scenario)
    assert t.stalls == pytest.approx(np.maximum(d.times - d.windows, 0.0), abs=1e-12)


def test_configured_bursty_scenario_stalls_at_a_satisfactory_average_rate(tiers):
    scenario = tiers.scenario("w1-layer-pairs", "cxl-mid")
    t = simulate_scenario(scenario)
    assert ingress(scenario).holds
    assert t.late_transfers == len(t.layers) == 40
    assert t.link_utilization < 0.6
    assert round(t.stall_time * 1e3, 2) == 5.13


def test_configured_scenario_at_the_fast_link_neither_stalls_nor_queues(tiers):
    t = simulate_scenario(tiers.scenario("w1-layer-pairs", "cxl-3-x16"))
    assert t.late_transfers == 0 and t.stall_time == pytest.approx(0.0, abs=1e-12)


def test_configured_deep_prefetch_hides_each_transfer_yet_the_queue_grows(tiers):
    scenario = tiers.scenario("w1-deep-prefetch", "cxl-mid")
    t = simulate_scenario(scenario)
    assert hiding(scenario).all_hidden and not ingress(scenario).holds
    assert t.late_transfers > 0
    waits = t.queue_waits[scenario.prefetch.depth:]
    assert np.all(np.diff(waits) >= -1e-12) and waits[-1] > waits[0]
