"""The serving estimate: each named cost by hand on two measured rows, the TTFT queue, a fit that recovers known
constants, rounding that makes a fit CPU-independent, and the grouped folds."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from kvwall.model.decode_costs import COSTS, decode_costs, decode_step, prefill_stretch
from kvwall.model.engine_constants import EngineConstants, datasheet_constants, rounded
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.units import MS
from kvwall.validation.calibration import CalibrationError, calibrate
from kvwall.validation.cost_shares import cost_shares
from kvwall.validation.estimate_error import (FOLDS, SCHEMES, error_summary, grouped_folds, held_out, measured_times,
                                              with_offsets)
from docs_pages import page, words

DATA = "data/reported/serving-measurements.csv"
#: Llama-3.1-70B, TensorRT-LLM, FP8 weights, four H200s at TP 4, 1024 in and 8192 out, 128 in flight.
DENSE_TP = "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp4_ep1_507"
#: DeepSeek-R1, TensorRT-LLM, FP8 weights, eight H200s at TP 8 and EP 8, 1024 in and 8192 out, 64 in flight.
MOE_EP = "2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x8192_c64_tp8_0_ep8_0_1240"
#: The same on attention DP 8 (TP 1 on each rank) at EP 8, 8192 in and 1024 out, 8 in flight on each rank.
MOE_DP = "2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_8192x1024_c64_tp8_0_ep8_0_1242"
CONSTANTS = EngineConstants(fixed_step=1e-3, hbm_fraction=0.8, flop_fraction=0.5, collective_latency=20e-6)


@pytest.fixture(scope="module")
def points(committed_validation):
    return committed_validation[2].understood.set_index("id", drop=False)


def _costs(points, row_id):
    return {name: float(value[0]) for name, value in decode_costs(points.loc[[row_id]], CONSTANTS).items()}


def test_the_cost_inputs_of_a_dense_tp_row_by_hand(points):
    row = points.loc[DENSE_TP]
    # TP only: 2 all-reduces per layer over 80 layers, each 2 x 3/4 of 128 x 8192 BF16 activations over 450 GB/s.
    assert row["collective_messages"] == 160 and row["expert_ranks"] == 1 and row["dispatch_s"] == 0
    assert math.isclose(row["collective_bytes_s"], 160 * 1.5 * 128 * 8192 * 2 / 450e9, rel_tol=1e-12)
    assert row["stored_kv_ratio"] == 1.0  # TensorRT-LLM stores an FP8 checkpoint's KV in FP8, as the bound counts


def test_each_named_cost_of_a_dense_tp_row_by_hand(points):
    row, costs = points.loc[DENSE_TP], _costs(points, DENSE_TP)
    bandwidth, rate = 0.8 * 4.8e12, 0.5 * 1.979e15
    assert math.isclose(costs["weights"], 17387593856 / bandwidth, rel_tol=1e-9)        # 4.53 ms
    assert math.isclose(costs["kv"], 26843545600 / bandwidth, rel_tol=1e-9)             # 6.99 ms
    assert costs["compute"] == 0.0                                                       # 4.9 TFLOP in 4.9 ms < bytes
    assert math.isclose(costs["collectives"], row["collective_bytes_s"] + 160 * 20e-6, rel_tol=1e-12)  # 4.32 ms
    assert costs["imbalance"] == 0.0 and costs["fixed"] == 1e-3
    # 128 running over 8192 out: 1/64 of an arrival per step, each 1024 tokens of prefill over the four GPUs, and
    # their all-reduces: 160 of 2 x 3/4 of 1024 x 8192 BF16 activations over 450 GB/s (8.95 ms per prompt).
    assert math.isclose(row["prefill_collectives_s"], 160 * 1.5 * 1024 * 8192 * 2 / 450e9, rel_tol=1e-12)
    assert math.isclose(costs["prefill"], 128 / 8192 * (row["prefill_flops_per_device"] / rate
                                                        + 160 * 1.5 * 1024 * 8192 * 2 / 450e9), rel_tol=1e-12)
    assert round(sum(costs.values()) * 1e3, 2) == 17.55
    assert math.isclose(decode_step(points.loc[[DENSE_TP]], CONSTANTS)[0], sum(costs[n] for n in COSTS), rel_tol=1e-15)


def test_each_named_cost_of_a_moe_ep_agg_row_by_hand(points):
    row, costs = points.loc[MOE_EP], _costs(points, MOE_EP)
    # 64 tokens over TP 8, 8 experts each: 64 routed assignments per EP rank. Without attention DP every rank holds
    # every token after attention's all-reduce and the MLP's all-reduce sums the experts' outputs: no dispatch, and
    # the messages are the two all-reduces of each of 61 layers.
    assert row["dispatch_load"] == 64 and row["expert_ranks"] == 8
    assert row["dispatch_s"] == 0 and math.isclose(row["collective_messages"], 2 * 61, rel_tol=1e-12)
    # The busiest of 8 ranks holds 32 of the 256 routed experts; a step of 64 tokens, 8 experts each, touches an
    # expert with q = 1 - (1 - 8/256)^64 = 0.869, a rank's touched experts Binomial(32, q): the busiest of 8 reads
    # E[max] = sum_{m < 32} (1 - F(m)^8) of them, beyond the average 32 q, each expert 58 MoE layers x 3 x 7168 x 2048
    # FP8 bytes.
    q = 1 - (1 - 8 / 256) ** 64
    busiest = sum(1 - binom.cdf(m, 32, q) ** 8 for m in range(32))
    extra = 58 * 3 * 7168 * 2048 * (busiest - 32 * q)
    assert round(busiest - 32 * q, 2) == 2.49 and math.isclose(row["imbalance_read_per_device"], extra, rel_tol=1e-9)
    assert math.isclose(costs["imbalance"], extra / (0.8 * 4.8e12), rel_tol=1e-12)
    assert round(costs["imbalance"] * 1e3, 2) == 1.66
    assert math.isclose(costs["weights"], row["weight_read_per_device"] / (0.8 * 4.8e12), rel_tol=1e-12)
    assert math.isclose(costs["kv"], row["kv_read_per_device"] / (0.8 * 4.8e12), rel_tol=1e-12)
    # A prompt of 1024 tokens: 122 all-reduces of 2 x 7/8 of 1024 x 7168 BF16 activations.
    prompt = 122 * 1.75 * 1024 * 7168 * 2 / 450e9
    assert math.isclose(row["prefill_collectives_s"], prompt, rel_tol=1e-12)
    assert math.isclose(costs["prefill"], 64 / 8192 * (row["prefill_flops_per_device"] / (0.5 * 1.979e15) + prompt),
                        rel_tol=1e-12)
    assert all(value >= 0 for value in costs.values())


def test_fp8_gemms_read_their_weights_at_their_formats_rate_by_hand(points):
    # both rows run their GEMMs in fp8: with fp8 weights read at 1 / 1.25 of the rate (x_8 = 0.25; x_4 for fp4 ones
    # only), their weight cost is 1.25 x the bf16 rate's, the busiest EP rank's extra expert reads and every other
    # cost as before
    slower = replace(CONSTANTS, fp8_weight_extra=0.25, fp4_weight_extra=3.0)
    for row_id in (DENSE_TP, MOE_EP):
        row = points.loc[row_id]
        assert (row["fp8_gemms"], row["fp4_gemms"]) == (1.0, 0.0)
        plain, costs = _costs(points, row_id), {name: float(v[0]) for name, v in
                                                 decode_costs(points.loc[[row_id]], slower).items()}
        assert math.isclose(costs["weights"], 1.25 * row["weight_read_per_device"] / (0.8 * 4.8e12), rel_tol=1e-12)
        assert {name: costs[name] for name in COSTS if name != "weights"} == pytest.approx(
            {name: plain[name] for name in COSTS if name != "weights"}, rel=1e-12)
    # the dense row: 1.25 x 4.53 ms of weights
    assert round(decode_costs(points.loc[[DENSE_TP]], slower)["weights"][0] * 1e3, 2) == 5.66


def test_one_h200_reads_fp8_gemm_weights_slower_per_byte_than_bf16():
    # what the fp8 weights' extra time stands for: Llama-3.1-8B's decode GEMMs on one H200, fp8 weights 1.67x as fast
    # as bf16's at one token for half the bytes, 3,172 of 3,793 GB/s: 0.84 of bf16's rate per byte (x = 0.20), and
    # below bf16's at every token count up to 512
    fixture = Path(__file__).parent / "fixtures/h200-measurements/weights_fp8.csv"
    timings = pd.read_csv(fixture).set_index(["dtype", "m"])
    rate, time = timings["gb_per_s"], timings["median_ms"]
    assert round(time["bf16", 1] / time["fp8", 1], 2) == 1.67 and round(rate["fp8", 1] / rate["bf16", 1], 2) == 0.84
    assert all(rate["fp8", m] < rate["bf16", m] for m in timings.loc["fp8"].index)


def test_the_dispatch_of_a_moe_row_on_attention_dp_by_hand(points):
    row, costs = points.loc[MOE_DP], _costs(points, MOE_DP)
    # 8 tokens on each of 8 attention-DP ranks (TP 1: no all-reduce), 8 experts each: 64 routed assignments per EP
    # rank, sent in the dispatch and the combine of 58 MoE layers, 7/8 of them to other GPUs, over 450 GB/s.
    assert (row["tp"], row["dp"], row["moe_ep"], row["dispatch_load"]) == (1, 8, 8, 64)
    dispatch = 2 * 58 * 8 * 8 * 7168 * 2 * 7 / 8 / 450e9
    assert math.isclose(row["dispatch_s"], dispatch, rel_tol=1e-12) and row["collective_messages"] == 2 * 58
    assert math.isclose(costs["collectives"], dispatch + 116 * 20e-6, rel_tol=1e-12)
    # the busiest rank takes 64 + sqrt(2 x 64 x ln 8) assignments: sqrt(2 ln 8 / 64) = 25% more dispatch
    assert math.isclose(costs["imbalance"], row["imbalance_read_per_device"] / (0.8 * 4.8e12)
                        + dispatch * math.sqrt(2 * math.log(8) / 64), rel_tol=1e-12)
    # the prompts that arrive each step spread over the 8 ranks, a prompt's 8192 tokens 1024 a rank: the dispatch
    # and combine of 1024 tokens x 8 experts in 58 MoE layers
    assert math.isclose(row["prefill_collectives_s"], 2 * 58 * 1024 * 8 * 7168 * 2 * 7 / 8 / 450e9, rel_tol=1e-12)


def test_vllm_reads_bf16_kv_twice_the_counted_fp8(points):
    assert set(points.loc[points["backend"] == "vllm", "stored_kv_ratio"]) == {2.0}


def test_no_cost_is_negative_and_datasheet_rates_are_the_fastest(points):
    costs = decode_costs(points, CONSTANTS)
    assert all((values >= 0).all() for values in costs.values())
    fastest = decode_step(points, datasheet_constants(0.0))
    assert (fastest <= decode_step(points, CONSTANTS)).all()
    assert (fastest * 1e3 >= points["tpot_bound_ms"] * (1 - 1e-12)).all()  # no estimate beats the bound


def test_the_prefill_stretch_is_the_step_over_the_step_without_its_prefill(points):
    # by hand: 3 ms of weights, 1 ms of KV and 4 ms of prefill stalls: an 8 ms step, 4 ms without them, x2
    hand = {name: np.array([0.0]) for name in COSTS} | {"weights": np.array([3e-3]), "kv": np.array([1e-3]),
                                                         "prefill": np.array([4e-3])}
    assert prefill_stretch(hand).tolist() == [2.0]
    costs = decode_costs(points, CONSTANTS)
    step, stretch = decode_step(points, CONSTANTS), prefill_stretch(costs)
    assert stretch == pytest.approx(step / (step - costs["prefill"]), rel=1e-12) and (stretch >= 1.0).all()
    # a disagg decode step has no prefill to stall it; an agg one with arrivals does
    disagg = (points["mode"] == "disagg").to_numpy()
    assert disagg.any() and (stretch[disagg] == 1.0).all() and (stretch[~disagg] > 1.0).any()


def test_a_request_past_the_batch_that_runs_waits_for_a_slot_by_littles_law(committed_validation):
    # Llama-3.1-70B, FP8, on one H200 under TensorRT-LLM at 1024 / 8192: 128 requests in flight, 75 of them fit
    rows, _, result = committed_validation
    understood = result.understood
    point = understood[(understood["model"] == "llama-3.1-70b") & (understood["device"] == "h200-sxm")
                       & (understood["backend"] == "trtllm") & (understood["tp"] == 1) & (understood["isl"] == 1024)
                       & (understood["osl"] == 8192) & (understood["in_flight"] == 128)]
    assert len(point) == 1 and point["running_batch"].iloc[0] == 75
    constants = EngineConstants(0.0, 0.9, 0.6, 0.0, first_token_fixed=0.05, layer_step=50e-6)
    tpot = decode_step(point, constants)[0] / 2.0  # two tokens a step
    # 53 requests wait while 75 slots free at 75 / (8192 x TPOT) a second: each waits 53 / 75 x 8192 x TPOT
    wait = 53 / 75 * 8192 * tpot
    # TensorRT-LLM runs prompt chunks beside the 75 decodes under 8,192 tokens a step: a prompt of 1,024 tokens rides
    # 1,024 / (8,192 - 75) steps, each with the batch's decode; (75 + 1) / 2 prompts, the whole wave of the datasheet
    assert point["prompt_steps"].iloc[0] == pytest.approx(1024 / (8192 - 75), rel=1e-12)
    one_prompt = point["prefill_flops_per_device"].iloc[0] / (0.6 * point["peak_flops"].iloc[0]) + 1024 / 8117 * 2 * tpot
    prefill = 38.0 * one_prompt
    assert first_token_estimate(point, constants, 2.0)[0] == pytest.approx(0.05 + wait + prefill, rel=1e-12)
    assert wait > 100.0  # minutes, not the seconds of a prefill wave: the measurement is 369 s
    assert rows.loc[point.index[0], "silicon_ttft_ms"] / 1e3 > wait
    # every request runs: no wait; a disagg point and a planned point (no requests in flight recorded) wait for none
    fits = point.assign(in_flight=75.0)
    assert first_token_estimate(fits, constants, 2.0)[0] == pytest.approx(0.05 + prefill, rel=1e-12)
    assert first_token_estimate(point.drop(columns="in_flight"), constants, 2.0)[0] == pytest.approx(0.05 + prefill)


def test_ttft_is_the_fixed_cost_plus_half_the_wave_of_prefills(points):
    constants = EngineConstants(1e-3, 0.8, 0.5, 20e-6, first_token_fixed=0.2)
    # 128 requests arrive together; one waits on average for (128 + 1) / 2 prefills of 1024 tokens over four GPUs,
    # each riding 1024 / (8192 - 128) of TensorRT-LLM's steps of 8,192 tokens beside the 128 decodes.
    row = points.loc[DENSE_TP]
    rides = 1024 / (8192 - 128)
    assert row["prompt_steps"] == pytest.approx(rides, rel=1e-12)
    step = decode_step(points.loc[[DENSE_TP]], constants)[0]
    expected = 0.2 + 64.5 * (row["prefill_flops_per_device"] / (0.5 * 1.979e15) + rides * step)
    assert math.isclose(first_token_estimate(points.loc[[DENSE_TP]], constants, 1.0)[0], expected, rel_tol=1e-12)
    # 2,579 ms of prefill FLOPs and 144 ms of the 17.6 ms decode steps the prompts ride
    assert round(step * 1e4) == 176 and round(64.5 * rides * step * 1e3) == 144 and round(expected * 1e3) == 2722
    # a disagg request's prompt alone on a prefill replica: its FLOPs at half the peak, but no less than the weights
    # its tokens touch over 0.8 of the bandwidth (here every expert the prefill worker holds: the weights take longer)
    disagg = points[points["mode"] == "disagg"].iloc[[0]]
    flops = disagg["replica_prefill_flops"].iloc[0] / (0.5 * disagg["peak_flops"].iloc[0])
    weights = disagg["prefill_weight_read"].iloc[0] / (0.8 * disagg["hbm_bandwidth"].iloc[0])
    assert weights > flops
    assert math.isclose(first_token_estimate(disagg, constants, 1.0)[0], 0.2 + weights, rel_tol=1e-12)
    # the dense TP row's prompt: its FLOPs take longer than its weights
    row = points.loc[DENSE_TP]
    assert row["prefill_weight_read"] / (0.8 * 4.8e12) < row["prefill_flops_per_device"] / (0.5 * 1.979e15)


def _synthetic(n=200, seed=1):
    """Points whose TPOT the decode step of known constants gives exactly."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "mode": np.where(rng.random(n) < 0.7, "agg", "disagg"), "osl": rng.choice([1024, 8192], n).astype(float),
        "running_batch": rng.integers(1, 256, n).astype(float), "hbm_bandwidth": 4.8e12, "peak_flops": 1.979e15,
        "weight_read_per_device": rng.uniform(4e9, 80e9, n), "kv_read_per_device": rng.uniform(0, 40e9, n),
        "stored_kv_ratio": 1.0, "flops_per_device": rng.uniform(1e11, 2e13, n), "pipeline_idle": 1.0,
        "collective_bytes_s": rng.uniform(0, 1e-3, n), "collective_messages": rng.choice([0.0, 64.0, 160.0, 238.0], n),
        "imbalance_read_per_device": 0.0, "dispatch_s": 0.0, "dispatch_load": 0.0, "expert_ranks": 1.0,
        "prefill_flops_per_device": rng.uniform(1e12, 1e14, n), "prefill_collectives_s": rng.uniform(0, 1e-2, n),
        "replica_prefill_flops": rng.uniform(1e12, 1e14, n), "layers_per_step": rng.choice([32.0, 61.0, 80.0], n),
        "sequences_per_rank": rng.integers(1, 256, n).astype(float), "prompt_steps": rng.choice([0.0, 0.125, 1.0], n),
    })
    formats = rng.choice(3, n)  # bf16, fp8 or fp4 GEMMs
    return frame.assign(fp8_gemms=(formats == 1).astype(float), fp4_gemms=(formats == 2).astype(float),
                        prefill_weight_read=rng.uniform(1e9, 80e9, n),
                        gemm_columns=rng.choice([128.0, 256.0, 1536.0, 3584.0, 14336.0], n))


