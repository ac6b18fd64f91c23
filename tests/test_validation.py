"""Validation: reported serving measurements held against derived bounds (kvwall.validation, kvwall.inputs.serving)."""

import math
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest

from kvwall.inputs.errors import SpecError
from kvwall.inputs.serving import read_serving_measurements
from kvwall.inputs.validation_map import BelowBound, ValidationMap
from kvwall.units import DTYPE_BYTES
from kvwall.validation.below_bound import UndocumentedBelowBound, diagnose
from kvwall.validation.claim import format_pairs
from kvwall.validation.layout import decode_engines

DATA = "data/reported/serving-measurements.csv"
HEADER = ("id,measured_on,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
          "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,"
          "prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,"
          "prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,"
          "decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms")


@pytest.fixture(scope="module")
def rows(root):
    return read_serving_measurements(root / DATA)


def test_the_committed_measurements_read_whole(rows):
    assert rows.shape == (4185, 34)
    assert set(rows["backend"]) == {"trtllm", "vllm", "sglang"}
    assert rows["id"].is_unique


def _write(tmp_path, *lines):
    path = tmp_path / "points.csv"
    path.write_text("\n".join((HEADER, *lines)) + "\n")
    return path


GOOD = ("a_c8_x,2026-01-01,vllm,,org/model,h100_sxm,fp8,agg,1024,1024,fp8,fp8,8,2,1,1,2,1,"
        ",,,,,,,,,,,,,,120.5,10.25")


def test_a_bad_cell_names_file_line_and_column(tmp_path):
    bad = GOOD.replace(",8,2,1,1,2,1,", ",8,2.5,1,1,2,1,")
    with pytest.raises(SpecError) as error:
        read_serving_measurements(_write(tmp_path, GOOD, bad))
    assert error.value.key == "line 3 (id a_c8_x): tp_size" and "integer" in error.value.reason


@pytest.mark.parametrize("edit, replacement, column", [
    (",120.5,10.25", ",120.5,-1", "silicon_tpot_ms"),
    (",vllm,", ",tgi,", "backend"),
    (",1024,1024,", ",0,1024,", "isl"),
])
def test_a_bad_value_is_refused_with_its_column(tmp_path, edit, replacement, column):
    with pytest.raises(SpecError) as error:
        read_serving_measurements(_write(tmp_path, GOOD.replace(edit, replacement)))
    assert error.value.key == f"line 2 (id a_c8_x): {column}"


def test_a_repeated_id_is_refused(tmp_path):
    with pytest.raises(SpecError, match="given twice"):
        read_serving_measurements(_write(tmp_path, GOOD, GOOD))


def test_infinity_is_refused(tmp_path):
    with pytest.raises(SpecError, match="finite"):
        read_serving_measurements(_write(tmp_path, GOOD.replace(",10.25", ",inf")))


def _frame(**columns):
    base = {"id": ["p_c64_x"], "mode": ["agg"], "batch_size": [np.nan], "tp_size": [np.nan], "pp_size": [np.nan],
            "attention_dp_size": [np.nan], "moe_tp_size": [np.nan], "moe_ep_size": [np.nan],
            "decode_batch_size": [np.nan], "decode_num_workers": [np.nan], "decode_tp_size": [np.nan],
            "decode_pp_size": [np.nan], "decode_attention_dp_size": [np.nan], "decode_moe_tp_size": [np.nan],
            "decode_moe_ep_size": [np.nan]}
    base.update({k: [v] for k, v in columns.items()})
    return pd.DataFrame(base)


def test_an_agg_engine_is_tp_pp_dp_gpus_with_its_batch_on_each_dp_rank():
    # minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c512_cfg734: TP 4 x attention DP 4, batch_size 128 a rank, c512 in all
    rows = _frame(id="m_c512_cfg", batch_size=128, tp_size=4, pp_size=1, attention_dp_size=4, moe_tp_size=1,
                  moe_ep_size=16)
    engine = decode_engines(rows, pd.Series([True])).iloc[0]
    assert (engine["devices"], engine["tp"], engine["dp"], engine["moe_ep"], engine["in_flight"]) == (16, 4, 4, 16, 512)
    assert pd.isna(engine["reason"])
    one_rank = decode_engines(_frame(batch_size=64, tp_size=4, pp_size=1, attention_dp_size=1), pd.Series([False]))
    assert one_rank.iloc[0]["in_flight"] == 64


