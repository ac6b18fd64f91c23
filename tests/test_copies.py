"""One measurement, one point (kvwall.validation.copies): by hand and on the shared file."""

import numpy as np
import pandas as pd

from kvwall.validation.copies import (ELSEWHERE, IN_CONFIGURATION, LISTED_TWICE, SAME_VALUE, UNNAMED, configuration,
                                      copies, same_values)
from docs_pages import page, words


def _points(*points):
    """Points not yet refused and their rows: each point (id, GPUs, TP, EP, in_flight, TPOT, TTFT) of one run."""
    frame = pd.DataFrame([{"id": id_, "reason": None, "device": "b200", "backend": "sglang", "mode": "agg",
                           "isl": 1024, "osl": 1024, "weight_format": "fp4", "in_flight": in_flight, "devices": gpus,
                           "tp": tp, "pp": 1, "dp": 1, "moe_tp": gpus // ep, "moe_ep": ep}
                          for id_, gpus, tp, ep, in_flight, _, _ in points])
    rows = pd.DataFrame([{"silicon_tpot_ms": tpot, "silicon_ttft_ms": ttft} for *_, tpot, ttft in points])
    return frame, rows


def _refusals(points, rows):
    return [None if pd.isna(reason) else reason for reason in copies(points, rows)]


def test_one_measurement_at_one_layout_is_counted_once_as_its_first_row():
    points, rows = _points(("a_c8_cfg1", 4, 4, 4, 8, 9.2, 130.0), ("b_c8_cfg2", 4, 4, 4, 8, 9.2, 130.0))
    assert _refusals(points, rows) == [None, LISTED_TWICE]


def test_the_row_whose_id_names_its_layout_is_the_one_kept():
    points, rows = _points(("a_c8_cfg1", 4, 4, 4, 8, 9.2, 130.0), ("d_c8_tp4_0_ep4_0_7", 4, 4, 4, 8, 9.2, 130.0))
    assert _refusals(points, rows) == [LISTED_TWICE, None]


def test_one_number_printed_twice_with_its_last_digit_apart_is_one_measurement():
    # the shared file writes some measurements twice, a TTFT of 229.71297337498982 ms and 229.71297337498984 ms
    points, rows = _points(("a_c4_cfg1", 8, 8, 1, 4, 5.761149619971996, 229.71297337498984),
                           ("b_c4_tp8_ep1_20", 8, 8, 1, 4, 5.761149619971996, 229.71297337498982),
                           ("c_c4_cfg2", 8, 8, 1, 4, 5.761149619971996, 229.71297337498982 * (1 + 1e-9)))
    assert _refusals(points, rows) == [LISTED_TWICE, None, None]  # a billionth apart: another measurement
    # each value becomes the smallest of its run of values within a relative 1e-12, in sorted order
    values = pd.Series([3.0, 1.0, 1.0 + 5e-13, 1.0 + 2e-12, 3.0 * (1 + 1e-13)])
    assert list(same_values(values)) == [3.0, 1.0, 1.0, 1.0 + 2e-12, 3.0]
    assert SAME_VALUE == 1e-12


def test_another_ttft_concurrency_or_device_is_another_measurement():
    points, rows = _points(("a_c8_cfg1", 4, 4, 4, 8, 9.2, 130.0), ("b_c8_cfg2", 4, 4, 4, 8, 9.2, 131.0),
                           ("c_c16_cfg3", 4, 4, 4, 16, 9.2, 130.0), ("e_c8_cfg4", 4, 4, 4, 8, 9.2, 130.0))
    points.loc[3, "device"] = "b300"
    assert copies(points, rows).isna().all()


def test_a_copy_at_another_layout_is_refused_with_its_whole_configuration():
    # dsr1_b200_sglang_fp4_agg_1024x8192_c4_cfg202 (16 GPUs, TP16, MoE-TP 4 x EP 4) holds the TPOT and TTFT of
    # 2026_03_25_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x8192_c4_tp4_0_ep4_0_287 (4 GPUs, TP4, EP4): the configuration's
    # other rows (other lengths and concurrency, the same columns) are refused with it; another configuration is not
    points, rows = _points(("dsr1_b200_agg_1024x8192_c4_cfg202", 16, 16, 4, 4, 8.733762, 110.5),
                           ("2026_03_25_b200_agg_1024x8192_c4_tp4_0_ep4_0_287", 4, 4, 4, 4, 8.733762, 110.5),
                           ("dsr1_b200_agg_8192x1024_c256_cfg202", 16, 16, 4, 256, 40.1, 900.0),
                           ("dsr1_b200_agg_8192x1024_c256_cfg203", 16, 16, 4, 256, 41.3, 910.0))
    assert _refusals(points, rows) == [ELSEWHERE, None, IN_CONFIGURATION, None]


def test_copies_at_other_layouts_that_no_id_names_are_all_refused():
    points, rows = _points(("a_c8_cfg1", 16, 16, 4, 8, 9.2, 130.0), ("b_c8_cfg2", 4, 4, 4, 8, 9.2, 130.0))
    assert _refusals(points, rows) == [UNNAMED, UNNAMED]


def test_a_row_refused_before_is_no_copy_to_keep():
    points, rows = _points(("a_c8_cfg1", 4, 4, 4, 8, 9.2, 130.0), ("b_c8_cfg2", 4, 4, 4, 8, 9.2, 130.0))
    points.loc[0, "reason"] = "the concurrency is not given (batch_size blank)"
    assert copies(points, rows).isna().all()


def test_a_configuration_is_the_id_without_its_lengths_and_concurrency():
    ids = pd.Series(["dsr1_b200_sglang_fp4_agg_1024x8192_c4_cfg202", "dsr1_b200_sglang_fp4_agg_8192x1024_c128_cfg202",
                     "2026_03_25_deepseek_r1_b200_sxm_sglang_fp4_agg_1024x8192_c4_tp4_0_ep4_0_287"])
    assert list(configuration(ids)) == ["dsr1_b200_sglang_fp4_agg_cfg202", "dsr1_b200_sglang_fp4_agg_cfg202",
                                        "2026_03_25_deepseek_r1_b200_sxm_sglang_fp4_agg_tp4_0_ep4_0_287"]


def test_the_shared_files_copies_are_counted_once(root):
    raw = pd.read_csv(root / "data/reported/serving-measurements.csv")
    bounds = pd.read_csv(root / "tables/derived/serving_bounds.csv").set_index("id")
    reason = raw["id"].map(bounds["reason"])
    assert [int(reason.eq(r).sum()) for r in (LISTED_TWICE, ELSEWHERE, IN_CONFIGURATION, UNNAMED)] == [322, 24, 23, 0]
    # every copy at another layout is a configuration's row (_cfg<K>) whose columns give the engine N x M GPUs where
    # the kept row's id and columns name N GPUs at EP M, as the 193 rows refused by their ids (tests/test_validation)
    elsewhere = raw[reason.eq(ELSEWHERE)]
    assert elsewhere["id"].str.contains(r"_cfg\d+$").all()
    kept = raw[reason.isna()].merge(elsewhere, on=["system", "backend", "isl", "osl"], suffixes=("", "_copy"))
    kept = kept[np.isclose(kept["silicon_tpot_ms"], kept["silicon_tpot_ms_copy"], rtol=SAME_VALUE, atol=0)
                & np.isclose(kept["silicon_ttft_ms"], kept["silicon_ttft_ms_copy"], rtol=SAME_VALUE, atol=0)]
    gpus = kept["tp_size"].fillna(1) * kept["attention_dp_size"].fillna(1)
    gpus_copy = kept["tp_size_copy"].fillna(1) * kept["attention_dp_size_copy"].fillna(1)
    assert len(kept) == 24 and (gpus_copy == gpus * kept["moe_ep_size"]).all() and (kept["moe_ep_size"] > 1).all()
    # what the validation page says
    readme = words("docs/validation.md")
    assert ("322 rows at its layout are refused as listed twice, and 24 at another layout" in readme
            and "with the 23 other rows of their seven configurations" in readme)
    assert elsewhere["id"].str.extract(r"_(cfg\d+)$")[0].nunique() == 7
    # the rows of that N x M column signature (TP = MoE-TP x EP, MoE-TP = EP > 1) that no id or copy contradicts are
    # kept as recorded, as data/reported/README.md says
    gpus_all = raw["tp_size"].fillna(1) * raw["pp_size"].fillna(1) * raw["attention_dp_size"].fillna(1)
    signature = (raw["mode"].eq("agg") & (raw["moe_tp_size"] > 1) & (raw["moe_tp_size"] == raw["moe_ep_size"])
                 & (gpus_all == raw["moe_tp_size"] * raw["moe_ep_size"]))
    kept_signature = raw[signature & reason.isna() & (gpus_all >= 16)]
    data_readme = " ".join((root / "data/reported/README.md").read_text(encoding="utf-8").split())
    assert len(kept_signature) == 43 and "that no copy contradicts, 43 agg rows, are kept as recorded" in data_readme
    # no understood agg row repeats another's run, TPOT and TTFT
    understood = raw[reason.isna() & raw["mode"].eq("agg")]
    assert not understood.duplicated(["system", "backend", "isl", "osl", "gemm_quant_mode", "silicon_tpot_ms",
                                      "silicon_ttft_ms"]).any()
