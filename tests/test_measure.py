"""The measured leg: the two-term fit, the bound check, the kernels against a naive reference, the KV accounting, the
quick run's record, and the rendering of committed records. Nothing here asserts a speed."""

import json
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
import yaml

from kvwall.cli.main import main
from kvwall.figures.style import save
from kvwall.inputs.errors import SpecError
from kvwall.measure.analysis import kernel_summary, largest_point, ordering_check, repeat_spread
from kvwall.measure.compute_ceiling import TILES_PER_WORKER, TileProducts
from kvwall.measure.config import load_measure_config
from kvwall.figures.measured_kv_slope import copy_bound_slope, kv_slope_figure
from kvwall.measure.fit import bandwidth_from_slope, fit_line
from kvwall.measure.kv_layouts import ContiguousKV, PagedKV
from kvwall.measure.numpy_decode import NumpyDecode, reference_decode, splits_per_sequence
from kvwall.measure.record import free_path, read_record, read_records, to_json
from kvwall.measure.run import load_flags
from kvwall.measure.shape import DecodeShape, measured_kv_bytes
from kvwall.tables.kv_slope_fits import kv_slope_table
from kvwall.inputs.reported import load_reported
from kvwall.model.roofline import intensity_long_context_limit
from kvwall.units import GB, GiB, dtype_bytes, to_base

ROOT = Path(__file__).resolve().parents[1]
RECORDS = sorted((ROOT / "data" / "measured").glob("*.json"))


@pytest.fixture(scope="module")
def reported():
    return load_reported(ROOT / "config" / "reported")


@pytest.fixture(scope="module")
def settings(catalog):
    return load_measure_config(ROOT / "config" / "measure.yaml", catalog)


# ---- the fit ---------------------------------------------------------------------------------------------------


def test_fit_recovers_an_exact_line():
    x = [0.0625, 0.125, 0.25, 0.5, 1.0, 2.0]
    fit = fit_line(x, [3.5 + 12.25 * xi for xi in x])
    assert fit.intercept == pytest.approx(3.5, abs=1e-12)
    assert fit.slope == pytest.approx(12.25, rel=1e-12)
    assert fit.r_squared == pytest.approx(1.0, abs=1e-12)
    assert fit.n == 6
    assert fit.slope_ci[1] - fit.slope_ci[0] == pytest.approx(0.0, abs=1e-9)


def test_fit_matches_the_hand_computed_regression():
    # x = 0..4, y = 1 3 2 5 4: b = Sxy/Sxx = 8/10, a = 3 - 0.8 * 2, R^2 = 1 - 3.6/10, s^2 = 3.6/3,
    # SE(b) = sqrt(1.2/10), SE(a) = sqrt(1.2 (1/5 + 4/10)), t(0.975, 3) = 3.18245.
    fit = fit_line([0, 1, 2, 3, 4], [1, 3, 2, 5, 4])
    assert (fit.slope, fit.intercept, fit.r_squared) == pytest.approx((0.8, 1.4, 0.64), abs=1e-12)
    assert fit.slope_ci == pytest.approx((-0.30243, 1.90243), abs=1e-5)
    assert fit.intercept_ci == pytest.approx((-1.30040, 4.10040), abs=1e-5)


def test_fit_intervals_contain_the_truth_at_their_confidence_level():
    rng = np.random.default_rng(7)
    x = np.repeat([0.25, 0.5, 1.0, 2.0, 4.0], 4)
    fits = [fit_line(x, 20.0 + 16.0 * x + rng.normal(0.0, 0.5, x.size)) for _ in range(400)]
    slope_hits = np.mean([f.slope_ci[0] < 16.0 < f.slope_ci[1] for f in fits])
    intercept_hits = np.mean([f.intercept_ci[0] < 20.0 < f.intercept_ci[1] for f in fits])
    assert 0.92 <= slope_hits <= 0.98 and 0.92 <= intercept_hits <= 0.98
    assert np.mean([f.slope for f in fits]) == pytest.approx(16.0, abs=0.01)


def test_fit_refuses_too_few_points_or_one_kv_size():
    with pytest.raises(ValueError):
        fit_line([1, 2], [3, 4])
    with pytest.raises(ValueError):
        fit_line([1, 1, 1], [3, 4, 5])


