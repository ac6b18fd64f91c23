"""Which prefills a request waits for before its first token (kvwall.model.first_token_estimate's share of the wave,
kvwall.validation.ttft_forms): each form by hand, the share recovered from a synthetic set, and the committed table
read against the estimate's own error and the validation page."""

import numpy as np
import pandas as pd
import pytest

from docs_pages import words
from kvwall.model.decode_costs import decode_step
from kvwall.model.engine_constants import EngineConstants
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.validation.calibration import first_token_terms, fit_first_token
from kvwall.validation.points import COST_INPUTS
from kvwall.validation.ttft_forms import APART, ESTIMATE, FLOPS_ALONE, FORMS, RHO, form_terms

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
CONSTANTS = EngineConstants(1e-3, 0.8, 0.5, 0.0, first_token_fixed=0.1, wave_share=0.25)


def _points(**columns) -> pd.DataFrame:
    """Agg points on 1 PFLOP/s (0.5 realized): 5e13 prefill FLOPs a prompt (0.1 s), 8 GB of weights a step (10 ms at
    0.8 x 1 TB/s), 1,000 output tokens, every request in flight running unless given, MLP GEMMs of 4,096 columns."""
    rows = len(next(iter(columns.values())))
    points = pd.DataFrame({name: np.zeros(rows) for name in dict.fromkeys(COST_INPUTS)})
    points = points.assign(mode="agg", osl=1000.0, hbm_bandwidth=1e12, peak_flops=1e15, pipeline_idle=1.0,
                           expert_ranks=1.0, stored_kv_ratio=1.0, weight_read_per_device=8e9,
                           prefill_flops_per_device=5e13, kv_read_per_device=0.0, gemm_columns=4096.0)
    points = points.assign(**columns)
    return points.assign(in_flight=points["running_batch"]) if "in_flight" not in columns else points


def test_a_request_waits_for_its_engines_share_of_the_wave_by_hand():
    points = _points(running_batch=[1.0, 33.0])
    # one running request waits for no other; of 33, for a quarter of the 16 others ahead of it on average: 4 prompts
    assert first_token_estimate(points, CONSTANTS, 1.0) == pytest.approx([0.1 + 0.1, 0.1 + (1 + 4) * 0.1])
    alone, wave = first_token_terms(points, CONSTANTS, 1.0)
    assert alone == pytest.approx([0.1, 0.1]) and wave == pytest.approx([0.0, 16 * 0.1])
    # a whole wave (the datasheet's form): (33 + 1) / 2 prompts
    whole = EngineConstants(1e-3, 0.8, 0.5, 0.0, first_token_fixed=0.1)
    assert whole.wave_share == 1.0 and first_token_estimate(points, whole, 1.0)[1] == pytest.approx(0.1 + 17 * 0.1)


def test_each_form_by_hand_on_one_point():
    point = _points(running_batch=[33.0], in_flight=[33.0])
    tpot = decode_step(point, CONSTANTS)[0]  # 10 ms of weights, 1 ms fixed, 33 / 1000 prompts of 0.1 s: 14.3 ms
    assert tpot == pytest.approx(0.010 + 0.001 + 0.033 * 0.1)
    for form in ("a whole wave", "alone", ESTIMATE):
        assert form_terms(form, point, CONSTANTS, 1.0)[0] == pytest.approx([0.1])
    # random arrivals: the prefill server is busy 33 x 0.1 s every 1,000 steps of 14.3 ms, rho = 0.2308; a prompt
    # waits rho / (2 (1 - rho)) = 0.15 of one prefill beyond its own
    rho = 33 * 0.1 / (1000 * tpot)
    alone, wave = form_terms("random arrivals", point, CONSTANTS, 1.0)
    assert alone == pytest.approx([0.1 * (1 + rho / (2 * (1 - rho)))]) and wave == pytest.approx([0.0])
    busy = _points(running_batch=[33.0], in_flight=[33.0], osl=[10.0])  # the server saturated: held at RHO
    assert form_terms("random arrivals", busy, CONSTANTS, 1.0)[0] == pytest.approx([0.1 * (1 + RHO / (2 * (1 - RHO)))])
    assert list(FORMS.values()) == [1.0, 0.0, 0.0, None, None, None]