def test_every_agg_row_with_attention_dp_has_the_id_concurrency_of_batch_size_times_dp(root):
    rows = pd.read_csv(root / "data/reported/serving-measurements.csv")
    agg = rows[(rows["mode"] == "agg") & (rows["attention_dp_size"].fillna(1) > 1)]
    concurrency = agg["id"].str.extract(r"_c(\d+)_", expand=False).astype(float)
    assert len(agg) == 132 and (concurrency == agg["batch_size"] * agg["attention_dp_size"]).all()
    engines = decode_engines(agg, pd.Series(True, index=agg.index))
    assert (engines["in_flight"] == concurrency).all()


def test_a_disagg_decode_batch_is_per_attention_dp_rank():
    # kimik2_5_gb200_trtllm_fp4_disagg_1024x1024_c192_cfg759: c192 over 4 workers = 48 per rank, DP 1.
    rows = _frame(id="k_c192_cfg", mode="disagg", decode_batch_size=48, decode_num_workers=4, decode_tp_size=8,
                  decode_pp_size=1, decode_attention_dp_size=1, decode_moe_tp_size=1, decode_moe_ep_size=8)
    engine = decode_engines(rows, pd.Series([True])).iloc[0]
    assert (engine["side"], engine["devices"], engine["in_flight"]) == ("decode", 8, 48)


def test_a_disagg_row_without_its_batch_shares_the_id_concurrency_rounded_down():
    # c2048 over 1 worker x DP 32 ranks = 64 per rank: 2048 sequences on the engine; c100 over 3 x 1 -> 33 each.
    wide = _frame(id="d_c2048_cfg", mode="disagg", decode_num_workers=1, decode_tp_size=1, decode_attention_dp_size=32,
                  decode_moe_tp_size=1, decode_moe_ep_size=32)
    odd = _frame(id="d_c100_cfg", mode="disagg", decode_num_workers=3, decode_tp_size=4, decode_attention_dp_size=1)
    assert decode_engines(wide, pd.Series([True])).iloc[0]["in_flight"] == 2048
    assert decode_engines(odd, pd.Series([False])).iloc[0]["in_flight"] == 33


@pytest.mark.parametrize("columns, is_moe, reason", [
    ({"batch_size": 8, "tp_size": 2, "attention_dp_size": 0, "moe_tp_size": 0, "moe_ep_size": 0}, True, "a parallel size of 0"),
    ({"batch_size": 8, "tp_size": 8, "moe_tp_size": 1, "moe_ep_size": 4}, True, "MoE-TP x EP = 4 GPUs"),
    ({"tp_size": 8}, False, "concurrency is not given"),
    ({"batch_size": 8}, False, "layout is not given"),
])
def test_a_layout_that_does_not_divide_is_refused_with_its_reason(columns, is_moe, reason):
    engine = decode_engines(_frame(**columns), pd.Series([is_moe])).iloc[0]
    assert reason in engine["reason"]


def test_a_dense_model_ignores_the_expert_layout():
    rows = _frame(id="p_c8_x", batch_size=8, tp_size=8, moe_tp_size=1, moe_ep_size=1)
    assert pd.isna(decode_engines(rows, pd.Series([False])).iloc[0]["reason"])


def _vmap(*below):
    return ValidationMap("config/validation.yaml", MappingProxyType({}), MappingProxyType({}), "bf16",
                         MappingProxyType({}), MappingProxyType({}), "fp8", 1, 3, tuple(below))


def _points(realizations, backend="vllm"):
    n = len(realizations)
    return pd.DataFrame({"id": [f"p{i}" for i in range(n)], "model": "m", "device": "d", "backend": backend,
                         "weight_format": "fp4", "mode": "agg", "tpot_realization": realizations})


def test_a_point_below_its_bound_must_have_a_documented_diagnosis():
    with pytest.raises(UndocumentedBelowBound, match="1 point"):
        diagnose(_points([0.5, 1.2]), _vmap())
    entry = BelowBound(MappingProxyType({"backend": "vllm"}), "weight-format", "", "s")
    assert diagnose(_points([0.5, 1.2]), _vmap(entry)).fillna("none").tolist() == ["none", "weight-format"]