def test_slope_to_bandwidth_reproduces_the_reported_kv_bandwidths(reported):
    for fit in ("hf-sdpa", "vllm-fa2"):
        slope = reported[f"fit.{fit}.slope"].value / to_base(1.0, "ms/GiB")
        assert bandwidth_from_slope(slope) == pytest.approx(reported[f"fit.{fit}.kv-bandwidth"].value / GB, abs=0.05)
    with pytest.raises(ValueError):
        bandwidth_from_slope(0.0)


def test_copy_bound_slope_is_one_gib_over_the_bandwidth(reported):
    copy = reported["gb10.copy-bandwidth"].value / GB
    assert copy_bound_slope(copy) == pytest.approx(GiB / (copy * GB) * 1e3)
    assert bandwidth_from_slope(copy_bound_slope(copy)) == pytest.approx(copy)


# ---- the bound check -------------------------------------------------------------------------------------------


def _points(slope_ms_per_gib: float, copy_gb_per_s: float) -> list[dict]:
    """Noise-free points on t = 1 + b * KV_GiB, with the copy bandwidth measured beside each."""
    points = []
    for gib in (0.25, 0.5, 1.0, 2.0):
        ms = 1.0 + slope_ms_per_gib * gib
        points.append({"kv_gib": gib, "median_ms": ms, "bandwidth_gb_per_s": gib * GiB / (ms * 1e-3) / GB,
                       "copy_bandwidth_gb_per_s": copy_gb_per_s, "times_s": [ms * 1e-3] * 3})
    return points


TARGETS = {"copy_fraction_at_largest_point": 0.7, "r_squared": 0.99}


def test_a_kernel_below_the_copy_bound_is_valid():
    summary = kernel_summary(_points(50.0, 40.0), 40.0, None, 0.95, TARGETS, min_r_squared=0.95)  # 1 GiB / 50 ms = 21.5 GB/s
    assert summary["valid"] and summary["flags"] == []
    assert summary["copy_fraction"] == pytest.approx(bandwidth_from_slope(50.0) / 40.0)
    assert summary["targets"]["r_squared"]["met"]
    assert not summary["targets"]["copy_fraction_at_largest_point"]["met"]


def test_the_invalid_flag_trips_when_a_bandwidth_exceeds_the_copy_bandwidth():
    summary = kernel_summary(_points(20.0, 40.0), 40.0, None, 0.95, TARGETS, min_r_squared=0.95)  # 1 GiB / 20 ms = 53.7 GB/s
    assert not summary["valid"]
    assert any("exceeds the copy bandwidth" in flag for flag in summary["flags"])
    assert any("largest point" in flag for flag in summary["flags"])


def test_the_invalid_flag_trips_above_the_device_specification():
    summary = kernel_summary(_points(50.0, 40.0), 40.0, 20.0, 0.95, TARGETS, min_r_squared=0.95)
    assert not summary["valid"]
    assert any("specification" in flag for flag in summary["flags"])


def test_a_poor_fit_is_invalid_and_says_why():
    # KV_GiB 1..5 against 100 300 200 500 400 ms: R^2 = 1 - 3.6/10 = 0.64 (the hand-computed regression above,
    # shifted in x and scaled in y), slope 80 ms/GiB = 13.4 GB/s, below the copy bandwidth.
    points = [{"kv_gib": float(x), "median_ms": float(y), "bandwidth_gb_per_s": 1.0, "copy_bandwidth_gb_per_s": 40.0,
               "times_s": [y * 1e-3] * 3} for x, y in zip(range(1, 6), (100, 300, 200, 500, 400))]
    summary = kernel_summary(points, 40.0, None, 0.95, TARGETS, min_r_squared=0.95)
    assert not summary["valid"]
    assert summary["flags"] == ["poor fit: R^2 0.640 is below 0.95 (validity.r_squared of the measure settings), so step "
                                "time is not explained by KV bytes and the slope means nothing"]
    assert kernel_summary(_points(50.0, 40.0), 40.0, None, 0.95, TARGETS, min_r_squared=0.95)["valid"]


