"""The serving measurements' repeatability (kvwall.validation.repeatability), by hand and on the shared file."""

import csv
from pathlib import Path

import pandas as pd
import pytest

from kvwall.validation.repeatability import repeat_ratios, repeatability
from docs_pages import page, words

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


# b = 8 measured three times (a row that lists another's measurement again is refused before, tests/test_copies);
# b = 16 once.
POINTS, ROWS = _measured({8: [(10.0, 100.0), (12.0, 90.0), (15.0, 95.0)], 16: [(14.0, 120.0)]})


def test_every_ordered_pair_of_two_measurements_gives_a_ratio():
    # pairs (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), in the order of the points
    assert repeat_ratios(POINTS, ROWS) == pytest.approx([10 / 12, 10 / 15, 1.2, 12 / 15, 1.5, 15 / 12])


def test_the_summary_by_hand():
    summary = repeatability(POINTS, ROWS)
    assert (summary["configurations"], summary["rows"], summary["pairs"]) == (1, 3, 6)
    # |ratio - 1|, sorted: 1/6, 0.2, 0.2, 0.25, 1/3, 0.5; the median between 0.2 and 0.25
    assert summary["median_distance"] == pytest.approx(0.225)
    assert summary["within_10"] == 0.0 and summary["within_20"] == pytest.approx(0.5)
    # the ratios sorted: 2/3, 0.8, 5/6, 1.2, 1.25, 1.5; the 10th percentile at 0.5 of the way from 2/3 to 0.8, the
    # 90th at 0.5 of the way from 1.25 to 1.5 (numpy's linear interpolation at position 0.1 x 5)
    assert summary["low"] == pytest.approx((2 / 3 + 0.8) / 2) and summary["high"] == pytest.approx(1.375)


def test_disagg_points_and_other_deployments_are_not_compared():
    other = POINTS.assign(tp=[2, 4, 2, 2], mode=["agg", "agg", "disagg", "agg"])
    # b = 8 at TP2 and agg: rows 0 and 2 are TP2, but row 2 is disagg; row 1 is TP4: no configuration twice
    assert repeat_ratios(other, ROWS).size == 0
    # rows 0 and 2 both agg at TP2: 10 / 15 and 15 / 10
    assert sorted(repeat_ratios(POINTS.assign(tp=[2, 4, 2, 2]), ROWS)) == pytest.approx([10 / 15, 1.5])


def test_the_built_table_counts_what_the_shared_file_holds():
    with (ROOT / "tables/derived/serving_repeatability.csv").open(encoding="utf-8") as handle:
        built = next(csv.DictReader(handle))
    assert (int(built["configurations"]), int(built["rows"]), int(built["pairs"])) == (194, 427, 560)
    assert float(built["within_10"]) == pytest.approx(0.7464, abs=1e-4)
    assert float(built["low"]) < 1.0 < float(built["high"])


def test_the_docs_say_what_the_built_table_holds():
    with (ROOT / "tables/derived/serving_repeatability.csv").open(encoding="utf-8") as handle:
        built = next(csv.DictReader(handle))
    readme = words("docs/validation.md") + " " + words("docs/planning.md")
    assert (f"{int(built['configurations'])} agg deployments at one concurrency measured more than once, "
            f"{int(built['pairs'])} ordered pairs of two measurements, {float(built['within_10']):.0%} of them "
            f"within 10% of each other") in readme
    assert (f"The median pair differs by {float(built['median_distance']):.1%}, but only "
            f"{float(built['within_10']):.0%} of the pairs are within 10%" in readme)