def test_a_documented_diagnosis_that_stopped_happening_fails():
    entry = BelowBound(MappingProxyType({"backend": "sglang"}), "capacity", "", "s")
    with pytest.raises(UndocumentedBelowBound, match="any more"):
        diagnose(_points([0.5]), _vmap(entry))
    assert diagnose(_points([0.5, 1.5]), _vmap(entry), strict=False).isna().all()


def test_format_pairs_put_the_wider_format_first_and_take_ratios():
    common = {"model": "m", "device": "d", "backend": "trtllm", "mode": "agg", "tp": 1, "pp": 1, "dp": 1, "moe_tp": 1,
              "moe_ep": 1, "isl": 1024, "osl": 1024, "in_flight": 8}
    points = pd.DataFrame([
        {**common, "id": "a", "weight_format": "fp4", "tpot_ms": 6.0, "tpot_bound_ms": 3.0, "regime": "weight-bound"},
        {**common, "id": "b", "weight_format": "fp8", "tpot_ms": 9.0, "tpot_bound_ms": 5.0, "regime": "weight-bound"},
    ])
    pair = format_pairs(points, DTYPE_BYTES).iloc[0]
    assert (pair["weight_format_wide"], pair["weight_format_narrow"]) == ("fp8", "fp4")
    assert math.isclose(pair["measured_speedup"], 1.5) and math.isclose(pair["predicted_speedup"], 5 / 3)
    assert math.isclose(pair["speedup_realized"], 0.9)


@pytest.fixture(scope="module")
def validated(committed_validation):
    return committed_validation[2]


LLAMA_H200_TP1 = "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp1_ep1_417"


def test_a_point_the_capacity_crossover_caps_by_hand(validated):
    # Llama-3.1-70B, FP8 weights and KV, one H200 (141 GB, 4.8 TB/s, 1,979 TFLOP/s FP8), 128 in flight,
    # 1024 in and 8192 out: mean context 1024 + 8192 / 2 = 5,120 tokens.
    point = validated.points.set_index("id").loc[LLAMA_H200_TP1]
    weights = 70.6e9 * 1.0                                   # P w_p
    kv_sequence = 2 * 80 * 8 * 128 * 1.0 * 5120               # 2 L n_kv d_h w_kv s = 838,860,800 B
    fit = math.floor(0.9 * (141e9 - weights) / kv_sequence)   # 75 of the 128 fit beside the weights
    assert fit == 75 and point["running_batch"] == 75 and point["regime"] == "capacity-bound"
    # Of the input embedding (V d = 128,256 x 8,192 weights) a step reads the 75 rows of its tokens, not the table.
    read = weights - (128_256 - 75) * 8192 * 1.0              # 69,549,941,248 B
    bound = (read + 75 * kv_sequence) / 4.8e12                # memory binds: 27.6 ms
    assert math.isclose(point["tpot_bound_ms"], bound * 1e3, rel_tol=1e-12)
    assert round(point["tpot_bound_ms"], 1) == 27.6
    # All 128 at once would need 70.6 + 107.4 GB > 141 GB; their bound, 36.9 ms, is above the measured 30.4 ms.
    assert round((read - 53 * 8192 + 128 * kv_sequence) / 4.8e12 * 1e3, 1) == 36.9
    assert math.isclose(point["tpot_realization"], bound * 1e3 / 30.42062744866144, rel_tol=1e-12)
    prefill = (2 * 70.6e9 * 1024 + 2 * 80 * 64 * 128 * 1024**2) / 1.979e15   # causal prefill of 1,024 tokens
    assert math.isclose(point["ttft_bound_ms"], max(prefill, weights / 4.8e12) * 1e3, rel_tol=1e-12)


def test_tensor_parallelism_splits_weights_and_kv_heads_by_hand(validated):
    # The same point at TP 4: 17.65 GB of weights and 2 of 8 KV heads per GPU; all 128 sequences fit.
    point = validated.points.set_index("id").loc[
        "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp4_ep1_507"]
    weights, kv_sequence = 70.6e9 / 4, 2 * 80 * 2 * 128 * 1.0 * 5120
    read = weights - (128_256 - 128) * 8192 * 1.0 / 4  # a quarter of the embedding's rows, gathered: 128 / 4 of them
    assert point["running_batch"] == 128
    assert math.isclose(point["tpot_bound_ms"], (read + 128 * kv_sequence) / 4.8e12 * 1e3, rel_tol=1e-12)


