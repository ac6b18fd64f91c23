"""kvwall.validation.offsets: nested shrunk offsets of ln(measured / estimate), by hand on three points, and their
limits."""

import math

import numpy as np
import pandas as pd
import pytest

from kvwall.validation.offsets import (LEVELS, fit_offsets, fitted_offsets, layout_name, offsets_from, point_keys,
                                      sequences_per_rank)

#: Three points of one engine, mode and model: two on d1 at one layout, one on d2 at another, all fp8.
KEYS = pd.DataFrame({"backend": "e", "mode": "agg", "model": "m", "device": ["d1", "d1", "d2"],
                     "layout": ["8 GPUs TP8", "8 GPUs TP8", "4 GPUs TP4"], "weight_format": "fp8"})
RESIDUALS = {"TPOT": pd.Series([0.3, 0.5, -0.2])}
#: All three at 8 sequences per rank: no slope to fit.
EIGHT = pd.Series([8.0, 8.0, 8.0])
#: No prefill stalls any of their steps (a stretch of 1): no prefill slope to fit.
UNSTRETCHED = pd.Series([1.0, 1.0, 1.0])


def test_three_points_by_hand():
    built = fit_offsets(KEYS, RESIDUALS, EIGHT, UNSTRETCHED, 1.0)
    model = built[built["level"] == "model"].iloc[0]
    table = built[built["level"] != "model"].set_index(["level", "device"])
    # the model: 0.6 over 3 points + 1 -> 0.15; left 0.15, 0.35, -0.35
    # the device: d1 0.5 / 3 = 0.1667, d2 -0.35 / 2 = -0.175; left -0.0167, 0.1833, -0.175
    # the layout (one per device): d1 0.1667 / 3 = 0.0556, d2 -0.175 / 2 = -0.0875; left -0.0722, 0.1278, -0.0875
    # the weight format: d1 0.0556 / 3 = 0.0185, d2 -0.0875 / 2 = -0.04375
    assert model["points"] == 3 and model["factor"] == round(math.exp(0.15), 2) and pd.isna(model["device"])
    d1, d2 = table.loc[("device", "d1")], table.loc[("device", "d2")]
    assert (d1["factor"], d2["factor"]) == (round(math.exp(0.5 / 3), 2), round(math.exp(-0.175), 3))
    assert (table.loc[("layout", "d1"), "factor"], table.loc[("layout", "d2"), "factor"]) == (
        round(math.exp(0.5 / 9), 2), round(math.exp(-0.0875), 3))
    assert (table.loc[("weight format", "d1"), "factor"], table.loc[("weight format", "d2"), "factor"]) == (
        round(math.exp(0.5 / 27), 2), round(math.exp(-0.04375), 3))
    # the model's 80% interval: residuals 0.3, 0.5, -0.2 about their mean 0.2, s^2 = 0.26 / 2; half 1.2816 s / 2
    half = 1.2815515655446004 * math.sqrt(0.13) / 2
    assert (model["factor_p10"], model["factor_p90"]) == (round(math.exp(0.15 - half), 3),
                                                                        round(math.exp(0.15 + half), 2))
    # a point's factor: the product of its keys' rounded factors
    assert set(built["slope"]) == {1.0} and set(built["sequences"]) == {8.0}
    lookup = fitted_offsets(KEYS, RESIDUALS, EIGHT, UNSTRETCHED, 1.0)
    assert lookup.factor("TPOT", tuple(KEYS.iloc[0]), 8.0, 1.0) == pytest.approx(1.16 * 1.18 * 1.06 * 1.02, rel=1e-12)
    assert lookup.levels_of("TPOT", tuple(KEYS.iloc[2]), 8.0, 1.0) == pytest.approx(
        {"model": 1.16, "device": 0.839, "layout": 0.916, "weight format": 0.957}, rel=1e-12)