def test_repeats_that_disagree_make_a_kernel_invalid():
    points = _points(50.0, 40.0)
    # repeats 10, 12, 15 ms: (15 - 10) / 12 = 41.7% at every point, past a 30% limit
    for point in points:
        point["times_s"] = [0.010, 0.012, 0.015]
    assert repeat_spread(points) == pytest.approx(5 / 12)
    summary = kernel_summary(points, 40.0, None, 0.95, TARGETS, min_r_squared=0.95, max_spread=0.3)
    assert not summary["valid"] and summary["repeat_spread"] == pytest.approx(5 / 12)
    assert summary["flags"][-1].startswith("repeats disagree: at a typical point the slowest is 42% of the median")
    assert kernel_summary(points, 40.0, None, 0.95, TARGETS, min_r_squared=0.95, max_spread=0.5)["valid"]


def test_a_busy_machine_makes_the_run_invalid():
    # 2 CPUs at 0.5 per CPU: at most 1.0 of load from other work. A 10 s run of 2 workers adds at most
    # 2 x (1 - exp(-10 / 60)) = 0.307 to the 1-minute average.
    quiet = {"cpus": 2, "before": [0.3, 0.2, 0.1], "after": [1.2, 0.4, 0.2]}  # 1.2 - 0.307 = 0.893 <= 1.0
    assert load_flags(quiet, workers=2, elapsed_s=10.0, max_load_per_cpu=0.5) == []
    busy = {"cpus": 2, "before": [6.76, 9.81, 9.55], "after": [6.94, 9.75, 9.53]}
    (flag,) = load_flags(busy, workers=2, elapsed_s=10.0, max_load_per_cpu=0.5)
    assert flag.startswith("machine busy: a 1-minute load average of 6.76 from other work on 2 CPUs, above 1.00")
    assert load_flags({**quiet, "after": [1.4, 0.4, 0.2]}, workers=2, elapsed_s=10.0, max_load_per_cpu=0.5)
    assert load_flags(None, workers=2, elapsed_s=10.0, max_load_per_cpu=0.5) == []  # no load average: no claim


def _kernel(layout, slope, low, high, library="numpy 2"):
    return {"layout": layout, "library": library,
            "fit": {"slope_ms_per_gib": slope, "slope_ci_ms_per_gib": [low, high]}}


def test_a_paged_kernel_faster_than_the_contiguous_one_is_implausible():
    kernels = {"numpy-contiguous": _kernel("contiguous", 60.0, 58.0, 62.0),
               "numpy-paged": _kernel("paged (16-token blocks)", 40.0, 38.0, 42.0)}
    assert ordering_check(kernels) == {"numpy-paged": [
        "implausible kernel ordering: the paged slope 40.00 ms/GiB (CI up to 42.00) is below numpy-contiguous's "
        "60.00 ms/GiB (CI from 58.00): paged KV cannot stream faster than contiguous KV"]}


def test_paged_within_the_contiguous_interval_or_slower_is_plausible():
    within = {"numpy-contiguous": _kernel("contiguous", 60.0, 58.0, 62.0),
              "numpy-paged": _kernel("paged (16-token blocks)", 59.0, 57.0, 61.0)}
    slower = {"numpy-contiguous": _kernel("contiguous", 60.0, 58.0, 62.0),
              "numpy-paged": _kernel("paged (16-token blocks)", 70.0, 68.0, 72.0)}
    other_library = {"numpy-contiguous": _kernel("contiguous", 60.0, 58.0, 62.0),
                     "torch-paged": _kernel("paged", 10.0, 9.0, 11.0, library="torch 2.9")}
    assert ordering_check(within) == ordering_check(slower) == ordering_check(other_library) == {}


def test_a_slope_that_is_not_positive_is_invalid():
    points = _points(50.0, 40.0)
    for p in points:
        p["median_ms"] = 5.0 - p["kv_gib"]
    summary = kernel_summary(points, 40.0, None, 0.95, TARGETS, min_r_squared=0.95)
    assert not summary["valid"] and summary["fit"]["kv_bandwidth_gb_per_s"] is None


def test_a_compute_ceiling_below_the_copy_bandwidth_binds():
    summary = kernel_summary(_points(50.0, 40.0), 40.0, None, 0.95, TARGETS, min_r_squared=0.95, compute_bandwidth=30.0)
    roof = summary["roofline"]
    assert roof["binding"] == "compute" and roof["bandwidth_gb_per_s"] == 30.0
    assert roof["largest_point_fraction"] == pytest.approx(summary["largest_point"]["bandwidth_gb_per_s"] / 30.0)
    assert roof["no_overlap_gb_per_s"] == pytest.approx(1 / (1 / 40.0 + 1 / 30.0))  # 17.14 GB/s
    assert summary["valid"]  # a ceiling is a bound to compare with, never a validity check


