"""What the estimate knows of a model or device it never measured: the schemes that hold one out with offsets, the
model families, and the targets `kvwall benchmark` and `kvwall validate --summary` print (never asserted here)."""

import pandas as pd
import pytest
import yaml

from kvwall.validation.estimate_error import SCHEMES, model_families
from kvwall.validation.targets import ERROR_TARGETS, ErrorTarget, scored

ERROR_TABLE = "tables/derived/serving_estimate_error.csv"
VALUES = ["points", "median_error", "mean_error", "within_10", "within_20", "measured_over_estimate_p10",
          "measured_over_estimate_p90"]


def test_a_held_out_model_keeps_no_offset_of_its_own_and_a_held_out_device_keeps_its_models(root):
    errors = pd.read_csv(root / ERROR_TABLE).set_index(["scheme", "quantity", "backend", "mode"])
    # every offset is keyed by the engine, mode and model first: leaving the model out leaves nothing to look up
    plain, offset = errors.loc["leave one model out", VALUES], errors.loc["leave one model out, with offsets", VALUES]
    pd.testing.assert_frame_equal(plain, offset)
    # a device left out keeps what its engine and model measured on the other devices: closer at the median
    device, device_offset = (errors.loc[(scheme, "TPOT", "all", "agg")]
                             for scheme in ("leave one device out", "leave one device out, with offsets"))
    assert device_offset["median_error"] < device["median_error"]
    # on the committed measurements: agg TPOT off by 15.3% for a new model, 14.1% for a new device, 6.7% in distribution
    assert offset.loc[("TPOT", "all", "agg"), "median_error"] == pytest.approx(0.1526, abs=5e-4)
    assert device_offset["median_error"] == pytest.approx(0.1405, abs=5e-4)
    assert errors.loc[(SCHEMES[6], "TPOT", "all", "agg"), "median_error"] == pytest.approx(0.0673, abs=5e-4)
    assert set(errors.index.get_level_values("scheme")) == set(SCHEMES)


def test_a_model_family_is_its_configs_model_type_and_an_unnamed_model_its_own(root):
    families = yaml.safe_load((root / "config/validation.yaml").read_text())["families"]["models"]
    points = pd.DataFrame({"model": ["deepseek-v3", "deepseek-r1", "llama-3.1-8b", "llama-3.1-70b", "qwen3-32b",
                                     "someone-elses"]})
    assert list(model_families(points, families)) == ["deepseek_v3", "deepseek_v3", "llama", "llama", "qwen3",
                                                      "someone-elses"]
    # eleven models of the measurements in nine families: the two Llamas and the two DeepSeeks go out together
    assert len(families) == 11 and len(set(families.values())) == 9


def test_the_targets_are_read_from_the_pooled_rows_new_models_first():
    rows = [{"scheme": SCHEMES[7], "quantity": "TPOT", "backend": "all", "mode": "agg", "median_error": 0.09,
             "mean_error": 0.2, "within_10": 0.55},
            {"scheme": SCHEMES[7], "quantity": "TPOT", "backend": "vllm", "mode": "agg", "median_error": 0.5,
             "mean_error": 0.5, "within_10": 0.0},
            {"scheme": SCHEMES[6], "quantity": "TTFT", "backend": "all", "mode": "disagg", "median_error": 0.3,
             "mean_error": 0.4, "within_10": 0.1}]
    found = scored(pd.DataFrame(rows))
    assert found == (("leave one model out, with offsets: agg TPOT median_error 9.0% <= 10%", True),
                     ("leave one model out, with offsets: agg TPOT mean_error 20.0% <= 15%", False),
                     ("leave one model out, with offsets: agg TPOT within_10 55.0% >= 55%", True),
                     ("grouped 5-fold, with offsets: disagg TTFT median_error 30.0% <= 30%", True))
    assert ERROR_TARGETS[0].scheme == "leave one model out, with offsets"
    assert not ErrorTarget(SCHEMES[8], "TPOT", "agg", "within_10", 0.5, at_most=False).met(0.49)


def test_the_benchmark_prints_the_built_tables_error_targets(root):
    from kvwall.cli import benchmark

    built = benchmark.estimate_targets(root)
    assert [label.split(":")[0] for label, _ in built] == [target.scheme for target in ERROR_TARGETS]
    result = benchmark.BenchmarkResult(
        cold_build=1.0, noop_build=0.1, contributor_loop=1.0, loop_jobs=1, load_average=0.0, kind_floors=(), cores=1,
        grid_points=1, grid_throughput=1.0, validation_rows=1, validation_time=0.1, estimate_error=built,
        estimate_fit_time=12.5)
    targets = result.targets()
    assert targets["the fit and every cross-validation scheme (12.5 s) < 20 s"]
    assert "leave one model out, with offsets: agg TPOT median_error 15.3% <= 10%" in targets
    assert not targets["leave one model out, with offsets: agg TPOT median_error 15.3% <= 10%"]