def test_a_key_the_points_do_not_hold_falls_back_to_the_coarser_levels():
    lookup = fitted_offsets(KEYS, RESIDUALS, EIGHT, UNSTRETCHED, 1.0)
    assert lookup.factor("TPOT", ("e", "agg", "m", "d3", "8 GPUs TP8", "fp8"), 8.0, 1.0) == pytest.approx(1.16, rel=1e-12)
    assert lookup.factor("TPOT", ("e", "agg", "m", "d1", "2 GPUs TP2", "fp8"), 8.0, 1.0) == pytest.approx(1.16 * 1.18,
                                                                                                    rel=1e-12)
    # another model, mode or engine: no offset at all, and the lookup says the model is not held
    for key in (("e", "agg", "other", "d1"), ("e", "disagg", "m", "d1"), ("f", "agg", "m", "d1")):
        assert lookup.factor("TPOT", key, 8.0, 1.0) == 1.0 and lookup.levels_of("TPOT", key, 8.0, 1.0) == {}
        assert not lookup.holds("TPOT", key)
    assert lookup.holds("TPOT", ("e", "agg", "m")) and lookup.factor("TTFT", tuple(KEYS.iloc[0]), 8.0, 1.0) == 1.0
    # a key given without its weight format stops at its layout; an array of sequences gives an array
    assert lookup.factor("TPOT", tuple(KEYS.iloc[0])[:5], 8.0, 1.0) == pytest.approx(1.16 * 1.18 * 1.06, rel=1e-12)
    assert lookup.factor("TPOT", tuple(KEYS.iloc[0]), np.array([1.0, 64.0]), 1.0) == pytest.approx(
        [1.16 * 1.18 * 1.06 * 1.02] * 2, rel=1e-12)


def test_a_slope_by_hand_kept_within_the_measured_sequences():
    keys, residuals, sequences = KEYS.iloc[:2], {"TPOT": pd.Series([0.1, 0.5])}, pd.Series([2.0, 8.0])
    model = fit_offsets(keys, residuals, sequences, UNSTRETCHED.iloc[:2], 1.0).iloc[0]
    # the offset: 0.6 / (2 + 1) = 0.2, leaving -0.1 and 0.3; log2 sequences 1 and 3 about their mean 2: the slope
    # (-1 x -0.1 + 1 x 0.3) / (2 + 1) = 0.4 / 3 per doubling, at the mean of 4 sequences, from 2 to 8
    assert (model["level"], model["factor"], model["slope"]) == ("model", round(math.exp(0.2), 2),
                                                                 round(math.exp(0.4 / 3), 2))
    assert (model["sequences"], model["sequences_low"], model["sequences_high"]) == (4.0, 2.0, 8.0)
    lookup = fitted_offsets(keys, residuals, sequences, UNSTRETCHED.iloc[:2], 1.0)
    for sequences_at, doublings in ((4.0, 0), (8.0, 1), (64.0, 1), (2.0, -1), (1.0, -1), (5.0, math.log2(5 / 4))):
        assert lookup.levels_of("TPOT", ("e", "agg", "m"), sequences_at, 1.0)["model"] == pytest.approx(
            1.22 * 1.14 ** doublings, rel=1e-12)
    # a wider spread of sequences fits the same trend with less shrinkage: a larger slope
    wider = fit_offsets(keys, residuals, pd.Series([1.0, 16.0]), UNSTRETCHED.iloc[:2], 1.0).iloc[0]
    assert wider["slope"] > 1.0 and wider["factor"] == model["factor"]


def test_a_prefill_slope_by_hand_kept_within_the_measured_stretches():
    # two points at the same sequences, their steps stretched x1 and x4 by prefill: log2 stretch 0 and 2 about their
    # mean 1; the offset 0.6 / 3 = 0.2 leaves -0.1 and 0.3, no sequences slope, then the prefill slope
    # (-1 x -0.1 + 1 x 0.3) / (2 + 1) = 0.4 / 3 per doubling of the stretch, at the mean stretch x2, from x1 to x4
    keys, residuals, stretch = KEYS.iloc[:2], {"TPOT": pd.Series([0.1, 0.5])}, pd.Series([1.0, 4.0])
    model = fit_offsets(keys, residuals, EIGHT.iloc[:2], stretch, 1.0).iloc[0]
    assert (model["factor"], model["slope"], model["prefill_slope"]) == (round(math.exp(0.2), 2), 1.0,
                                                                         round(math.exp(0.4 / 3), 2))
    assert (model["prefill_stretch"], model["prefill_stretch_low"], model["prefill_stretch_high"]) == (2.0, 1.0, 4.0)
    lookup = fitted_offsets(keys, residuals, EIGHT.iloc[:2], stretch, 1.0)
    for stretch_at, doublings in ((2.0, 0), (4.0, 1), (16.0, 1), (1.0, -1), (3.0, math.log2(3 / 2))):
        assert lookup.levels_of("TPOT", ("e", "agg", "m"), 8.0, stretch_at)["model"] == pytest.approx(
            1.22 * 1.14 ** doublings, rel=1e-12)