def test_a_prompt_rides_the_decode_steps_of_an_engine_that_mixes_them_by_hand():
    # 33 running beside prompts of 1,024 tokens under a budget of 8,192 tokens a step: a prompt rides 1,024 / 8,159
    # steps of 14.3 ms (test_each_form_by_hand_on_one_point), 1.79 ms beside its 0.1 s of FLOPs
    point = _points(running_batch=[33.0], prompt_steps=[1024 / (8192 - 33)])
    step = decode_step(point, CONSTANTS)[0]
    one_prompt = 0.1 + 1024 / 8159 * step
    assert round(1024 / 8159 * step * 1e5) == 179
    assert first_token_estimate(point, CONSTANTS, 1.0) == pytest.approx([0.1 + (1 + 4) * one_prompt])
    assert form_terms(ESTIMATE, point, CONSTANTS, 1.0)[0] == pytest.approx([one_prompt])
    assert form_terms(APART, point, CONSTANTS, 1.0)[0] == pytest.approx([0.1])  # its chunks ride no decode step


def test_a_prompt_reads_its_weights_at_least_by_hand():
    # a prompt whose tokens touch 200 GB of weights: at 0.8 x 1 TB/s, 0.25 s, past its 0.1 s of FLOPs
    point = _points(running_batch=[33.0], prefill_weight_read=[200e9])
    assert form_terms(ESTIMATE, point, CONSTANTS, 1.0)[0] == pytest.approx([0.25])
    assert first_token_estimate(point, CONSTANTS, 1.0) == pytest.approx([0.1 + (1 + 4) * 0.25])
    assert form_terms(FLOPS_ALONE, point, CONSTANTS, 1.0)[0] == pytest.approx([0.1])  # its FLOPs alone


def test_the_fixed_cost_and_the_share_are_recovered_from_a_synthetic_set():
    rng = np.random.default_rng(3)
    points = _points(running_batch=rng.choice([1.0, 4.0, 16.0, 64.0, 256.0], 120),
                     prefill_flops_per_device=rng.uniform(1e12, 1e14, 120))
    known = EngineConstants(1e-3, 0.8, 0.5, 0.0, first_token_fixed=0.07, wave_share=0.31)
    measured = first_token_estimate(points, known, 1.0)
    values, halves = fit_first_token(*first_token_terms(points, known, 1.0), measured)
    assert values == {"first_token_fixed": pytest.approx(0.07), "wave_share": pytest.approx(0.31)}
    held, held_halves = fit_first_token(*first_token_terms(points, known, 1.0), measured, 1.0)
    assert held["wave_share"] == 1.0 and held_halves["wave_share"] == 0.0  # a held share is not fitted


def test_the_committed_table_reads_against_the_estimates_own_error_and_the_validation_page():
    forms = pd.read_csv(ROOT / "tables/derived/serving_ttft_forms.csv").set_index(["form", "scheme"])
    errors = pd.read_csv(ROOT / "tables/derived/serving_estimate_error.csv").set_index(
        ["scheme", "quantity", "backend", "mode"])
    # the estimate's form is the estimate: its rows are serving_estimate_error's, fitted the same way
    for scheme in ("in sample", "leave one model out"):
        for column in ("points", "median_error", "mean_error", "within_10", "within_20"):
            assert forms.loc[(ESTIMATE, scheme), column] == pytest.approx(
                errors.loc[(scheme, "TTFT", "all", "agg"), column], abs=1e-4), (scheme, column)
    new = forms.xs("leave one model out", level="scheme")
    assert new["median_error"].idxmin() == ESTIMATE and new["mean_error"].idxmin() == ESTIMATE
    prose = words("docs/validation.md")
    assert (f"a whole wave gives an agg TTFT median error of {new.loc['a whole wave', 'median_error']:.1%} (mean "
            f"{new.loc['a whole wave', 'mean_error']:.1%}), none {new.loc['alone', 'median_error']:.1%}, a queue of "
            f"random arrivals (M/D/1) {new.loc['random arrivals', 'median_error']:.1%}, and the fitted share "
            f"{new.loc[ESTIMATE, 'median_error']:.1%} (mean {new.loc[ESTIMATE, 'mean_error']:.1%}), where the same share "
            f"with its prompts apart from the decodes gives {new.loc[APART, 'median_error']:.1%}") in prose
    assert f"without that floor the fitted share gives {new.loc[FLOPS_ALONE, 'median_error']:.1%}" in prose
    constants = pd.read_csv(ROOT / "tables/derived/serving_engine_constants.csv").set_index(["backend", "constant"])
    share = constants.xs("wave_share", level="constant")["value"]
    # SGLang's at its bound, a whole wave: its scheduler runs waiting prefills before the decode batch
    assert share["sglang"] == 1.0
    assert (f"({share['trtllm']:.2f} for TensorRT-LLM, {share['vllm']:.2f} for vLLM, and SGLang's at 1, a whole "
            f"wave") in prose