def test_a_fit_recovers_known_constants():
    known = EngineConstants(fixed_step=2e-3, hbm_fraction=0.75, flop_fraction=0.4, collective_latency=25e-6,
                            first_token_fixed=0.15, layer_step=30e-6, sequence_step=5e-6, wave_share=0.3,
                            fp8_weight_extra=0.3, fp4_weight_extra=0.45, half_rate_columns=64.0)
    synthetic = _synthetic()
    fitted = calibrate(synthetic, decode_step(synthetic, known), 1, "synthetic", first_token_estimate(synthetic, known, 1.0))
    assert fitted.constants == known  # to the three significant digits kept
    assert fitted.points == 200 and fitted.first_token_points == (synthetic["mode"] == "agg").sum()
    assert all(h >= 0 for h in fitted.half_interval) and len(fitted.half_interval) == 11


def test_fitted_constants_keep_three_significant_digits():
    assert rounded(0.0012345678) == 0.00123 and rounded(0.74999999) == 0.75 and rounded(0.0) == 0.0
    assert rounded(2.5e-5 * (1 + 1e-13)) == rounded(2.5e-5 * (1 - 1e-13)) == 2.5e-5


def test_a_group_too_small_to_fit_names_itself():
    with pytest.raises(CalibrationError, match="^tiny: 5 measured points"):
        calibrate(_synthetic(5), np.ones(5), 1, "tiny")