def test_every_row_is_bounded_or_refused_with_a_reason(validated):
    points = validated.points
    assert len(points) == 4185
    bounded = points["tpot_bound_ms"].notna()
    assert (bounded ^ points["reason"].notna()).all()
    assert bounded.sum() == 2476
    # Every model and system of the data is in the catalogue: no row is refused for want of a mapping.
    assert not points["reason"].fillna("").str.contains("not mapped").any()


def test_no_point_below_its_bound_goes_without_a_diagnosis(validated):
    below = validated.understood[validated.understood["tpot_realization"] > 1]
    assert not below.empty and below["diagnosis"].notna().all()


def test_kvwall_validate_writes_derived_columns_and_a_summary(root, tmp_path, capsys):
    from kvwall.cli.main import main

    out = tmp_path / "bounds.csv"
    assert main(["validate", str(root / DATA), "--output", str(out), "--config", str(root / "config")]) == 0
    written = pd.read_csv(out)
    for column in ("id", "tpot_bound_ms", "tpot_estimate_ms", "ttft_bound_ms", "tpot_realization",
                   "ttft_realization", "regime", "running_batch", "reason"):
        assert column in written.columns
    assert "silicon_tpot_ms" not in written.columns  # the measurements stay in the input: derived values only
    assert len(written) == 4185
    summary = capsys.readouterr().err
    lines = summary.splitlines()
    assert lines[0] == "kvwall validate: 4,185 rows read" and "measured below their TPOT bound" in summary
    assert lines[1].split() == ["understood", "2,476"] and lines[2].split() == ["refused", "1,709"]  # 4,185 - 2,476
    assert "    1,059  the sequences per decode engine" in summary and "       74  a layout that does not divide (" in summary
    assert "      322  one measurement listed twice: " in summary
    assert "      254  a layout the row does not record (4 variants" in summary
    engines = lines.index("  median TPOT bound / measured per engine:")
    assert [line.split()[0] for line in lines[engines + 1:engines + 4]] == ["sglang", "trtllm", "vllm"]
    assert 8 <= len(lines) <= 15 and max(map(len, lines)) <= 120  # a short report, not one long line
    # every understood row of the committed file is priced as kvwall plan --engine prices it, its finest offset
    # level measured, and closer to the measurement than the constants alone
    understood = written[written["reason"].isna()]
    assert (understood["planned_layer"] == "offsets to weight format").all() and written["planned_layer"].notna().sum() == 2476
    measured = pd.read_csv(root / DATA).set_index("id").loc[understood["id"], "silicon_tpot_ms"].to_numpy()
    planned = np.median(np.abs(understood["tpot_planned_ms"].to_numpy() / measured - 1))
    assert planned < 0.5 * np.median(np.abs(understood["tpot_estimate_ms"].to_numpy() / measured - 1))


def test_kvwall_validate_names_the_line_and_column_of_a_bad_cell(root, tmp_path, capsys):
    from kvwall.cli.main import main

    bad = _write(tmp_path, GOOD.replace(",h100_sxm,", ",h100 sxm,"))
    assert main(["validate", str(bad), "--config", str(root / "config")]) == 2
    assert "line 2 (id a_c8_x): system" in capsys.readouterr().err


def test_an_agg_row_whose_id_concurrency_is_not_batch_size_times_dp_is_refused():
    # nvidia_deepseek_r1_nvfp4_..._b200_sxm_trtllm_agg_4000x1000_c224_tp4_epnone_1: batch_size 56 = 224 / TP, DP blank
    rows = _frame(id="n_c224_tp4", batch_size=56, tp_size=4, pp_size=1, moe_tp_size=1, moe_ep_size=4)
    engine = decode_engines(rows, pd.Series([True])).iloc[0]
    assert engine["reason"] == "a layout the row does not record: its id's concurrency is not batch_size x attention DP"
    kept = decode_engines(_frame(id="n_c56_tp4", batch_size=56, tp_size=4, pp_size=1, moe_tp_size=1, moe_ep_size=4),
                          pd.Series([True])).iloc[0]
    assert pd.isna(kept["reason"]) and kept["in_flight"] == 56


