"""The calibrated estimate where users ask for it: constants and held-out error read back from the tables, a point
priced by hand with them and at datasheet rates, `kvwall regime --engine` and the columns of `kvwall validate`."""

from dataclasses import replace
import math
import re

import numpy as np
import pandas as pd
import pytest

from kvwall.model.decode_costs import COSTS
from kvwall.model.engine_constants import EngineConstants
from kvwall.validation.calibrated import NotCalibrated, estimate, estimate_columns, read_calibrated
from kvwall.validation.points import COST_INPUTS


def _tables(folder):
    """Tables holding one engine's constants and errors as the validation writes them (printed units)."""
    derived = folder / "derived"
    derived.mkdir(parents=True)
    rows = [("fixed_step", 2.0, "ms"), ("hbm_fraction", 0.5, "ratio"), ("flop_fraction", 0.5, "ratio"),
            ("collective_latency", 20.0, "us"), ("layer_step", 10.0, "us"), ("sequence_step", 5.0, "us"),
            ("first_token_fixed", 100.0, "ms"), ("wave_share", 1.0, "ratio"), ("fp8_weight_extra", 0.25, "ratio"),
            ("fp4_weight_extra", 0.5, "ratio"), ("half_rate_columns", 40.0, "columns")]
    pd.DataFrame([{"backend": "vllm", "constant": c, "value": v, "half_interval": 0.1, "unit": u, "lower": 0,
                   "upper": 1, "at_bound": "no", "points": 500} for c, v, u in rows]).to_csv(
        derived / "serving_engine_constants.csv", index=False)
    errors = [("datasheet", "TPOT", "agg", 0.5, 0.5), ("grouped 5-fold", "TPOT", "agg", 0.17, 0.22),
              ("grouped 5-fold", "TTFT", "agg", 0.45, 0.6), ("grouped 5-fold", "TPOT", "disagg", 0.4, 0.4)]
    pd.DataFrame([{"scheme": s, "quantity": q, "backend": "vllm", "mode": m, "points": 100, "median_error": med,
                   "mean_error": mean, "within_10": 0.3, "within_20": 0.5, "measured_over_estimate_p10": 1 - med,
                   "measured_over_estimate_p90": 1 + mean} for s, q, m, med, mean in errors]).to_csv(
        derived / "serving_estimate_error.csv", index=False)
    return folder


def test_the_constants_are_read_back_in_base_units_with_their_held_out_error(tmp_path):
    found = read_calibrated(_tables(tmp_path), "vllm")
    assert found.constants == EngineConstants(2e-3, 0.5, 0.5, 20e-6, 0.1, layer_step=10e-6, sequence_step=5e-6,
                                              fp8_weight_extra=0.25, fp4_weight_extra=0.5, half_rate_columns=40.0)
    assert found.points == 500
    assert (found.tpot_error["agg"].median, found.tpot_error["agg"].mean) == (0.17, 0.22)
    assert (found.tpot_error["agg"].low, found.tpot_error["agg"].high) == (0.83, 1.22)
    assert found.tpot_error["disagg"].median == 0.4 and "disagg" not in found.ttft_error
    assert found.tpot_error["agg"].scheme == "grouped 5-fold" and found.ttft_error["agg"].median == 0.45
    with pytest.raises(NotCalibrated, match="sglang: no fitted constants"):
        read_calibrated(tmp_path, "sglang")
    # a table an older checkout built, without a constant this one prices with, is refused, naming it
    table = tmp_path / "derived" / "serving_engine_constants.csv"
    pd.read_csv(table).query("constant != 'half_rate_columns'").to_csv(table, index=False)
    with pytest.raises(NotCalibrated, match="^vllm: .*serving_engine_constants.csv holds no half_rate_columns: rebuild"):
        read_calibrated(tmp_path, "vllm")
    with pytest.raises(NotCalibrated, match="not found"):
        read_calibrated(tmp_path / "elsewhere", "vllm")


