"""The serving measurements' repeatability (kvwall.validation.repeatability), by hand and on the shared file."""

import csv
from pathlib import Path

import pandas as pd
import pytest

from kvwall.validation.repeatability import repeat_ratios, repeatability

ROOT = Path(__file__).resolve().parents[1]


def _measured(configurations):
    """Understood agg points and their rows: per in_flight, its (TPOT, TTFT) measurements."""
    points, rows = [], []
    for in_flight, measurements in configurations.items():
        for tpot, ttft in measurements:
            points.append({"model": "m", "device": "d", "backend": "vllm", "weight_format": "fp8", "mode": "agg",
                           "tp": 2, "pp": 1, "dp": 1, "moe_tp": 1, "moe_ep": 1, "isl": 1024, "osl": 1024,
                           "in_flight": in_flight})
            rows.append({"silicon_tpot_ms": tpot, "silicon_ttft_ms": ttft})
    return pd.DataFrame(points), pd.DataFrame(rows)


# b = 8 measured three times, one of them listed twice (the same TPOT and TTFT); b = 16 once.
POINTS, ROWS = _measured({8: [(10.0, 100.0), (10.0, 100.0), (12.0, 90.0)], 16: [(14.0, 120.0)]})


def test_two_different_measurements_give_a_ratio_each_way_and_a_row_listed_twice_none():
    # pairs (0, 2), (1, 2), (2, 0), (2, 1): 10 / 12 twice, 12 / 10 twice; (0, 1) is one measurement listed twice
    assert repeat_ratios(POINTS, ROWS) == pytest.approx([10 / 12, 10 / 12, 1.2, 1.2])


def test_the_summary_by_hand():
    summary = repeatability(POINTS, ROWS)
    assert (summary["configurations"], summary["rows"], summary["listed_twice"], summary["pairs"]) == (1, 3, 1, 4)
    # |ratio - 1|: 1/6, 1/6, 0.2, 0.2
    assert summary["median_distance"] == pytest.approx((1 / 6 + 0.2) / 2)
    assert summary["within_10"] == 0.0 and summary["within_20"] == 1.0
    assert summary["low"] == pytest.approx(10 / 12) and summary["high"] == pytest.approx(1.2)


def test_the_same_tpot_with_another_ttft_is_a_second_measurement():
    points, rows = _measured({8: [(10.0, 100.0), (10.0, 110.0)]})
    assert list(repeat_ratios(points, rows)) == [1.0, 1.0]
    assert repeatability(points, rows)["listed_twice"] == 0


def test_disagg_points_and_other_deployments_are_not_compared():
    other = POINTS.assign(tp=[2, 4, 2, 2], mode=["agg", "agg", "agg", "disagg"])
    # b = 8 at TP2: rows 0 and 2 (10 / 12 and 12 / 10); row 1 is TP4, row 3 disagg
    assert sorted(repeat_ratios(other, ROWS)) == pytest.approx([10 / 12, 1.2])


def test_the_built_table_counts_what_the_shared_file_holds():
    with (ROOT / "tables/derived/serving_repeatability.csv").open(encoding="utf-8") as handle:
        built = next(csv.DictReader(handle))
    assert (int(built["configurations"]), int(built["rows"]), int(built["pairs"])) == (330, 802, 912)
    # the rows listed twice, counted on the file as read: an understood agg row (no refusal reason in the bounds
    # table) whose deployment, TPOT and TTFT another such row has
    raw = pd.read_csv(ROOT / "data/reported/serving-measurements.csv")
    bounds = pd.read_csv(ROOT / "tables/derived/serving_bounds.csv")
    agg = raw[(raw["mode"] == "agg") & raw["id"].isin(bounds.loc[bounds["reason"].isna(), "id"])]
    deployment = ["model_path", "system", "backend", "gemm_quant_mode", "isl", "osl", "batch_size", "tp_size", "pp_size",
                  "attention_dp_size", "moe_tp_size", "moe_ep_size"]
    assert int(built["listed_twice"]) == agg.duplicated([*deployment, "silicon_tpot_ms", "silicon_ttft_ms"]).sum() == 203
    assert float(built["within_10"]) == pytest.approx(0.7478, abs=1e-4)
    assert float(built["low"]) < 1.0 < float(built["high"])


def test_the_readme_says_what_the_built_table_holds():
    with (ROOT / "tables/derived/serving_repeatability.csv").open(encoding="utf-8") as handle:
        built = next(csv.DictReader(handle))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (f"{int(built['configurations'])} agg deployments at one concurrency measured more than once, "
            f"{int(built['pairs'])} ordered pairs of different measurements, {float(built['within_10']):.0%} of them "
            f"within 10% of each other; {int(built['listed_twice'])} rows repeat") in readme
    assert (f"({int(built['listed_twice'])}, the same measurement under two ids)" in readme
            and f"The median pair differs by {float(built['median_distance']):.1%}, but only "
                f"{float(built['within_10']):.0%} of the pairs are within 10%" in readme)