def test_without_a_ceiling_the_copy_binds_and_there_is_no_overlap_bound():
    summary = kernel_summary(_points(50.0, 40.0), 40.0, None, 0.95, TARGETS, min_r_squared=0.95)
    assert summary["roofline"] == {"bandwidth_gb_per_s": 40.0, "binding": "copy", "no_overlap_gb_per_s": None,
                                   "largest_point_fraction": summary["largest_point"]["copy_fraction"]}
    above = kernel_summary(_points(50.0, 40.0), 40.0, None, 0.95, TARGETS, min_r_squared=0.95, compute_bandwidth=80.0)
    assert above["roofline"]["binding"] == "copy" and above["roofline"]["bandwidth_gb_per_s"] == 40.0


@pytest.mark.parametrize("copy, ceiling", [(40.0, 30.0), (50.0, 50.0), (10.0, 1000.0), (1000.0, 10.0)])
def test_the_no_overlap_bound_is_below_both_and_at_least_half_the_lower(copy, ceiling):
    roof = kernel_summary(_points(50.0, copy), copy, None, 0.95, TARGETS, min_r_squared=0.95, compute_bandwidth=ceiling)["roofline"]
    assert min(copy, ceiling) / 2 <= roof["no_overlap_gb_per_s"] < min(copy, ceiling)


# ---- the kernels ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_cache():
    rng = np.random.default_rng(3)
    shape = DecodeShape(layers=2, batch=3, context=96, kv_heads=2, group=3, head_dim=16, dtype="fp32")
    queries = rng.standard_normal(shape.query_shape, dtype=np.float32)
    kv = ContiguousKV(*(rng.standard_normal(shape.kv_array_shape, dtype=np.float32) for _ in range(2)))
    return queries, kv, reference_decode(queries, kv.k, kv.v)