def _point(**changes):
    point = {"backend": "vllm", "mode": "agg", "osl": 1000.0, "pipeline_idle": 1.0, "hbm_bandwidth": 2e12,
             "peak_flops": 1e15, "weight_read_per_device": 4e9, "kv_read_per_device": 1e9, "stored_kv_ratio": 1.0,
             "flops_per_device": 1e12, "expert_ranks": 1.0, "dispatch_load": 0.0, "dispatch_s": 0.0,
             "imbalance_read_per_device": 0.0, "running_batch": 100.0, "prefill_flops_per_device": 5e13,
             "prefill_collectives_s": 0.0, "replica_prefill_flops": 5e13, "collective_bytes_s": 0.0,
             "collective_messages": 0.0, "layers_per_step": 40.0, "sequences_per_rank": 100.0, "prompt_steps": 0.0,
             "fp8_gemms": 0.0, "fp4_gemms": 0.0, "gemm_columns": 2000.0, "prefill_weight_read": 0.0, "reason": None}
    return pd.DataFrame([{**point, **changes}])


def test_a_point_priced_by_hand_with_the_constants_and_at_datasheet_rates():
    constants = EngineConstants(2e-3, 0.5, 0.5, 20e-6, 0.1, layer_step=10e-6, sequence_step=5e-6)
    found = estimate(_point(), constants, latency=5e-6, tokens=1.0)[0]
    # at half the bandwidth and peak: weights 4e9 / 1e12 = 4 ms, KV 1 ms, compute max(0, 2 - 5 ms) = 0, fixed
    # 2 ms + 40 layers x 10 us + 100 sequences x 5 us = 2.9 ms, prefill 100 / 1000 arrivals x 5e13 / 5e14 = 10 ms:
    # 17.9 ms. TTFT 0.1 s + (100 + 1) / 2 x 0.1 s = 5.15 s.
    assert found.tpot == pytest.approx(17.9e-3) and found.ttft == pytest.approx(5.15)
    # at datasheet rates: 2 + 0.5 + 0 + 0 + 5 ms, no fixed cost; TTFT 50.5 x 0.05 s.
    assert found.tpot_datasheet == pytest.approx(7.5e-3) and found.ttft_datasheet == pytest.approx(2.525)
    assert found.costs == pytest.approx({"weights": 4e-3, "kv": 1e-3, "compute": 0.0, "collectives": 0.0,
                                         "imbalance": 0.0, "fixed": 2.9e-3, "prefill": 10e-3})
    assert sum(found.costs.values()) == pytest.approx(found.tpot)
    # its prompts each riding half a step of 17.9 ms beside the decodes: 0.1 s + 50.5 x (0.1 + 0.00895) s = 5.602 s
    rides = estimate(_point(prompt_steps=0.5), constants, latency=5e-6, tokens=1.0)[0]
    assert rides.tpot == found.tpot and rides.ttft == pytest.approx(5.601975)
    # a prompt whose tokens touch 150 GB of weights reads them at half of 2 TB/s no faster than 0.15 s, past its
    # 0.1 s of FLOPs: 0.1 s + 50.5 x 0.15 s = 7.675 s
    heavy = estimate(_point(prefill_weight_read=150e9), constants, latency=5e-6, tokens=1.0)[0]
    assert heavy.ttft == pytest.approx(7.675)
    # MLP GEMMs of 2,000 columns a GPU, whose weights stream at half their rate at 500 columns: they read at
    # 1 / (1 + 500 / 2000) of it, 4 x 1.25 = 5 ms, and the step takes 1 ms longer
    narrow = estimate(_point(), replace(constants, half_rate_columns=500.0), latency=5e-6, tokens=1.0)[0]
    assert narrow.costs["weights"] == pytest.approx(5e-3) and narrow.tpot == pytest.approx(18.9e-3)


def test_the_calibrated_columns_leave_refused_rows_and_engines_without_constants_empty():
    points = pd.concat([_point(), _point(backend="sglang"), _point(reason="not mapped")], ignore_index=True)
    columns = estimate_columns(points, {"vllm": EngineConstants(2e-3, 0.5, 0.5, 20e-6, 0.1)}, 5e-6, 1.0)
    # TPOT, datasheet TPOT, TTFT, then weights, KV, compute, collectives, imbalance, fixed, prefill (ms)
    assert columns.loc[0].tolist() == pytest.approx([17.0, 7.5, 5150.0, 4.0, 1.0, 0.0, 0.0, 0.0, 2.0, 10.0])
    assert np.isnan(columns.loc[1, "tpot_estimate_ms"]) and columns.loc[1, "tpot_datasheet_ms"] == pytest.approx(7.5)
    assert columns.loc[2].isna().all()
    # no engine constant makes a GPU faster than its datasheet
    assert (columns["tpot_estimate_ms"].dropna() >= columns["tpot_datasheet_ms"][columns["tpot_estimate_ms"].notna()]).all()


