"""The four constraints of a memory tier (kvwall.tier.constraints) and the tier economics (kvwall.tier.economics), against
the numbers the SoK and the published tier economics print, and the properties each constraint must have."""

from dataclasses import replace

import numpy as np
import pytest
import yaml

from kvwall.inputs.errors import SpecError
from kvwall.tier.economics import block_bytes, linear_regenerate_time, move_time
from kvwall.tier.inputs import load_tiers
from kvwall.tier.constraints import (
    DecodeSet,
    Prefetch,
    Residency,
    Tier,
    TierScenario,
    capacity,
    hbm_side,
    hiding,
    ingress,
    slope_bandwidth,
    transfer_windows,
)
from kvwall.units import to_base


@pytest.fixture(scope="module")
def tiers(root, catalog):
    return load_tiers(root / "config" / "tiers.yaml", catalog)


@pytest.fixture(scope="module")
def w1(catalog, llama70):
    """Llama-3-70B on B200 at W1 (batch 1, 128k), 2.5% of the KV behind a 64 GB/s link, one transfer per layer."""
    a = catalog.assumptions
    return TierScenario(
        model=llama70, device=catalog.devices["b200"],
        tier=Tier(capacity=2e12, bandwidth=64e9, latency=2e-6),
        decode_set=DecodeSet(batch=1, context=128_000),
        residency=Residency(tier_fraction=0.025, layers_per_transfer=1),
        prefetch=Prefetch(depth=1, slack=250e-6),
        weight_bytes_per_param=a.weight_bytes_per_param, kv_bytes_per_element=a.kv_bytes_per_element,
        compute_precision=a.compute_precision,
    )


def with_fraction(scenario, fraction, layers_per_transfer=None):
    k = layers_per_transfer or scenario.residency.layers_per_transfer
    return replace(scenario, residency=Residency(fraction, k))


def at(scenario, bandwidth):
    return replace(scenario, tier=replace(scenario.tier, bandwidth=bandwidth))


# Constraint 1: capacity, relieved.

def test_capacity_without_the_tier_is_the_papers_s_cap(w1):
    """(192 GB - 140 GB) / 327,680 B = 158.7k tokens: the SoK's s_cap of 159k for Llama-3-70B on B200 (§3.4)."""
    c = capacity(w1)
    assert round(c.tokens_without / 1e3) == 159
    assert c.sequences_without == 1


def test_capacity_is_relieved_by_any_share_behind_the_tier(w1):
    assert capacity(w1).relieved
    assert capacity(w1).tokens_with == pytest.approx(capacity(w1).tokens_without / (1 - 0.025), rel=1e-3)


def test_capacity_grows_with_the_share_behind_the_tier_until_the_tier_is_full(w1):
    tokens = [capacity(with_fraction(w1, f)).tokens_with for f in (0.1, 0.3, 0.6, 0.9)]
    assert tokens == sorted(tokens)
    everything = capacity(with_fraction(w1, 1.0))
    assert everything.tokens_with == pytest.approx(w1.tier.capacity / 327_680)


def test_capacity_relief_is_capped_by_the_tier(w1):
    small_tier = replace(w1, tier=replace(w1.tier, capacity=1e9))
    c = capacity(with_fraction(small_tier, 0.9))
    assert c.tokens_with == pytest.approx(1e9 / (0.9 * 327_680))
    assert not c.relieved


# Constraint 2: HBM-side bandwidth, unchanged.

def test_hbm_side_step_time_is_the_papers_table5_and_unchanged_by_the_tier(w1):
    """SoK Table 5: BF16 baseline at 128k on B200, T_step = 181.9 GB / 8 TB/s = 22.7 ms; whatever sits in the tier."""
    times = {f: hbm_side(with_fraction(w1, f)).step_time for f in (0.01, 0.5, 0.99)}
    assert round(times[0.01] * 1e3, 1) == 22.7
    assert len(set(times.values())) == 1
    assert round(hbm_side(w1).read_bytes / 1e9, 1) == 181.9


def test_the_tier_only_adds_the_prefetched_writes_into_hbm(w1):
    assert hbm_side(w1).tier_write_bytes == pytest.approx(0.025 * 128_000 * 327_680)


def test_reported_slopes_as_bandwidths():
    """16.34 and 17.58 ms/GiB are 65.7 and 61.1 GB/s; their ratio 1.076 is within 8% (published claims)."""
    hf, vllm = (slope_bandwidth(to_base(v, "ms/GiB")) for v in (16.34, 17.58))
    assert round(hf / 1e9, 1) == 65.7
    assert round(vllm / 1e9, 1) == 61.1
    assert round(hf / vllm, 3) == 1.076
    assert hf / vllm - 1 < 0.08


# Constraint 3: tier ingress (sustainability), created.

def test_ingress_is_the_tier_share_of_active_kv_over_the_step(w1):
    g = ingress(w1)
    assert g.bytes_per_step == pytest.approx(0.025 * 41.94304e9)
    assert g.required_rate == pytest.approx(g.bytes_per_step / hbm_side(w1).step_time)
    assert round(g.required_rate / 1e9, 1) == 46.1


def test_ingress_holds_exactly_up_to_the_largest_fraction(w1):
    for bandwidth in (32e9, 64e9, 121e9):
        s = at(w1, bandwidth)
        f_max = ingress(s).max_fraction
        assert ingress(with_fraction(s, f_max * (1 - 1e-9))).holds
        assert not ingress(with_fraction(s, f_max * (1 + 1e-6))).holds


def test_largest_fraction_behind_a_cxl_link_is_a_few_percent(w1):
    """At 121 GB/s against 8 TB/s of HBM, W1 tolerates 6.6% of its KV behind the link; at 32 GB/s, 1.7%."""
    assert round(ingress(at(w1, 121e9)).max_fraction * 100, 1) == 6.6
    assert round(ingress(at(w1, 32e9)).max_fraction * 100, 1) == 1.7


