"""A disaggregated request's prompt on its prefill workers (kvwall.validation.points) and what its measured TTFT does
not follow (kvwall.validation.disagg_load): by hand, and the committed table against the validation page."""

import numpy as np
import pandas as pd
import pytest

from docs_pages import words
from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.model.first_token import first_token_bound
from kvwall.model.workloads import prefill_flops
from kvwall.units import MS
from kvwall.validation.disagg_load import ALL, disagg_load

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_a_disagg_prompt_runs_on_a_replica_of_its_prefill_workers(catalog, committed_validation):
    # DeepSeek-R1, FP8, on H200 under SGLang at 8,192 / 1,024: decode on attention DP 8 (TP 1 a rank), prefill on one
    # worker of TP 8; the prompt is priced on the prefill worker's eight GPUs, not on one decode rank
    understood = committed_validation[2].understood.set_index("id")
    point = understood.loc["dsr1_h200_sglang_fp8_disagg_8192x1024_c128_cfg434"]
    assert (point["tp"], point["dp"]) == (1, 8)
    model, device = catalog.models["deepseek-r1"], catalog.devices["h200-sxm"]
    prefill = Deployment(8, 8, 1, 8, 1, "fp8", "fp8")
    assert point["replica_prefill_flops"] == pytest.approx(float(first_token_bound(model, prefill, 8192.0, np.inf, 1.0)),
                                                           rel=1e-12)
    bound = float(first_token_bound(model, prefill, 8192.0, device.hbm_bandwidth, device.dense_flops["fp8"]))
    assert point["ttft_bound_ms"] == pytest.approx(bound / MS, rel=1e-12)
    one_rank = Deployment(8, 1, 1, 8, 8, "fp8", "fp8")
    assert point["replica_prefill_flops"] < float(first_token_bound(model, one_rank, 8192.0, np.inf, 1.0)) / 4


def test_the_prefill_pools_load_and_the_kv_transfer_by_hand(catalog):
    # Llama-3.1-8B on H200, 1,000 tokens in and 1,001 out; 16 in flight on each of 2 decode workers, 3 prefill workers
    # of TP 2; measured 500 ms to a first token and 10 ms a token
    points = pd.DataFrame({"mode": ["disagg"], "backend": ["vllm"], "model": ["llama-3.1-8b"], "device": ["h200-sxm"],
                           "isl": [1000.0], "osl": [1001.0], "in_flight": [16.0], "peak_flops": [989.5e12],
                           "replica_prefill_flops": [4e12], "stored_kv_ratio": [1.0]})
    rows = pd.DataFrame({"mode": ["disagg"], "prefill_tp_size": [2], "prefill_pp_size": [1],
                         "prefill_attention_dp_size": [1], "prefill_moe_tp_size": [None], "prefill_moe_ep_size": [None],
                         "prefill_num_workers": [3], "decode_num_workers": [2], "silicon_ttft_ms": [500.0],
                         "silicon_tpot_ms": [10.0]}, index=points.index)
    load = disagg_load(points, rows, catalog.models, catalog.devices, load_serving_inputs(catalog),
                       "fp8").set_index("backend")
    assert list(load.index) == ["vllm", ALL]
    row = load.loc["vllm"]
    # 32 clients back every 0.5 + 1,000 x 0.01 = 10.5 s: 3.048 prompts a second, each its prefill FLOPs over six GPUs
    rate = 32 / 10.5
    flops = float(prefill_flops(catalog.models["llama-3.1-8b"], 1000.0))
    assert row["busy"] == pytest.approx(rate * flops / (6 * 989.5e12), rel=1e-12)
    # the prompt alone: 4e12 FLOPs on a replica's GPU at 989.5 TFLOP/s, 4.04 ms; the TTFT 124x it
    assert row["alone_ms"] == pytest.approx(4e12 / 989.5e12 / MS) and row["ttft_over_alone"] == pytest.approx(
        0.5 / (4e12 / 989.5e12))
    # its KV: 2 x 32 layers x 8 heads x 128 x 1 B = 65,536 B a token, 65.5 MB over the 400 Gb/s NIC: 1.31 ms of 500
    assert row["transfer_share"] == pytest.approx(65_536 * 1000 / 50e9 / 0.5, rel=1e-12)
    assert (row["points"], row["ttft_ms"]) == (1, pytest.approx(500.0))


def test_the_committed_table_reads_as_the_validation_page_says():
    load = pd.read_csv(ROOT / "tables/derived/serving_disagg_load.csv").set_index("backend")
    every = load.loc[ALL]
    assert every["points"] == (load.drop(index=ALL)["points"]).sum()
    prose = words("docs/validation.md")
    assert (f"the measured TTFTs are a median {every['ttft_over_alone']:.0f}x one prompt alone on a prefill replica at "
            f"the dense peak; the closed loop keeps the prefill pool busy a median {every['busy']:.1%} of the time at "
            f"least ({every['busy_max']:.0%} at most), and its load does not rank with that ratio (Spearman "
            f"{every['busy_rank_correlation']:.2f}); a prompt's KV over one GPU's network link takes at most "
            f"{every['transfer_share']:.1%} of the TTFT") in prose
    # no queue: the pool is busy well under all of the time, and a busier pool does not make a slower TTFT
    assert every["busy"] < 0.2 and abs(every["busy_rank_correlation"]) < 0.3 and every["transfer_share"] < 0.01