def test_kvwall_regime_prints_the_calibrated_estimate_with_its_held_out_error(root, capsys):
    from kvwall.cli.main import main

    command = ["regime", "--model", "llama-3-70b", "--device", "h200-sxm", "--batch", "64", "--context", "8k",
               "--tp", "4", "--config", str(root / "config"), "--engine", "vllm"]
    assert main([*command, "--isl", "1024", "--osl", "1024"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Calibrated estimate, vllm (agg"))
    # llama-3-70b: a model the measurements do not hold, so the band of a model left out of every fit
    assert "derived from reported data" in lines[head]
    assert "error band: leave one model out, with offsets (cross-validation)" in lines[head]
    assert "never a bound" in lines[head]
    constants = pd.read_csv(root / "tables" / "derived" / "serving_engine_constants.csv")
    fixed = constants[(constants["backend"] == "vllm") & (constants["constant"] == "fixed_step")]["value"].iloc[0]
    assert f"fixed step {fixed:.3g} ms" in lines[head]
    # the constants vLLM's fit held at a bound (its fractions at 1, its fixed and per-sequence costs and its fp4
    # weights' extra time at 0), named in the line after the header with the side of each
    at_bound = constants[(constants["backend"] == "vllm") & (constants["at_bound"] == "yes")]
    assert len(at_bound) == 5 and lines[head + 1].startswith("  held at a bound of the fit (vllm")
    for r in at_bound.itertuples():
        side = "upper" if r.value == r.upper else "lower"
        assert re.search(rf"{r.constant} {r.value:g}( \w+)? \({side}\)", lines[head + 1]), r.constant
    head += 1  # the bands follow it
    errors = pd.read_csv(root / "tables" / "derived" / "serving_estimate_error.csv")
    held = errors[(errors["scheme"] == "leave one model out, with offsets") & (errors["backend"] == "vllm")
                  & (errors["mode"] == "agg")]
    tpot_error = held[held["quantity"] == "TPOT"]["median_error"].iloc[0]
    assert lines[head + 1].startswith("  TPOT ") and f"median held-out error {tpot_error:.0%}" in lines[head + 1]
    assert "datasheet estimate" in lines[head + 1] and lines[head + 2].startswith("  TTFT ")
    tpot = float(lines[head + 1].split()[1])
    low, high = float(lines[head + 1].split()[3]), float(lines[head + 1].split()[6])
    # each printed to 0.1 ms: the band's ends and the TPOT they scale are each within 0.05 of the unrounded values
    rounding = 0.05 * (2 + tpot_error)
    assert low == pytest.approx(tpot * (1 - tpot_error), abs=rounding) and high == pytest.approx(tpot * (1 + tpot_error), abs=rounding)
    band = held[held["quantity"] == "TPOT"].iloc[0]  # and the 80% band of measured / estimate beside it
    assert (f"measured / estimate {band['measured_over_estimate_p10']:.2f}x to "
            f"{band['measured_over_estimate_p90']:.2f}x for 80% of the {int(band['points']):,} points") in lines[head + 1]
    assert main(command) == 0
    assert "Calibrated estimate (vllm): none: give --isl and --osl" in capsys.readouterr().out


def test_kvwall_validate_writes_the_calibrated_and_datasheet_estimates(root, tmp_path, capsys):
    from kvwall.cli.main import main

    source = root / "data" / "reported" / "serving-measurements.csv"
    dense = "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp4_ep1_507"
    lines = source.read_text().splitlines()
    small = tmp_path / "mine.csv"
    small.write_text("\n".join([lines[0], *[line for line in lines if line.startswith(dense + ",")]]) + "\n")
    assert main(["validate", str(small), "--output", str(tmp_path / "out.csv"), "--config", str(root / "config")]) == 0
    row = pd.read_csv(tmp_path / "out.csv").iloc[0]
    constants = pd.read_csv(root / "tables" / "derived" / "serving_engine_constants.csv")
    trtllm = constants[constants["backend"] == "trtllm"].set_index("constant")["value"]
    h, f = trtllm["hbm_fraction"], trtllm["flop_fraction"]
    # by hand, as tests/test_estimate.py prices this row: weights 17,387,593,856 B and KV 26,843,545,600 B over
    # h x 4.8 TB/s (its fp8 weights at 1 / (1 + x_8) of the rate), collectives 160 all-reduces of 1.5 x 128 x 8192
    # BF16 over 450 GB/s plus 160 latencies, the
    # fixed step, its cost per layer for 80 layers and per sequence for 128, 128 / 8192 arrivals of a 1024-token
    # prefill over the four GPUs' f x 1.979 PFLOP/s.
    prefill = 2 * 1024 * 70.6e9 / 4  # about; the exact FLOPs are the point's own
    step = ((17387593856 * (1 + trtllm["fp8_weight_extra"]) + 26843545600) / (h * 4.8e12)
            + 160 * 1.5 * 128 * 8192 * 2 / 450e9
            + 160 * trtllm["collective_latency"] * 1e-6 + trtllm["fixed_step"] * 1e-3
            + (80 * trtllm["layer_step"] + 128 * trtllm["sequence_step"]) * 1e-6 + 128 / 8192 * prefill / (f * 1.979e15))
    assert row["tpot_estimate_ms"] == pytest.approx(step * 1e3, rel=0.01)
    assert row["tpot_datasheet_ms"] < row["tpot_estimate_ms"] and row["tpot_bound_ms"] <= row["tpot_datasheet_ms"]
    assert row["ttft_estimate_ms"] > row["ttft_bound_ms"]
    costs = row[[f"cost_{name}_ms" for name in COSTS]]
    assert costs.sum() == pytest.approx(row["tpot_estimate_ms"]) and (costs >= 0).all()
    assert row["cost_imbalance_ms"] == 0.0  # dense, TP only
    # what kvwall plan --engine prices the row with: the estimate times the offsets of every level that holds its key
    # (tables/derived/serving_estimate_offsets) at its 128 sequences per rank and its step's prefill stretch, each
    # level's factor x slope^(log2 x - log2 centre) x prefill slope^(log2 z - log2 centre), x and z within its range
    offsets = pd.read_csv(root / "tables" / "derived" / "serving_estimate_offsets.csv", keep_default_na=False)
    key = {"backend": "trtllm", "quantity": "TPOT", "mode": "agg", "model": "llama-3.1-70b", "device": "h200-sxm",
           "layout": "4 GPUs TP4", "weight_format": "fp8"}
    stretch = row["tpot_estimate_ms"] / (row["tpot_estimate_ms"] - row["cost_prefill_ms"])
    factor = 1.0
    for level, width in (("model", 4), ("device", 5), ("layout", 6), ("weight format", 7)):
        held = offsets[(offsets["level"] == level)
                       & np.logical_and.reduce([offsets[c] == v for c, v in list(key.items())[:width]])]
        assert len(held) == 1, level  # the row's engine, model, device, layout and format were measured
        t = held.iloc[0]
        x = np.clip(128.0, float(t["sequences_low"]), float(t["sequences_high"]))
        z = np.clip(stretch, float(t["prefill_stretch_low"]), float(t["prefill_stretch_high"]))
        factor *= (float(t["factor"]) * float(t["slope"]) ** (np.log2(x) - np.log2(float(t["sequences"])))
                   * float(t["prefill_slope"]) ** (np.log2(z) - np.log2(float(t["prefill_stretch"]))))
    assert row["tpot_planned_ms"] == pytest.approx(row["tpot_estimate_ms"] * factor, rel=1e-9)
    assert row["planned_layer"] == "offsets to weight format"
    assert row["ttft_planned_ms"] > 0
    summary = capsys.readouterr().err
    assert "calibrated estimate (derived from reported data), median |error|: " in summary
    assert "on 1 rows fitted on, none on unseen rows" in summary
    measured = float(lines[1 + next(i for i, line in enumerate(lines[1:]) if line.startswith(dense + ","))]
                     .split(",")[-1])
    planned_error = abs(row["tpot_planned_ms"] / measured - 1)
    assert f"  with its offsets (as planned), median |error|: {planned_error:.2f} on 1 rows fitted on" in summary


def test_a_model_the_offsets_do_not_hold_is_priced_with_the_constants_alone():
    from kvwall.validation.calibrated import CONSTANTS_LAYER, planned_columns
    from kvwall.validation.offsets import fitted_offsets, point_keys, sequences_per_rank

    points = pd.DataFrame({"backend": "vllm", "mode": "agg", "model": ["llama-3.1-8b", "qwen3-32b"], "device": "h200-sxm",
                           "weight_format": "bf16", "devices": 1, "tp": 1, "pp": 1, "dp": 1, "expert_ranks": 1,
                           "running_batch": 8.0, "reason": None})
    for name in COST_INPUTS:
        points[name] = 0.0
    points = points.assign(pipeline_idle=1.0, hbm_bandwidth=4.8e12, peak_flops=1e15, weight_read_per_device=4.8e9,
                           kv_read_per_device=0.0, stored_kv_ratio=1.0, osl=1000.0, imbalance_read_per_device=0.0,
                           expert_ranks=1.0, dispatch_load=0.0, gemm_columns=14336.0)
    constants = EngineConstants(0.0, 0.5, 0.5, 0.0, 0.0)
    # the offsets hold llama-3.1-8b only: one point measured at e^0.4 its estimate, shrunk by 1 / (1 + 3)
    lookup = fitted_offsets(point_keys(points.iloc[:1]), {"TPOT": pd.Series([0.4]), "TTFT": pd.Series([0.4])},
                            sequences_per_rank(points.iloc[:1]), pd.Series([1.0]), 3.0)
    planned = planned_columns(points, {"vllm": constants}, {"vllm": lookup}, 1.0)
    # weights 4.8 GB over 0.5 x 4.8 TB/s: 2 ms a step, nothing else
    assert planned["tpot_planned_ms"].iloc[1] == pytest.approx(2.0)
    assert planned["planned_layer"].iloc[1] == CONSTANTS_LAYER
    # each level keeps 1 / (1 + 3) of what the coarser ones left, its factor rounded to three digits: e^0.1 = 1.11,
    # e^0.075 = 1.08, e^0.05625 = 1.06, e^0.0421875 = 1.04 (one point: no slope)
    assert planned["tpot_planned_ms"].iloc[0] == pytest.approx(2.0 * 1.11 * 1.08 * 1.06 * 1.04, rel=1e-9)
    assert planned["planned_layer"].iloc[0] == "offsets to weight format"
    # an engine without constants is not priced, and names no layer
    assert planned_columns(points, {}, {}, 1.0)["planned_layer"].isna().all()


def test_the_constants_a_fit_held_at_a_bound_are_read_with_their_side(root):
    constants = pd.read_csv(root / "tables" / "derived" / "serving_engine_constants.csv")
    for engine, rows in constants.groupby("backend"):
        held = rows[rows["at_bound"] == "yes"]
        expected = [(r.constant, "lower" if r.value == r.lower else "upper") for r in held.itertuples()]
        assert [(c.name, c.bound) for c in read_calibrated(root / "tables", engine).at_bound] == expected, engine
    # TensorRT-LLM's HBM fraction at 1, its upper bound, and its cost per sequence at 0 s, its lower bound
    held = read_calibrated(root / "tables", "trtllm").at_bound
    assert [(c.name, c.value, c.bound) for c in held] == [("hbm_fraction", 1.0, "upper"),
                                                           ("sequence_step", 0.0, "lower")]


def test_kvwall_fit_prices_every_layout_it_lists_once_calibrated(root, capsys):
    from kvwall.cli.main import main

    assert main(["fit", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "32", "--context", "8k",
                 "--config", str(root / "config"), "--engine", "trtllm", "--isl", "4096", "--osl", "1024"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Calibrated estimate, trtllm (agg"))
    rows = next(i for i in range(head, len(lines)) if lines[i].startswith("  median held-out error")) + 1
    priced = [line for line in lines[rows:] if ": TPOT " in line]
    listed = [line for line in lines[:head] if " TP" in line or " PP" in line or " DP" in line]
    assert sum(line.startswith("Calibrated estimate") for line in lines) == 1 and len(priced) == len(listed) > 1
    for line in priced:  # no fitted constant makes a GPU faster than its datasheet
        tpot, datasheet = float(line.split("TPOT ")[1].split()[0]), float(line.split("datasheet TPOT ")[1].split()[0])
        assert tpot >= datasheet


def test_kvwall_regime_json_holds_the_calibrated_estimate(root, capsys):
    import json

    from kvwall.cli.main import main

    assert main(["regime", "--model", "llama-3-70b", "--device", "h200-sxm", "--batch", "64", "--context", "8k",
                 "--tp", "4", "--config", str(root / "config"), "--engine", "vllm", "--isl", "1024", "--osl", "1024",
                 "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)["calibrated_estimate"]
    assert answer["evidence"] == "derived from reported data"
    assert answer["tpot_error"]["scheme"] == "leave one model out, with offsets"  # a model never measured
    assert math.isclose(sum(answer["costs_s_per_token"].values()), answer["tpot_s"], rel_tol=1e-12)
    assert answer["tpot_s"] >= answer["tpot_datasheet_s"]
    # the datasheet's TTFT waits for the whole wave of 64 prefills at the dense peak; vLLM's requests wait for a share
    # of it (its wave_share) at its realized rate, after its fixed cost: more than that cost, less than the whole wave
    constants = read_calibrated(root / "tables", "vllm").constants
    assert constants.wave_share < 1.0 and answer["ttft_s"] > constants.first_token_fixed


def test_kvwall_regime_prices_a_measured_model_with_the_offsets_kvwall_plan_reads(root, catalog, capsys):
    import json

    import numpy as np

    from kvwall.cli.main import main
    from dataclasses import replace

    from kvwall.inputs.deployment import Deployment, load_serving_inputs
    from kvwall.plan.calibrated import planned_stretch, read_plan_calibration

    argv = ["regime", "--model", "llama-3.1-70b", "--device", "h200-sxm", "--batch", "64", "--context", "8k",
            "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--config", str(root / "config"), "--engine", "trtllm",
            "--isl", "1024", "--osl", "1024", "--json"]
    assert main(argv) == 0
    answer = json.loads(capsys.readouterr().out)["calibrated_estimate"]
    fit = read_plan_calibration(catalog, "trtllm")
    model, device, one = catalog.models["llama-3.1-70b"], catalog.devices["h200-sxm"], Deployment(weight_format="fp8")
    # the step's prefill stretch the plan prices this layout with at 64 in flight, and the factors there, each the
    # product of the table's levels
    stretch = answer["offsets"]["prefill_stretch"]
    assert stretch > 1.0 and stretch == pytest.approx(planned_stretch(
        fit, model, replace(one, kv_format="fp8"), device, "fp8", load_serving_inputs(catalog), 1024 + 512, 64, 1024,
        1024, "agg"), rel=1e-12)
    for quantity in ("TPOT", "TTFT"):
        offsets = answer["offsets"][quantity.lower()]
        assert offsets["factor"] == pytest.approx(fit.factor(quantity, model, device, one, "agg", 64.0, stretch),
                                                  rel=1e-12)
        assert offsets["factor"] == pytest.approx(np.prod(list(offsets["levels"].values())), rel=1e-12)
        assert list(offsets["levels"]) == ["model", "device", "layout", "weight format"]
    # the band of the estimate with offsets, and the costs, their offset included, sum to the TPOT
    assert answer["tpot_error"]["scheme"] == answer["held_out"] == "grouped 5-fold, with offsets"
    assert math.isclose(sum(answer["costs_s_per_token"].values()), answer["tpot_s"], rel_tol=1e-12)
    assert answer["costs_s_per_token"]["offsets"] == pytest.approx(
        answer["tpot_s"] * (1 - 1 / answer["offsets"]["tpot"]["factor"]), rel=1e-9)
    assert main(argv[:-1]) == 0
    said = capsys.readouterr().out
    assert "times its offsets (tables/derived/serving_estimate_offsets: TPOT x" in said
    assert f"prefill stretching the step x{stretch:.2f})" in said


def test_the_validate_summary_names_an_engine_without_constants():
    from kvwall.cli.validate import calibrated_summary
    from kvwall.validation.run import Validation

    points = pd.DataFrame({"id": ["a", "b", "c"], "backend": ["vllm", "vllm", "sglang"], "reason": None})
    rows = pd.DataFrame({"silicon_tpot_ms": [10.0, 20.0, 30.0]})
    # vllm: 11 against 10 and 18 against 20 ms, both 10% off; with offsets 10.5 and 20 ms; sglang not priced
    estimates = pd.DataFrame({"tpot_estimate_ms": [11.0, 18.0, np.nan], "tpot_planned_ms": [10.5, 20.0, np.nan]})
    lines = calibrated_summary(Validation(points, pd.DataFrame()), rows, estimates, {"a"}, {"vllm": None})
    assert lines == [
        "  calibrated estimate (derived from reported data), median |error|: 0.10 on 1 rows fitted on, 0.10 on 1 unseen rows",
        "  with its offsets (as planned), median |error|: 0.05 on 1 rows fitted on, 0.00 on 1 unseen rows",
        "  sglang: no fitted constants in tables/derived/serving_engine_constants: its rows keep no calibrated or "
        "planned estimate"]
