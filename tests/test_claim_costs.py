"""The format claim priced with calibrated named costs (kvwall.validation.claim_costs), by hand and as properties."""

import math

import numpy as np
import pandas as pd
import pytest

from kvwall.model.engine_constants import EngineConstants
from kvwall.units import MS, US
from kvwall.validation.claim_costs import PARTS, amdahl_ceiling, claim_cost_summary, claim_costs


class Fitted:
    constants = EngineConstants(fixed_step=2 * MS, hbm_fraction=0.5, flop_fraction=0.5, collective_latency=10 * US)


def _point(**values) -> dict:
    """A point on 2 TB/s and 1 PFLOP/s (realized: 1 TB/s, 0.5 PFLOP/s), fp8 weights of 8 GB a step, an agg engine."""
    return {"backend": "vllm", "mode": "agg", "osl": 1000.0, "running_batch": 100.0, "pipeline_idle": 1.0,
            "hbm_bandwidth": 2e12, "peak_flops": 1e15, "weight_read_per_device": 8e9, "kv_read_per_device": 2e9,
            "stored_kv_ratio": 1.0, "imbalance_read_per_device": 1e9, "flops_per_device": 4e12,
            "expert_ranks": 4.0, "dispatch_load": 2 * math.log(4.0), "dispatch_s": 0.5 * MS,
            "collective_bytes_s": 3 * MS, "collective_messages": 100.0, "prefill_flops_per_device": 1e13,
            "prefill_collectives_s": 10 * MS, "layers_per_step": 32.0, "sequences_per_rank": 100.0, "fp8_gemms": 1.0,
            "fp4_gemms": 0.0, "gemm_columns": 2048.0, **values}


def _pair(wide: dict, narrow: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    points = pd.DataFrame([{**wide, "id": "wide"}, {**narrow, "id": "narrow"}], index=[7, 9])
    pairs = pd.DataFrame({"backend": ["vllm"], "device": ["b200"], "weight_format_wide": ["fp8"],
                          "weight_format_narrow": ["fp4"], "regime_wide": ["weight-bound"], "id_wide": ["wide"],
                          "id_narrow": ["narrow"], "measured_speedup": [1.1], "predicted_speedup": [1.6]})
    return pairs, points


def test_the_amdahl_ceiling_by_hand():
    assert amdahl_ceiling(0.5, 2.0) == pytest.approx(4 / 3)  # 1 / (0.5 + 0.25)
    assert amdahl_ceiling(0.0, 2.0) == 1.0  # nothing shrinks: no speedup
    assert amdahl_ceiling(1.0, 1.78) == pytest.approx(1.78)  # everything shrinks: the whole ratio
    assert amdahl_ceiling(18 / 41, 2.0) == pytest.approx(41 / 32)


def test_one_pair_priced_by_hand():
    pairs, points = _pair(_point(), _point(weight_read_per_device=4e9, imbalance_read_per_device=0.5e9, fp8_gemms=0.0,
                                           fp4_gemms=1.0))
    priced = claim_costs(pairs, points, {"vllm": Fitted()}, tokens=1.0).iloc[0]
    # by hand (ms), wider: weights 8e9 / 1e12 = 8, expert reads 1, KV 2, compute max(0, 4e12 / 5e14 - 11e-3) = 0,
    # collectives 3 + 100 x 0.01 = 4, dispatch 0.5 x sqrt(2 ln 4 / (2 ln 4)) = 0.5, fixed 2,
    # prefill 100 / 1000 x (1e13 / 5e14 + 0.01) = 3: 20.5 ms
    wide = {"weights": 8, "expert_reads": 1, "kv": 2, "compute": 0, "collectives": 4, "dispatch": 0.5, "fixed": 2,
            "prefill": 3}
    # narrower: weights 4, expert reads 0.5, compute now binds past the bytes: 8 - 6.5 = 1.5; the rest as wide: 17.5 ms
    narrow = {**wide, "weights": 4, "expert_reads": 0.5, "compute": 1.5}
    for name in PARTS:
        assert priced[f"{name}_wide"] == pytest.approx(wide[name]), name
        assert priced[f"{name}_narrow"] == pytest.approx(narrow[name]), name
    assert priced["estimate_wide_ms"] == pytest.approx(20.5) and priced["estimate_narrow_ms"] == pytest.approx(17.5)
    assert priced["calibrated_speedup"] == pytest.approx(41 / 35)
    assert priced["weight_ratio"] == pytest.approx(2.0)
    assert priced["shrinking_share"] == pytest.approx(9 / 20.5)  # weights and expert reads of the wider step
    assert priced["ceiling"] == pytest.approx(41 / 32)  # 1 / (1 - 18/41 + 9/41); compute's growth keeps it below
    summary = claim_cost_summary(claim_costs(pairs, points, {"vllm": Fitted()}, tokens=1.0))
    assert len(summary) == 3  # the group, pooled over engines and devices, then over formats too
    assert summary["share_collectives"].tolist() == pytest.approx([4 / 20.5] * 3)
    assert summary["median_calibrated_speedup"].tolist() == pytest.approx([41 / 35] * 3)


def test_a_pair_of_an_engine_without_constants_is_left_out():
    pairs, points = _pair(_point(), _point(weight_read_per_device=4e9))
    other = pairs.assign(backend="sglang", id_wide="other wide", id_narrow="other narrow")
    others = points.assign(backend="sglang", id=["other wide", "other narrow"]).set_axis([1, 2])
    priced = claim_costs(pd.concat([pairs, other]), pd.concat([points, others]), {"vllm": Fitted()}, tokens=1.0)
    assert priced["id_wide"].tolist() == ["wide"]


@pytest.mark.parametrize("seed", range(5))
def test_narrower_weights_never_speed_up_more_than_their_bytes_and_the_shares_add_up(seed):
    rng = np.random.default_rng(seed)
    n = 200
    wide = pd.DataFrame({name: rng.uniform(0.2, 5.0, n) * value for name, value in _point().items()
                         if isinstance(value, float)}).assign(
        backend="vllm", mode=rng.choice(["agg", "disagg"], n), expert_ranks=rng.choice([1.0, 4.0, 8.0], n),
        pipeline_idle=rng.uniform(1.0, 2.0, n))
    ratio = rng.uniform(1.05, 4.0, n)
    narrow = wide.assign(weight_read_per_device=wide["weight_read_per_device"] / ratio,
                         imbalance_read_per_device=wide["imbalance_read_per_device"] / ratio)
    points = pd.concat([wide.assign(id=[f"w{i}" for i in range(n)]), narrow.assign(id=[f"n{i}" for i in range(n)])],
                       ignore_index=True)
    pairs = pd.DataFrame({"backend": "vllm", "id_wide": [f"w{i}" for i in range(n)],
                          "id_narrow": [f"n{i}" for i in range(n)]})
    priced = claim_costs(pairs, points, {"vllm": Fitted()}, tokens=1.0)
    assert priced["weight_ratio"].to_numpy() == pytest.approx(ratio)
    speedup = priced["calibrated_speedup"]
    assert (speedup >= 1.0 - 1e-12).all()  # a compute-bound pair is 1 to the last bit or two
    assert (speedup <= priced["weight_ratio"] * (1 + 1e-12)).all()
    # the same peak at both formats: compute only grows as the bytes shrink, so the ceiling holds
    assert (speedup <= priced["ceiling"] * (1 + 1e-12)).all()
    shares = priced[[f"share_{name}" for name in PARTS]].sum(axis=1)
    assert shares.to_numpy() == pytest.approx(np.ones(n))