def test_points_that_differ_only_in_concurrency_share_a_fold(points):
    folds = grouped_folds(points)
    assert set(folds) == set(range(FOLDS))
    same = points[(points["model"] == "deepseek-r1") & (points["device"] == "h200-sxm") & (points["tp"] == 8)
                  & (points["moe_ep"] == 8) & (points["isl"] == 1024) & (points["osl"] == 8192)
                  & (points["mode"] == "agg")]
    assert len(same) >= 4 and folds.loc[same.index].nunique() == 1


def test_the_error_summary_and_its_band_by_hand():
    from kvwall.render import to_markdown
    from kvwall.tables.validation import estimate_error

    # five agg points measured at 10 ms, estimated at 8, 10, 12.5, 20 and 5 ms; one disagg point estimated at 4 ms
    points = pd.DataFrame({"backend": "vllm", "mode": ["agg"] * 5 + ["disagg"]})
    measured = pd.DataFrame({"tpot": 10.0, "ttft": 100.0}, index=points.index)
    estimated = pd.DataFrame({"tpot": [8.0, 10.0, 12.5, 20.0, 5.0, 4.0], "ttft": np.nan}, index=points.index)
    predicted = {scheme: estimated if scheme == SCHEMES[2] else estimated * np.nan for scheme in SCHEMES}
    summary = error_summary(points, measured, predicted)
    assert set(summary["scheme"]) == {SCHEMES[2]} and set(summary["quantity"]) == {"TPOT"}
    rows = summary.set_index(["backend", "mode"])
    agg = rows.loc[("vllm", "agg")]
    # |estimate / measured - 1|: 0.2, 0, 0.25, 1, 0.5; measured / estimate sorted: 0.5, 0.8, 1, 1.25, 2, whose 10th
    # percentile lies 0.4 of the way from 0.5 to 0.8 and whose 90th 0.6 of the way from 1.25 to 2
    assert agg["points"] == 5 and agg["median_error"] == pytest.approx(0.25) and agg["mean_error"] == pytest.approx(0.39)
    assert (agg["within_10"], agg["within_20"]) == (0.2, 0.4)
    assert agg["measured_over_estimate_p10"] == pytest.approx(0.62)
    assert agg["measured_over_estimate_p90"] == pytest.approx(1.7)
    disagg = rows.loc[("vllm", "disagg")]  # one point: 10 / 4 both ways
    assert disagg["points"] == 1 and disagg["measured_over_estimate_p10"] == disagg["measured_over_estimate_p90"] == 2.5
    assert rows.loc[("all", "agg")].equals(agg)
    printed = to_markdown(estimate_error(summary))
    assert "| grouped 5-fold | TPOT | vllm | agg | 5 | 25% | 39% | 20% | 40% | 0.62× | 1.70× |" in printed
    assert "| grouped 5-fold | TPOT | vllm | disagg | 1 | 60% | 60% | 0% | 0% | 2.50× | 2.50× |" in printed