@pytest.mark.parametrize("workers, tile", [(1, 96), (2, 32), (5, 16)])
def test_contiguous_kernel_matches_the_reference(small_cache, workers, tile):
    queries, kv, expected = small_cache
    with NumpyDecode(queries, kv, tile, workers) as step:
        np.testing.assert_allclose(step(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("workers, tile", [(1, 96), (2, 32), (5, 16)])
def test_paged_kernel_matches_the_reference(small_cache, workers, tile):
    queries, kv, expected = small_cache
    table = PagedKV.scattered_table(batch=3, context=96, block_size=16, rng=np.random.default_rng(11))
    assert sorted(table.reshape(-1)) == list(range(18)) and not np.array_equal(table.reshape(-1), np.arange(18))
    paged = PagedKV.paginate(kv, table, 16)
    with NumpyDecode(queries, paged, tile, workers) as step:
        np.testing.assert_allclose(step(), expected, rtol=1e-5, atol=1e-6)


def test_reference_attends_to_a_single_matching_key():
    # One query equal to a large key among orthogonal ones: the output is that key's value.
    k = np.zeros((1, 1, 1, 4, 4), np.float32)
    k[0, 0, 0] = np.eye(4) * 50.0
    v = np.arange(16, dtype=np.float32).reshape(1, 1, 1, 4, 4)
    q = (np.eye(4)[2] * 50.0).reshape(1, 1, 1, 1, 4).astype(np.float32)
    np.testing.assert_allclose(reference_decode(q, k, v)[0, 0, 0, 0], v[0, 0, 0, 2], atol=1e-6)


def test_torch_sdpa_matches_the_reference(small_cache):
    pytest.importorskip("torch")
    from kvwall.measure.torch_decode import TorchSdpa

    queries, kv, expected = small_cache
    out = TorchSdpa.from_arrays(queries, kv.k, kv.v)().numpy()
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_the_compute_ceiling_counts_the_kernels_bytes_and_flops(catalog):
    qwen = catalog.models["qwen2.5-7b"]
    shape = DecodeShape.of(qwen, layers=2, batch=1, context=1024, dtype="fp32")
    intensity = float(intensity_long_context_limit(qwen, dtype_bytes("fp32")))
    assert intensity == 3.5  # 2g / w_kv = 2 * 7 / 4 (SoK section 3.2)
    with closing(TileProducts(shape, 512, 3, intensity, np.random.default_rng(0))) as products:
        products()
        assert products.bytes_counted == 3 * TILES_PER_WORKER * 2 * 4 * 512 * 128 * 4  # workers x tiles x K+V tile
        assert products.flops_counted == 3.5 * products.bytes_counted
    with pytest.raises(ValueError, match="fp32"):
        TileProducts(DecodeShape.of(qwen, 2, 1, 1024, "fp16"), 512, 1, intensity, np.random.default_rng(0))


def test_splits_divide_the_tiles_and_give_every_worker_work():
    for layers, batch, tiles, workers in [(2, 1, 128, 2), (4, 8, 64, 16), (1, 1, 6, 16), (28, 16, 1, 16)]:
        splits = splits_per_sequence(layers, batch, tiles, workers)
        assert tiles % splits == 0
        assert layers * batch * splits >= min(2 * workers, layers * batch * tiles)


# ---- KV accounting --------------------------------------------------------------------------------------------


def test_kv_bytes_of_the_measured_layers_follow_eq1(catalog):
    qwen = catalog.models["qwen2.5-7b"]
    shape = DecodeShape.of(qwen, layers=2, batch=4, context=8192, dtype="fp32")
    assert (shape.kv_heads, shape.group, shape.head_dim) == (4, 7, 128)
    assert shape.kv_bytes == 2 * 2 * 4 * 8192 * 4 * 128 * 4
    assert measured_kv_bytes(qwen, shape) == shape.kv_bytes


def test_all_layers_in_fp16_give_the_reported_kv_per_token(catalog, reported):
    qwen = catalog.models["qwen2.5-7b"]
    shape = DecodeShape.of(qwen, layers=qwen.n_layers, batch=1, context=1, dtype="fp16")
    assert shape.kv_bytes == reported["qwen2.5-7b.kv-per-token"].value  # 56 KiB


def test_the_arrays_hold_exactly_the_counted_bytes(catalog):
    shape = DecodeShape.of(catalog.models["qwen2.5-7b"], layers=1, batch=2, context=256, dtype="fp32")
    rng = np.random.default_rng(0)
    assert ContiguousKV.allocate(shape, rng).nbytes == shape.kv_bytes
    assert PagedKV.allocate(shape, rng, 16).nbytes == shape.kv_bytes


def test_mla_models_are_refused(catalog):
    with pytest.raises(ValueError, match="MLA"):
        DecodeShape.of(catalog.models["deepseek-v2"], 1, 1, 256, "fp32")


# ---- the settings ---------------------------------------------------------------------------------------------


def _write_settings(tmp_path: Path, change) -> Path:
    document = yaml.safe_load((ROOT / "config" / "measure.yaml").read_text())
    change(document)
    path = tmp_path / "measure.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize("change, key", [
    (lambda d: d.update(model="deepseek-v2"), "model"),
    (lambda d: d.update(model="no-such-model"), "model"),
    (lambda d: d["sweeps"]["full"]["cpu"].update(dtype="fp16"), "sweeps.full.cpu.dtype"),
    (lambda d: d["sweeps"]["full"]["cpu"].update(contexts=[8192, 1000]), "sweeps.full.cpu.contexts[1]"),
    (lambda d: d["sweeps"]["full"]["cpu"].update(layers=29), "sweeps.full.cpu.layers"),
    (lambda d: d["sweeps"]["full"]["cpu"].update(batches=[1], contexts=[8192]), "sweeps.full.cpu"),
    (lambda d: d["device_specs"].update(H200="no-such-device"), "device_specs.H200"),
    (lambda d: d.update(tile_tokens=100), "tile_tokens"),
])
def test_bad_settings_name_the_key(catalog, tmp_path, change, key):
    with pytest.raises(SpecError) as error:
        load_measure_config(_write_settings(tmp_path, change), catalog)
    assert error.value.key == key


def test_settings_resolve_the_model_and_the_reported_ids(settings, reported):
    assert settings.model.id == "qwen2.5-7b"
    for fit in settings.reported_fits:
        for field in ("framework", "slope", "intercept", "points", "r-squared"):
            assert f"fit.{fit}.{field}" in reported
    assert f"{settings.reported_platform}.copy-bandwidth" in reported


# ---- a quick run, through the command line ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("measure") / "quick.json"
    status = main(["measure", "--quick", "--no-progress", "--output", str(path)])
    return status, path