def test_an_agg_row_whose_id_names_other_gpus_or_ep_than_its_columns_is_refused():
    # 2026_04_06_deepseek_r1_b200_sxm_trtllm_fp8_agg_8192x1024_c4_tp8_ep8_920: the id names 8 GPUs at EP 8, the columns
    # TP 64 (8 x 8) over MoE-TP 8 x EP 8
    moved = _frame(id="d_c4_tp8_ep8_920", batch_size=4, tp_size=64, pp_size=1, moe_tp_size=8, moe_ep_size=8)
    engine = decode_engines(moved, pd.Series([True])).iloc[0]
    assert engine["reason"] == "a layout the row does not record: its id's _tp<N>_ep<M>_ names other GPUs or EP"
    # the id names the engine's GPUs, TP x PP x DP: TP 1 over attention DP 8 at EP 8 is 8 GPUs (_tp8_0_ep8_0_)
    spread = _frame(id="d_c64_tp8_0_ep8_0_976", batch_size=8, tp_size=1, pp_size=1, attention_dp_size=8,
                    moe_tp_size=1, moe_ep_size=8)
    kept = decode_engines(spread, pd.Series([True])).iloc[0]
    assert pd.isna(kept["reason"]) and kept["devices"] == 8 and kept["in_flight"] == 64
    # 2026_04_06_kimi_k2_5_b200_sxm_vllm_fp4_agg_1024x1024_c32_tp4_ep4_1295: TP 4 x DP 4 at EP 16 is 16 GPUs, not 4;
    # and the same GPUs at another EP than the id's
    kimi = _frame(id="k_c32_tp4_ep4_1295", batch_size=8, tp_size=4, pp_size=1, attention_dp_size=4, moe_tp_size=1,
                  moe_ep_size=16)
    other_ep = _frame(id="k_c32_tp4_ep4_1", batch_size=32, tp_size=4, pp_size=1, moe_tp_size=2, moe_ep_size=2)
    for row in (kimi, other_ep):
        assert decode_engines(row, pd.Series([True])).iloc[0]["reason"] == engine["reason"]
    # an id that names no layout is read by its columns
    unnamed = _frame(id="d_c4_cfg201", batch_size=4, tp_size=8, pp_size=1, moe_tp_size=1, moe_ep_size=8)
    assert pd.isna(decode_engines(unnamed, pd.Series([True])).iloc[0]["reason"])


def test_the_rows_whose_id_names_another_layout_are_one_campaigns_with_n_x_m_gpus(root):
    raw = pd.read_csv(root / DATA)
    bounds = pd.read_csv(root / "tables/derived/serving_bounds.csv").set_index("id")
    refused = raw[raw["id"].map(bounds["reason"]).eq(
        "a layout the row does not record: its id's _tp<N>_ep<M>_ names other GPUs or EP")]
    named = refused["id"].str.extract(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_").astype(int)
    gpus = refused["tp_size"].fillna(1) * refused["pp_size"].fillna(1) * refused["attention_dp_size"].fillna(1)
    assert len(refused) == 193 and refused["id"].str.startswith("2026_04_06_").all()
    assert (gpus == named[0] * named[1]).all() and (named[1] > 1).all()
    # 40 repeat the TPOT and TTFT of another row that runs the GPUs and EP the id names
    others = raw[(raw["mode"] == "agg") & ~raw.index.isin(refused.index)].assign(
        gpus=lambda f: f["tp_size"].fillna(1) * f["pp_size"].fillna(1) * f["attention_dp_size"].fillna(1))
    same = ["model_path", "system", "backend", "gemm_quant_mode", "isl", "osl", "silicon_tpot_ms", "silicon_ttft_ms"]
    twins = refused.assign(n=named[0], m=named[1]).reset_index().merge(others, on=same, suffixes=("", "_twin"))
    at_named = twins[(twins["gpus"] == twins["n"]) & (twins["moe_ep_size_twin"] == twins["m"])]
    assert at_named["index"].nunique() == 40