def test_kvwall_validate_summary_reports_the_held_out_error_beside_its_targets(root, tmp_path, capsys):
    from kvwall.cli.main import main

    source = root / DATA
    before = source.read_bytes()
    assert main(["validate", str(source), "--output", str(tmp_path / "out.csv"), "--config", str(root / "config"),
                 "--summary"]) == 0
    assert source.read_bytes() == before
    lines = capsys.readouterr().err.splitlines()
    start = lines.index("  estimate on rows it was not fitted on (target; datasheet rates beside):")
    reported = [line.split(": ")[0].strip() + " " + " ".join(line.split(": ")[1].split()[:3])
                for line in lines[start + 1:]]
    # new models first, then a new device, then the in-distribution folds
    assert reported == ["leave one model out, with offsets agg TPOT median_error",
                        "leave one model out, with offsets agg TPOT mean_error",
                        "leave one model out, with offsets agg TPOT within_10",
                        "leave one model out, with offsets agg TTFT median_error",
                        "leave one device out, with offsets agg TPOT median_error",
                        "grouped 5-fold, with offsets agg TPOT median_error",
                        "grouped 5-fold, with offsets agg TTFT median_error",
                        "grouped 5-fold, with offsets disagg TTFT median_error"]
    errors = pd.read_csv(root / "tables" / "derived" / "serving_estimate_error.csv").set_index(
        ["scheme", "quantity", "backend", "mode"])
    # each printed value is the committed table's, to 0.1%
    for line, (scheme, quantity, mode, statistic) in ((lines[start + 1], (
            "leave one model out, with offsets", "TPOT", "agg", "median_error")), (lines[start + 6], (
            "grouped 5-fold, with offsets", "TPOT", "agg", "median_error"))):
        printed = float(line.split(": ")[1].split()[3].rstrip("%")) / 100
        assert printed == pytest.approx(errors.loc[(scheme, quantity, "all", mode), statistic], abs=5e-4)
    median = float(lines[start + 6].split(": ")[1].split()[3].rstrip("%")) / 100
    assert 0.03 < median < 0.15  # in distribution, with offsets: far closer than the datasheet's 48%