def test_a_link_bound_step_takes_the_link_time(w1):
    g = ingress(at(w1, 32e9))
    assert not g.holds
    assert g.link_bound_step_time == pytest.approx(g.bytes_per_step / 32e9)


# Constraint 4: transfer latency (hiding), created.

def test_windows_are_the_compute_overlapped_plus_slack_for_the_first():
    compute = np.full(6, 1.0)
    windows = transfer_windows(np.arange(6), compute, Prefetch(depth=2, slack=0.5))
    assert windows.tolist() == [0.5, 1.5, 2.0, 2.0, 2.0, 2.0]


def test_each_transfer_is_latency_plus_size_over_bandwidth(w1):
    d = hiding(w1)
    assert len(d.layers) == 80
    assert d.times == pytest.approx(2e-6 + 0.025 * 41.94304e9 / 80 / 64e9)
    assert d.all_hidden


def test_aggregate_suffices_and_a_transfer_still_stalls(w1):
    """The same bytes in transfers of two layers each: the aggregate rate is unchanged and holds at 64 GB/s, but each
    transfer now takes longer than the one layer of compute it overlaps."""
    bursty = with_fraction(w1, 0.025, layers_per_transfer=2)
    assert ingress(bursty).required_rate == pytest.approx(ingress(w1).required_rate)
    assert ingress(bursty).holds
    assert not hiding(bursty).all_hidden
    assert hiding(bursty).late_transfers == 40


def test_latency_alone_can_break_hiding_while_the_aggregate_holds(w1):
    slow_setup = replace(w1, tier=replace(w1.tier, latency=100e-6))
    assert ingress(slow_setup).holds
    assert not hiding(slow_setup).all_hidden


def test_a_first_transfer_with_no_compute_to_overlap_stalls(w1):
    cold = replace(w1, prefetch=Prefetch(depth=1, slack=0.0))
    d = hiding(cold)
    assert ingress(cold).holds
    assert d.late_transfers == 1 and not d.hidden[0]


def test_transfers_hidden_one_by_one_while_the_aggregate_fails(w1):
    deep = replace(with_fraction(w1, 0.05), prefetch=Prefetch(depth=4, slack=1e-3))
    assert hiding(deep).all_hidden
    assert not ingress(deep).holds


def test_configured_scenarios_show_both_separations(tiers):
    pairs = tiers.scenario("w1-layer-pairs", "cxl-mid")
    assert ingress(pairs).holds and not hiding(pairs).all_hidden
    deep = tiers.scenario("w1-deep-prefetch", "cxl-mid")
    assert hiding(deep).all_hidden and not ingress(deep).holds


# Tier economics (CANONICAL-NUMBERS §4).

def test_a_block_is_16_tokens_of_llama_70b(llama70):
    """16 x 327,680 B = 5,242,880 B: 5.24 MB, or the 5.00 MiB the published economics print."""
    block = block_bytes(llama70, 16, 2.0)
    assert block == 5_242_880
    assert round(block / 1e6, 2) == 5.24
    assert block / 2**20 == 5.0


@pytest.mark.parametrize("bandwidth, printed_us", [(121e9, 43), (64e9, 82), (32e9, 164)])
def test_moving_a_block_matches_the_published_times(llama70, bandwidth, printed_us):
    assert round(float(move_time(block_bytes(llama70, 16, 2.0), bandwidth)) * 1e6) == printed_us


def test_regenerating_a_block_matches_the_published_times_only_at_half_the_dense_rate(llama70):
    """9 / 11 / 18 ms at 50 / 40 / 25% MFU come from 495 TFLOP/s; at H100's dense 989.5 they halve."""
    printed = {0.50: 9, 0.40: 11, 0.25: 18}
    dense = {0.50: 4.53, 0.40: 5.66, 0.25: 9.06}
    for mfu, ms in printed.items():
        assert round(float(linear_regenerate_time(llama70, 16, 495e12, mfu)) * 1e3) == ms
        assert round(float(linear_regenerate_time(llama70, 16, 989.5e12, mfu)) * 1e3, 2) == dense[mfu]


def test_the_218x_example_is_about_110x_at_the_dense_rate(llama70):
    block = block_bytes(llama70, 16, 2.0)
    ratio_published_rate = float(linear_regenerate_time(llama70, 16, 495e12, 0.25) / move_time(block, 64e9))
    ratio_dense = float(linear_regenerate_time(llama70, 16, 989.5e12, 0.25) / move_time(block, 64e9))
    assert round(ratio_published_rate) == 221
    assert round(ratio_dense) == 111


# config/tiers.yaml: bad input stops with the file, the key and the reason.

@pytest.mark.parametrize("edit, key", [
    (lambda d: d["scenarios"]["w1-per-layer"].update(model="llama-9"), "scenarios.w1-per-layer.model"),
    (lambda d: d["economics"]["links"].append("token-ring"), "economics.links[5]"),
    (lambda d: d["scenarios"]["w1-per-layer"]["residency"]["tier_fraction"].update(value=0), "scenarios.w1-per-layer.residency.tier_fraction.value"),
    (lambda d: d["figure"].update(hiding_link="w1-per-layer"), "figure.hiding_link"),
])
def test_bad_tier_input_names_file_and_key(tmp_path, root, catalog, edit, key):
    document = yaml.safe_load((root / "config" / "tiers.yaml").read_text())
    edit(document)
    path = tmp_path / "tiers.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(SpecError) as error:
        load_tiers(path, catalog)
    assert error.value.key == key and error.value.file == str(path)