def test_the_prefill_slope_takes_what_the_sequences_slope_left():
    # sequences 2 and 8 (log2 1 and 3) and stretches x1 and x4 (log2 0 and 2) rise together: the sequences slope
    # 0.4 / 3 takes the trend first (as in the slope by hand), leaving -0.1 + 0.4 / 3 and 0.3 - 0.4 / 3, and the
    # prefill slope is (-1 x 0.0333 + 1 x 0.1667) / 3 = 0.4 / 9
    model = fit_offsets(KEYS.iloc[:2], {"TPOT": pd.Series([0.1, 0.5])}, pd.Series([2.0, 8.0]), pd.Series([1.0, 4.0]),
                        1.0).iloc[0]
    assert (model["slope"], model["prefill_slope"]) == (round(math.exp(0.4 / 3), 2), round(math.exp(0.4 / 9), 2))
    # its interval: of a normal slope with that prior, from the level's pooled spread (none left here: no width)
    assert model["prefill_slope_p10"] == model["prefill_slope"] == model["prefill_slope_p90"]


def test_the_pseudo_count_shrinks_toward_no_offset():
    factors = [fitted_offsets(KEYS, RESIDUALS, EIGHT, UNSTRETCHED, k).factor("TPOT", tuple(KEYS.iloc[0]), 8.0, 1.0)
               for k in (0.001, 1, 3, 10, 1e6)]
    assert all(a > b for a, b in zip(factors, factors[1:])) and factors[-1] == 1.0
    # with next to no shrinkage one key of every point takes the points' mean and the finer levels are left nothing
    one = KEYS.iloc[:2]
    assert fitted_offsets(one, {"TPOT": RESIDUALS["TPOT"].iloc[:2]}, EIGHT.iloc[:2], UNSTRETCHED.iloc[:2], 1e-9).factor(
        "TPOT", tuple(one.iloc[0]), 8.0, 1.0) == pytest.approx(round(math.exp(0.4), 2), rel=1e-9)


def test_a_point_without_a_finite_residual_is_left_out():
    residuals = {"TPOT": pd.Series([0.3, np.nan, -np.inf])}
    table = fit_offsets(KEYS, residuals, EIGHT, UNSTRETCHED, 1.0)
    assert set(table["points"]) == {1} and table.loc[table["level"] == "model", "factor"].item() == round(math.exp(0.15), 2)


def test_the_table_read_back_is_the_lookup(tmp_path):
    sequences, stretch = pd.Series([2.0, 32.0, 8.0]), pd.Series([1.5, 1.1, 3.0])
    table = fit_offsets(KEYS, {"TPOT": RESIDUALS["TPOT"], "TTFT": -RESIDUALS["TPOT"]}, sequences, stretch, 3.0)
    assert set(table["level"]) == set(LEVELS) and len(table) == 2 * (1 + 2 + 2 + 2)
    table.to_csv(tmp_path / "offsets.csv", index=False)
    read = offsets_from(pd.read_csv(tmp_path / "offsets.csv", keep_default_na=False, na_values=[""]).fillna(""))
    built = fitted_offsets(KEYS, {"TPOT": RESIDUALS["TPOT"], "TTFT": -RESIDUALS["TPOT"]}, sequences, stretch, 3.0)
    at, stretched = np.array([1.0, 3.0, 100.0]), np.array([1.0, 2.0, 5.0])
    for key in map(tuple, KEYS.itertuples(index=False)):
        for quantity in ("TPOT", "TTFT"):
            assert read.factor(quantity, key, at, stretched) == pytest.approx(
                built.factor(quantity, key, at, stretched), rel=1e-12)
    assert len(set(np.round(built.factor("TPOT", tuple(KEYS.iloc[1]), 8.0, stretched), 12))) == 3  # the stretch counts
    # the lookup of whole frames is the lookup of each key
    frame = built.log_factors_of("TPOT", KEYS, sequences, stretch)
    assert frame == pytest.approx([math.log(built.factor("TPOT", tuple(k), x, z))
                                   for k, x, z in zip(KEYS.itertuples(index=False), sequences, stretch)], rel=1e-12)


def test_a_points_layout_is_its_priced_deployment():
    assert layout_name(8, 8, 1, 1, 8) == "8 GPUs TP8 EP8" and layout_name(1, 1, 1, 1, 1) == "1 GPU"
    assert layout_name(16, 4, 2, 2, 8) == "16 GPUs TP4 PP2 DP2 EP8"
    points = pd.DataFrame({"backend": ["vllm"], "mode": ["agg"], "model": ["m"], "device": ["d"], "weight_format": ["fp8"],
                           "devices": [8.0], "tp": [1.0], "pp": [1.0], "dp": [8.0], "moe_ep": [4.0], "expert_ranks": [8.0],
                           "running_batch": [256.0]})
    # under attention DP the experts span every GPU whatever the row's MoE-TP x EP split: the layout priced
    assert point_keys(points).iloc[0].tolist() == ["vllm", "agg", "m", "d", "8 GPUs DP8 EP8", "fp8"]
    assert sequences_per_rank(points).tolist() == [32.0]