def test_a_constant_within_a_millionth_of_its_range_from_a_bound_is_that_bound():
    from kvwall.validation.calibration import settled

    assert settled(4.12e-13, 0.0, 5.0) == 0.0  # the solver's noise at a lower bound
    assert settled(0.9999999, 0.01, 1.0) == 1.0
    assert settled(0.81049, 0.01, 1.0) == 0.81  # inside the range: three significant digits
    assert settled(2.0e-5, 0.0, 5.0) == 2.0e-5  # four millionths of the range: kept


def test_the_cost_shares_and_the_remainder_add_up_to_the_measured_tpot():
    class Fitted:
        constants = EngineConstants(fixed_step=2 * MS, hbm_fraction=0.5, flop_fraction=0.5, collective_latency=0.0)

    points = pd.DataFrame({
        "backend": ["vllm", "vllm"], "device": ["h100-sxm", "h100-sxm"], "mode": ["agg", "agg"], "osl": [1000, 1000],
        "pipeline_idle": [1.0, 1.0], "hbm_bandwidth": [2e12, 2e12], "peak_flops": [1e15, 1e15],
        "weight_read_per_device": [4e9, 4e9], "kv_read_per_device": [1e9, 3e9], "stored_kv_ratio": [1.0, 1.0],
        "flops_per_device": [1e12, 1e12], "expert_ranks": [1, 1], "dispatch_load": [0.0, 0.0], "dispatch_s": [0.0, 0.0],
        "imbalance_read_per_device": [0.0, 0.0],
        "running_batch": [100.0, 100.0], "prefill_flops_per_device": [5e13, 5e13], "prefill_collectives_s": [0.0, 0.0],
        "collective_bytes_s": [0.0, 0.0], "layers_per_step": [32.0, 32.0], "sequences_per_rank": [100.0, 100.0],
        "collective_messages": [0.0, 0.0], "fp8_gemms": [0.0, 0.0], "fp4_gemms": [0.0, 0.0],
        "gemm_columns": [3584.0, 3584.0]})
    # by hand, per point (ms): weights 4e9 / 1e12 = 4, kv 1 and 3, compute max(0, 2 - 5 or 7) = 0, fixed 2,
    # prefill 100 / 1000 x 5e13 / 5e14 = 10; measured 20 and 25 ms
    shares = cost_shares(points, pd.Series([20.0, 25.0]), {"vllm": Fitted()}, tokens=1.0).iloc[0]
    assert shares["share_weights"] == pytest.approx(8 / 45) and shares["share_kv"] == pytest.approx(4 / 45)
    assert shares["share_fixed"] == pytest.approx(4 / 45) and shares["share_prefill"] == pytest.approx(20 / 45)
    assert shares["share_compute"] == 0.0
    assert sum(shares[f"share_{name}"] for name in COSTS) + shares["remainder"] == pytest.approx(1.0)
    assert shares["remainder"] == pytest.approx(1 - 36 / 45)


