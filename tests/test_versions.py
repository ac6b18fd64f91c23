"""How far one deployment's measured TPOT and TTFT move with the engine version and the checkpoint
(kvwall.validation.versions): by hand, on the shapes of the catalogue's models, and the committed table against the
validation page."""

import pandas as pd
import pytest

from docs_pages import words
from kvwall.validation.versions import shapes_of, version_spread

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _points_and_rows(models, versions, tpot, in_flight=None):
    """Agg points of one deployment (every GROUP column equal), one per model, version and TPOT (ms), each with a
    TTFT (ms) of 100 times its TPOT squared."""
    n = len(models)
    points = pd.DataFrame({"mode": "agg", "model": models, "device": "b200", "backend": "trtllm",
                           "weight_format": "fp8", "tp": 8, "pp": 1, "dp": 1, "moe_tp": 8, "moe_ep": 1, "isl": 1024,
                           "osl": 1024, "in_flight": in_flight or [8.0] * n})
    rows = pd.DataFrame({"silicon_tpot_ms": tpot, "silicon_ttft_ms": [100.0 * t * t for t in tpot],
                         "backend_version": versions}, index=points.index)
    return points, rows


def test_two_checkpoints_of_one_shape_are_one_model_and_the_pairs_are_split_by_what_differs(catalog):
    assert shapes_of(catalog.models)["deepseek-v3"] == "deepseek-r1"
    assert shapes_of(catalog.models)["llama-3.1-8b"] == "llama-3.1-8b"  # no other model of its shapes
    # four measurements of one deployment: R1 at 10 ms and 10.1 ms under 1.2.0, at 15 ms under 1.1.0, V3 at 20 ms with
    # no version recorded; and one R1 point at another concurrency, which pairs with nothing
    points, rows = _points_and_rows(["deepseek-r1", "deepseek-r1", "deepseek-r1", "deepseek-v3", "deepseek-r1"],
                                    ["1.2.0", "1.2.0", "1.1.0", None, "1.2.0"], [10.0, 10.1, 15.0, 20.0, 30.0],
                                    [8.0, 8.0, 8.0, 8.0, 16.0])
    both = version_spread(points, rows, catalog.models).set_index(["quantity", "versions", "checkpoints"])
    kinds = [("one version", "one model"), ("two versions", "one model"),
             ("not recorded", "two models of the same shapes")]
    assert list(both.index) == [(quantity, *kind) for quantity in ("TPOT", "TTFT") for kind in kinds]
    spread, ttft = both.loc["TPOT"], both.loc["TTFT"]
    one = spread.loc[("one version", "one model")]  # 10 / 10.1 and 10.1 / 10
    assert (one["configurations"], one["pairs"]) == (1, 2)
    assert one["median_distance"] == pytest.approx((1 - 10 / 10.1 + 0.01) / 2, rel=1e-12)
    # 10 / 15, 10.1 / 15, 15 / 10, 15 / 10.1: distances 1/3, 0.32667, 0.5, 0.48515, the median halfway between the
    # middle two
    two = spread.loc[("two versions", "one model")]
    assert two["pairs"] == 4 and two["median_distance"] == pytest.approx((1 / 3 + 15 / 10.1 - 1) / 2, rel=1e-12)
    assert two["within_10"] == 0.0 and two["low"] < 1.0 < two["high"]
    assert spread.loc[("not recorded", "two models of the same shapes"), "pairs"] == 6  # V3 against each R1 of c8
    # the TTFTs' ratios are the TPOTs' squared, over the same pairs: under two versions 10^2 / 15^2, 10.1^2 / 15^2
    # and their inverses, distances 0.556, 0.547, 1.25 and 1.205, the median halfway between the middle two
    assert (ttft["pairs"] == spread["pairs"]).all() and (ttft["configurations"] == spread["configurations"]).all()
    assert ttft.loc[("one version", "one model"), "median_distance"] == pytest.approx(
        (1 - (10 / 10.1) ** 2 + (10.1 / 10) ** 2 - 1) / 2, rel=1e-12)
    assert ttft.loc[("two versions", "one model"), "median_distance"] == pytest.approx(
        (1 - (10 / 15) ** 2 + (15 / 10.1) ** 2 - 1) / 2, rel=1e-12)


def test_the_committed_table_and_what_the_validation_page_says_of_it():
    both = pd.read_csv(ROOT / "tables/derived/serving_version_spread.csv").set_index(["quantity", "versions",
                                                                                     "checkpoints"])
    spread, ttft = both.loc["TPOT"], both.loc["TTFT"]
    repeat = pd.read_csv(ROOT / "tables/derived/serving_repeatability.csv").iloc[0]
    one, two = spread.loc[("one version", "one model")], spread.loc[("two versions", "one model")]
    # the repeatability table's pairs are one model's, under one version or two
    assert one["pairs"] + two["pairs"] == repeat["pairs"]
    # another version moves a deployment far more than measuring it again under one version
    assert two["median_distance"] > 20 * one["median_distance"] and one["within_10"] > 0.9 > 0.5 > two["within_10"]
    shapes = spread.loc[("two versions", "two models of the same shapes")]
    transfer = pd.read_csv(ROOT / "tables/derived/serving_transfer.csv").set_index("terms")["median_error"]
    prose = words("docs/validation.md")
    assert (f"Under one engine version two measurements of one deployment differ by a median "
            f"{one['median_distance']:.1%} ({one['within_10']:.0%} within 10%); under two versions of one engine by "
            f"{two['median_distance']:.1%} ({two['within_10']:.0%} within 10%); DeepSeek-V3's and DeepSeek-R1's, one "
            f"shape under two versions, by {shapes['median_distance']:.1%} (none within 10%)") in prose
    assert shapes["within_10"] == 0.0
    assert f"error leaving one model out ({transfer['the estimate' + chr(39) + 's costs']:.1%})" in prose
    # the TTFT moves as far under two versions, and repeats less closely under one
    one_ttft, two_ttft = ttft.loc[("one version", "one model")], ttft.loc[("two versions", "one model")]
    forms = pd.read_csv(ROOT / "tables/derived/serving_ttft_forms.csv").set_index(["form", "scheme"])
    ttft_out = forms.loc[("a share of the wave (the estimate)", "leave one model out"), "median_error"]
    assert two_ttft["median_distance"] > 5 * one_ttft["median_distance"]
    assert (f"Their TTFTs differ by a median {one_ttft['median_distance']:.1%} under one version and "
            f"{two_ttft['median_distance']:.1%} under two ({two_ttft['low']:.2f}x to {two_ttft['high']:.2f}x for 80% "
            f"of the pairs), where the TTFT's error leaving one model out is {ttft_out:.1%}") in prose


def test_the_readme_states_what_another_engine_version_moves():
    spread = pd.read_csv(ROOT / "tables/derived/serving_version_spread.csv").set_index(["quantity", "versions",
                                                                                       "checkpoints"])
    two = spread.loc[("TPOT", "two versions", "one model"), "median_distance"]
    assert (f"One deployment measured under two versions of one engine differs by a median {two:.1%} "
            f"(`tables/derived/serving_version_spread`)") in words("README.md")
