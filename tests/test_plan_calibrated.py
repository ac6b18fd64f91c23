"""`kvwall plan --engine` (kvwall.plan.calibrated): the calibrated estimate of a planned layout by hand, the
properties of the search, and the constants and error band the command states against the build's tables."""

import json
from dataclasses import replace

import pandas as pd
import pytest

from kvwall.cli.main import main
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.loader import load_catalog
from kvwall.model.engine_constants import EngineConstants
from kvwall.plan.calibrated import EngineFit, ErrorBand, shared_fit
from kvwall.plan.curves import plan_curves
from kvwall.plan.search import Workload, best_within

BAND = ErrorBand(100, 0.2, 0.8, 1.5)
#: Constants chosen by hand: 1 ms a step, 80% of the bandwidth, 50% of the peak, 20 us a message, 200 ms to a first token.
FIT = EngineFit("trtllm", EngineConstants(1e-3, 0.8, 0.5, 20e-6, 0.2), 1.0, 100, BAND, BAND)


@pytest.fixture(scope="module")
def catalog():
    loaded = load_catalog("config")
    return replace(loaded, assumptions=replace(loaded.assumptions, weight_dtype="bf16", kv_dtype="bf16"))


def test_a_calibrated_layout_by_hand(catalog):
    model, device = catalog.models["llama-3-8b"], catalog.devices["h200-sxm"]
    curve = plan_curves(catalog, model, device, "bf16", 1, Workload(1024, 1024, 1.0), "trtllm", fit=FIT)[0]
    b = curve.batches
    # one H200, b sequences at the mean decode context 1,536: the weights but of the input embedding only the b rows of
    # the batch's tokens, and b x 1,536 x 131,072 B of BF16 KV, over 0.8 x 4.8 TB/s; 1 ms a step; b / 1,024 arrivals
    # a step, each a prefill of 1,024 tokens: 2 x 8.03e9 x 1,024 + 2 x 32 layers x 32 heads x 128 x 1,024^2 FLOPs
    # over 0.5 x 989.5 TFLOP/s (no collective on one device; the FLOPs of a step stay under its bytes)
    weights = 2 * (8.03e9 - (128_256 - b) * 4096)
    memory = (weights + b * 1536 * 131_072) / (0.8 * 4.8e12)
    prefill = 2 * 8.03e9 * 1024 + 2 * 32 * 32 * 128 * 1024**2
    rate = 0.5 * 989.5e12
    assert curve.tpot == pytest.approx(memory + 1e-3 + b / 1024 * prefill / rate, rel=1e-9)
    # TTFT: 200 ms and half the wave of b prefills and its own, (b + 1) / 2 of them
    assert curve.ttft == pytest.approx(0.2 + (b + 1) / 2 * prefill / rate, rel=1e-9)
    assert round(curve.tpot[0] * 1e3, 3) == 4.994 and round(curve.ttft[0] * 1e3, 1) == 233.8


def test_a_ttft_estimate_that_grows_with_the_batch_caps_it(catalog):
    model, device = catalog.models["llama-3-8b"], catalog.devices["h200-sxm"]
    loose = Workload(1024, 1024, 1.0)
    capped = Workload(1024, 1024, 1.0, ttft_max=0.5)
    curve = plan_curves(catalog, model, device, "bf16", 1, loose, "trtllm", fit=FIT)[0]
    best = best_within([curve], capped)[0]
    # the largest b whose TTFT is within 500 ms: 0.2 + (b + 1) / 2 x 33.8 ms <= 0.5 s up to b = 16
    assert best.batch == 16 and best.ttft <= 0.5 < curve.ttft[16]
    assert best_within([curve], loose)[0].batch == curve.batches[-1]


@pytest.mark.parametrize("fit", [None, FIT], ids=["datasheet", "calibrated"])
def test_looser_targets_and_more_devices_never_lower_the_best(catalog, fit):
    model, device = catalog.models["llama-3-8b"], catalog.devices["h200-sxm"]
    serving = load_serving_inputs(catalog)
    def best(gpus, tpot_max):
        workload = Workload(1024, 1024, tpot_max)
        found = best_within(plan_curves(catalog, model, device, "bf16", gpus, workload, "trtllm", serving, fit), workload)
        return found[0].tokens_per_second_per_device if found else 0.0
    by_target = [best(2, t) for t in (0.004, 0.006, 0.01, 0.02, 0.05)]
    assert by_target == sorted(by_target) and by_target[-1] > 0
    # every layout on up to N devices is one on up to N + 1
    by_devices = [best(n, 0.01) for n in (1, 2, 3, 4)]
    assert by_devices == sorted(by_devices)


@pytest.mark.slow
def test_the_shared_fit_is_the_tables_constants_and_error(catalog):
    fit = shared_fit(catalog, "trtllm")
    constants = pd.read_csv("tables/derived/serving_engine_constants.csv").query("backend == 'trtllm'")
    scale = {"ms": 1e-3, "us": 1e-6, "ratio": 1.0}
    table = {row.constant: row.value * scale[row.unit] for row in constants.itertuples()}
    assert {name: pytest.approx(value, rel=1e-12) for name, value in table.items()} == {
        name: getattr(fit.constants, name) for name in table}
    error = pd.read_csv("tables/derived/serving_estimate_error.csv").set_index(["scheme", "quantity", "backend", "mode"])
    for quantity, band in (("TPOT", fit.tpot), ("TTFT", fit.ttft)):
        row = error.loc[("grouped 5-fold", quantity, "trtllm", "agg")]
        assert band.points == row["points"] and band.median_error == pytest.approx(row["median_error"], abs=5e-5)
        assert band.low < 1 < band.high


@pytest.mark.slow
def test_the_command_states_the_calibrated_answer_and_the_datasheet_beside_it(capsys):
    argv = ["plan", "--model", "llama-3-70b", "--device", "h200-sxm", "--gpus", "4", "--isl", "1024", "--osl", "1024",
            "--tpot-max", "30", "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--json"]
    assert main(argv) == 0
    datasheet = json.loads(capsys.readouterr().out)
    assert main([*argv, "--engine", "trtllm"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert calibrated["evidence"] == "derived from reported data" and datasheet["evidence"] == "derived"
    assert calibrated["calibration"]["engine"] == "trtllm" and "ttft_ms" in calibrated["best"][0]
    assert calibrated["datasheet"]["best"] == datasheet["best"][:5]
    assert all(p["tpot_ms"] <= 30 for p in calibrated["best"])


def test_a_missing_measurements_file_is_one_line(capsys):
    assert main(["plan", "--model", "llama-3-8b", "--device", "h200-sxm", "--gpus", "1", "--isl", "1024", "--osl",
                 "1024", "--tpot-max", "50", "--engine", "vllm", "--measurements", "no/such.csv"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvwall: --engine vllm: no/such.csv: no such file") and "\n" not in err