def test_the_busiest_ep_rank_costs_exactly_where_experts_span_ranks(points):
    costs = decode_costs(points, CONSTANTS)
    spread = (points["expert_ranks"] > 1).to_numpy()
    assert spread.any() and (~spread).any()
    assert (costs["imbalance"][~spread] == 0).all() and (costs["imbalance"][spread] > 0).all()
    # its extra expert reads outweigh its extra dispatch: the dispatch is a few hundred kB per layer over the link
    bandwidth = CONSTANTS.hbm_fraction * points["hbm_bandwidth"].to_numpy()
    reads = points["pipeline_idle"].to_numpy() * points["imbalance_read_per_device"].to_numpy() / bandwidth
    assert np.median(reads[spread]) > 10 * np.median(costs["imbalance"][spread] - reads[spread])


def test_the_offsets_of_a_held_out_point_come_from_the_other_folds_alone(committed_validation):
    rows, _, result = committed_validation
    points = result.understood[result.understood["backend"] == "vllm"]
    measured = measured_times(points, rows)
    folds = grouped_folds(points)
    fits = {}
    plain = held_out(points, measured, 1.0, folds, fits)
    first = with_offsets(points, measured, 1.0, folds, plain, fits, 3)
    # measured ten times slower, a point of fold 0 moves no prediction of its own fold; of the other folds', it
    # raises those at its model, device, layout and weight format, and leaves those of other models as they were
    moved = points.index[(folds == 0).to_numpy()][0]
    slower = measured.copy()
    slower.loc[moved, ["tpot", "ttft"]] *= 10.0
    second = with_offsets(points, slower, 1.0, folds, plain, fits, 3)
    own = (folds == 0).to_numpy()
    assert second.loc[own].equals(first.loc[own])
    same_model = ((points["model"] == points.loc[moved, "model"]) & (points["mode"] == points.loc[moved, "mode"])).to_numpy()
    columns = ["model", "mode", "device", "weight_format", "devices", "tp", "pp", "dp", "expert_ranks"]
    same_key = (points[columns] == points.loc[moved, columns]).all(axis=1).to_numpy()
    assert (~own & same_key).any()
    assert (second.loc[~own & same_key, "tpot"] > first.loc[~own & same_key, "tpot"]).all()
    assert second.loc[~own & ~same_model].equals(first.loc[~own & ~same_model])


