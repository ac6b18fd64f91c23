"""The format claim's speedups held out (kvwall.validation.held_out_claim): folds, fits, properties."""

import numpy as np
import pandas as pd
import pytest

from kvwall.model.decode_costs import decode_step
from kvwall.model.engine_constants import EngineConstants
from kvwall.units import MS, US
from kvwall.validation.calibration import calibrate
from kvwall.validation.estimate_error import grouped_folds
from kvwall.validation.held_out_claim import held_out_speedups, left_out_constants, pair_folds
from kvwall.validation.points import GROUP

TRUE = EngineConstants(fixed_step=2 * MS, hbm_fraction=0.6, flop_fraction=0.5, collective_latency=10 * US,
                       first_token_fixed=50 * MS)


def _points(n: int = 60, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``n`` fp8 points and their fp4 twins (half the weight bytes) on one vllm engine, each pair its own isl; the
    measured TPOT is the step at TRUE with a few percent of noise; the pairs, wider first."""
    rng = np.random.default_rng(seed)
    wide = pd.DataFrame({
        "backend": "vllm", "mode": "agg", "model": "m", "device": "b200", "weight_format": "fp8", "tp": 1, "pp": 1,
        "dp": 1, "moe_tp": 1, "moe_ep": 1, "isl": np.arange(n) * 64.0 + 128.0, "osl": 1000.0,
        "running_batch": rng.uniform(1, 64, n), "pipeline_idle": 1.0, "hbm_bandwidth": 8e12, "peak_flops": 2e15,
        "weight_read_per_device": rng.uniform(10e9, 80e9, n), "kv_read_per_device": rng.uniform(1e9, 40e9, n),
        "stored_kv_ratio": 1.0, "imbalance_read_per_device": 0.0, "flops_per_device": rng.uniform(1e11, 2e12, n),
        "expert_ranks": 1.0, "dispatch_load": 0.0, "dispatch_s": 0.0, "collective_bytes_s": rng.uniform(0, 2, n) * MS,
        "collective_messages": rng.choice([0.0, 160.0, 320.0], n), "prefill_flops_per_device": rng.uniform(1e13, 1e14, n),
        "prefill_collectives_s": 0.0, "replica_prefill_flops": 0.0, "layers_per_step": rng.choice([32.0, 80.0], n),
        "sequences_per_rank": 0.0, "prompt_steps": 0.0, "fp8_gemms": 1.0, "fp4_gemms": 0.0,
        "gemm_columns": 2048.0, "prefill_weight_read": 0.0})
    wide["sequences_per_rank"] = wide["running_batch"]
    narrow = wide.assign(weight_format="fp4", weight_read_per_device=wide["weight_read_per_device"] / 2, fp8_gemms=0.0,
                         fp4_gemms=1.0)
    points = pd.concat([wide.assign(id=[f"w{i}" for i in range(n)]), narrow.assign(id=[f"n{i}" for i in range(n)])],
                       ignore_index=True)
    tpot = decode_step(points, TRUE) * rng.normal(1.0, 0.03, len(points)) / MS
    measured = pd.DataFrame({"tpot": tpot, "ttft": 100.0}, index=points.index)
    pairs = pd.DataFrame({"backend": "vllm", "id_wide": [f"w{i}" for i in range(n)],
                          "id_narrow": [f"n{i}" for i in range(n)]})
    return points, measured, pairs


def test_every_pair_is_priced_with_its_folds_left_out():
    points, measured, pairs = _points()
    held = held_out_speedups(pairs, points, measured, tokens=1.0)
    folds = pair_folds(pairs, points)
    assert held["held_out_speedup"].notna().all()
    assert (held["folds_left_out"] == np.where(folds["fold_wide"] == folds["fold_narrow"], 1, 2)).all()
    # the two points of a pair differ in weight format: two groups, so both fold cases occur
    assert set(held["folds_left_out"]) == {1, 2}
    # halving the weight bytes speeds a step up by more than 1 and less than 2
    assert ((held["held_out_speedup"] > 1.0) & (held["held_out_speedup"] < 2.0)).all()


def test_a_pair_is_priced_with_constants_fitted_without_its_points():
    points, measured, pairs = _points()
    folds = grouped_folds(points, GROUP)
    first = pair_folds(pairs, points).iloc[0]
    left_out = frozenset((int(first["fold_wide"]), int(first["fold_narrow"])))
    constants = left_out_constants(points, measured, 1.0, "vllm", folds, left_out)
    train = points[~folds.isin(left_out)]
    assert not train["id"].isin(["w0", "n0"]).any()
    refit = calibrate(train, measured.loc[train.index, "tpot"].to_numpy() * MS, 1.0, "vllm",
                      measured.loc[train.index, "ttft"].to_numpy() * MS).constants
    assert constants == refit
    in_sample = calibrate(points, measured["tpot"].to_numpy() * MS, 1.0, "vllm", measured["ttft"].to_numpy() * MS)
    assert constants != in_sample.constants  # fewer, noisy points: other constants
    # both fits recover the constants the points were made with, to the noise
    assert constants.hbm_fraction == pytest.approx(TRUE.hbm_fraction, rel=0.05)
    step = decode_step(points.iloc[[0, 60]], constants)
    held = held_out_speedups(pairs, points, measured, tokens=1.0)
    assert held.loc[0, "held_out_speedup"] == pytest.approx(step[0] / step[1], rel=1e-12)


def test_an_engine_with_too_few_points_left_is_not_priced():
    points, measured, pairs = _points(n=12)
    held = held_out_speedups(pairs, points, measured, tokens=1.0)
    assert held["held_out_speedup"].isna().all()  # 24 points, under 20 once a fold or two is out


def test_the_cross_validations_fold_constants_price_the_one_fold_pairs_as_a_refit_would():
    from kvwall.validation.estimate_error import held_out

    points, measured, pairs = _points()
    fold_fits = {}
    held_out(points, measured, 1.0, grouped_folds(points), fold_fits)
    assert sorted(fold_fits) == [("vllm", fold) for fold in range(5)]
    refit = held_out_speedups(pairs, points, measured, tokens=1.0)
    reused = held_out_speedups(pairs, points, measured, tokens=1.0, fold_fits=fold_fits)
    pd.testing.assert_frame_equal(reused, refit)
    # and the one-fold pairs do read them: other constants for those folds give other speedups
    other = {key: EngineConstants(0.0, 1.0, 1.0, 0.0) for key in fold_fits}
    moved = held_out_speedups(pairs, points, measured, tokens=1.0, fold_fits=other)
    one_fold = refit["folds_left_out"] == 1
    assert (moved.loc[one_fold, "held_out_speedup"] != refit.loc[one_fold, "held_out_speedup"]).all()
    assert moved.loc[~one_fold].equals(refit.loc[~one_fold])