@pytest.mark.slow
def test_quick_mode_writes_a_record_that_validates(quick_run, settings, catalog):
    status, path = quick_run
    record = read_record(path)  # validates against kvwall/inputs/schemas/measured_record.schema.yaml
    assert status == (0 if record["valid"] else 1)
    assert record["mode"] == "quick" and record["evidence"] == "measured"
    quick = load_measure_config(ROOT / "config" / "measure.yaml", catalog, "quick")
    cpu = record["devices"]["cpu"]
    assert set(cpu["kernels"]) >= {"numpy-contiguous", "numpy-paged"}
    assert cpu["copy"]["bytes_counted"] == 2 * quick.sweeps["cpu"].copy_buffer_bytes
    ceiling = cpu["compute_ceiling"]
    assert ceiling["applies_to"] == ["numpy-contiguous", "numpy-paged"] and ceiling["flop_per_byte"] == 3.5
    assert len(ceiling["times_s"]) == len(quick.sweeps["cpu"].points) * quick.sweeps["cpu"].repeats
    for name, kernel in cpu["kernels"].items():
        roof = kernel["roofline"]
        bounds = [largest_point(kernel["points"])["copy_bandwidth_gb_per_s"]]
        bounds += [ceiling["bandwidth_gb_per_s"]] if name in ceiling["applies_to"] else []
        assert roof["bandwidth_gb_per_s"] == min(bounds)
        assert (roof["no_overlap_gb_per_s"] is None) == (name not in ceiling["applies_to"])
        assert kernel["fit"]["n"] == len(quick.sweeps["cpu"].points) == len(kernel["points"])
        assert all(len(p["times_s"]) == quick.sweeps["cpu"].repeats for p in kernel["points"])
        assert 0.0 <= kernel["fit"]["r_squared"] <= 1.0
        assert set(kernel["targets"]) == set(settings.targets)


def test_a_second_record_of_the_day_does_not_replace_the_first(tmp_path):
    first = tmp_path / "amd-epyc-2c-2026-11-29.json"
    assert free_path(first) == first
    first.write_text("{}")
    assert free_path(first).name == "amd-epyc-2c-2026-11-29-2.json"
    (tmp_path / "amd-epyc-2c-2026-11-29-2.json").write_text("{}")
    assert free_path(first).name == "amd-epyc-2c-2026-11-29-3.json"


def test_records_are_written_with_sorted_keys(quick_run):
    _, path = quick_run
    text = path.read_text()
    record = json.loads(text)
    assert text == to_json(record) == json.dumps(record, indent=2, sort_keys=True) + "\n"


# ---- committed records ----------------------------------------------------------------------------------------


def test_committed_records_validate_and_are_full_runs():
    for path in RECORDS:
        record = read_record(path)
        assert record["mode"] == "full", path


def test_the_table_has_one_measured_row_per_kernel_of_every_record(quick_run):
    _, path = quick_run
    records = read_records([path, *RECORDS])
    table = kv_slope_table(records)
    assert table.evidence == "measured"
    assert len(table.rows) == sum(len(d["kernels"]) for _, r in records for d in r["devices"].values())
    first = table.rows[0]
    kernel = records[0][1]["devices"]["cpu"]["kernels"][first["kernel"]]
    assert first["slope_ms_per_gib"] == kernel["fit"]["slope_ms_per_gib"]


def test_the_figure_draws_measured_and_reported_slopes_and_saves_byte_stable(quick_run, reported, settings, tmp_path):
    _, path = quick_run
    records = read_records([path])
    figure = kv_slope_figure(records, reported, settings.reported_platform, settings.reported_fits)
    labels = [tick.get_text() for tick in figure.axes[-1].get_yticklabels()]
    assert sum("reported" in label for label in labels) == len(settings.reported_fits)
    assert any("numpy-paged" in label for label in labels)
    saves = []
    for attempt in range(2):
        paths = [tmp_path / f"{attempt}.{ext}" for ext in ("svg", "pdf", "png")]
        save(figure, paths)
        saves.append([p.read_bytes() for p in paths])
    assert saves[0] == saves[1]


def test_a_record_missing_its_fit_is_refused(quick_run, tmp_path):
    _, path = quick_run
    record = json.loads(path.read_text())
    del record["devices"]["cpu"]["kernels"]["numpy-paged"]["fit"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(record))
    with pytest.raises(SpecError, match="fit"):
        read_record(broken)