def test_the_validation_page_states_the_held_out_error_with_offsets(root):
    error = pd.read_csv(root / "tables/derived/serving_estimate_error.csv").set_index(["scheme", "quantity", "backend", "mode"])
    plain, offset = (error.loc[(scheme, slice(None), "all", "agg")] for scheme in (SCHEMES[2], SCHEMES[6]))
    prose = words("docs/validation.md")
    assert (f"the agg TPOT median error goes from {plain.loc['TPOT', 'median_error']:.1%} to "
            f"{offset.loc['TPOT', 'median_error']:.1%} and its band from {plain.loc['TPOT', 'measured_over_estimate_p10']:.2f}-"
            f"{plain.loc['TPOT', 'measured_over_estimate_p90']:.2f}x to {offset.loc['TPOT', 'measured_over_estimate_p10']:.2f}-"
            f"{offset.loc['TPOT', 'measured_over_estimate_p90']:.2f}x; the agg TTFT median error from "
            f"{plain.loc['TTFT', 'median_error']:.0%} to {offset.loc['TTFT', 'median_error']:.0%}") in prose
    import yaml
    pseudo_count = yaml.safe_load((root / "config/validation.yaml").read_text())["offset_pseudo_count"]["value"]
    assert f"by a pseudo-count of {pseudo_count} points" in prose and f"kept n / (n + {pseudo_count})" in prose
    # the offsets buy most where the lookups are: every engine's held-out agg TPOT error falls
    for engine in ("sglang", "trtllm", "vllm"):
        assert error.loc[(SCHEMES[6], "TPOT", engine, "agg"), "median_error"] < error.loc[(SCHEMES[2], "TPOT", engine, "agg"), "median_error"]


def test_the_validation_page_states_notebook_es_wait_for_a_slot(root):
    import json
    import re

    executed = json.loads((root / "notebooks/executed/05_serving_validation.ipynb").read_text(encoding="utf-8"))
    printed = "\n".join("".join(output.get("data", {}).get("text/plain", output.get("text", "")))
                         for cell in executed["cells"] for output in cell.get("outputs", []))
    wait = float(re.search(r"wait = \(128 - 75\) / 75 x 8,192 x [0-9.]+ ms = ([0-9.]+) s", printed).group(1))
    assert 100.0 < wait < 369.0  # minutes of queueing, short of the measured 369 s
    assert f"with 128 in flight and 75 running: {wait:.0f} s" in words("docs/validation.md")


def test_an_engine_with_too_few_points_gets_no_constants_and_its_points_the_datasheet_alone(committed_validation):
    from kvwall.plan.proof import ESTIMATES, held_out_tpot, rankings
    from kvwall.validation.estimate_error import assess, uncalibrated_engines

    rows, vmap, result = committed_validation
    understood = result.understood
    # SGLang's first 12 understood points, the other engines' all: 12 are fewer than the 20 a fit needs
    thin = understood[understood["backend"] == "sglang"].index[:12]
    chosen = understood[(understood["backend"] != "sglang") | understood.index.isin(thin)]
    assert uncalibrated_engines(chosen) == {"sglang": "sglang: 12 understood measured points, fewer than the 20 a fit "
                                                      "needs: no constants, its points priced at datasheet rates alone"}
    assert uncalibrated_engines(understood) == {}
    calibrations, predicted, summary = assess(chosen, rows, vmap.tokens_per_step, 5e-6, vmap.offset_pseudo_count,
                                              vmap.families)
    assert sorted(calibrations) == ["trtllm", "vllm"]
    assert predicted["in sample"].loc[thin].isna().all().all() and predicted["datasheet"].loc[thin].notna().all().all()
    # its rows are summarized at datasheet rates alone, and the others' as before
    assert set(summary[summary["backend"] == "sglang"]["scheme"]) == {"datasheet"}
    assert {"in sample", "leave one model out, with offsets"} <= set(summary[summary["backend"] == "vllm"]["scheme"])
    # the plan's ranking ranks its groups by the datasheet alone: a calibrated estimate that prices none of a group's
    # points does not rank it
    points = chosen.assign(tpot_ms=rows["silicon_tpot_ms"],
                           **held_out_tpot(chosen, rows, vmap.tokens_per_step, vmap.offset_pseudo_count))
    ranked = rankings(points, ESTIMATES)
    assert set(ranked[ranked["backend"] == "sglang"]["estimate"]) == {"datasheet"}
    assert set(ranked[ranked["backend"] == "vllm"]["estimate"]) == set(ESTIMATES)
