"""`kvwall plan --mode disagg` (kvwall.plan.disagg): prefill and decode pools sized by hand, and the command."""

import json

import numpy as np
import pytest

from kvwall.cli.main import main
from kvwall.inputs.deployment import Deployment
from kvwall.plan.disagg import PrefillLayout, disagg_best
from kvwall.plan.search import LayoutCurve, Workload

#: A decode instance on one device: TPOT 10 ms + 1 ms per sequence up to 10; a prefill instance on one device, 0.5 s
#: a prompt (2 prompts a second), TTFT 0.5 s.
B = np.arange(1, 11, dtype=float)
DECODE = LayoutCurve(Deployment(1, 1), B, 0.010 + 0.001 * B, np.zeros_like(B))
PREFILL = PrefillLayout(Deployment(1, 1), 0.5, 0.5)


def test_the_pools_by_hand():
    # within 15 ms a decode instance emits at most 5 / 15 ms = 333.3 tok/s; a prefill instance feeds 2 x 100 = 200.
    # On 4 devices, (decode, prefill) instances: (1, 1) 200 / 2 = 100, (1, 2) 333.3 / 3 = 111.1, (1, 3) 83.3,
    # (2, 1) 66.7, (2, 2) 100, (3, 1) 50: one decode and two prefill instances
    best = disagg_best([PREFILL], [DECODE], Workload(1024, 100, tpot_max=0.015), 4)[0]
    assert (best.decode_instances, best.prefill_instances, best.devices) == (1, 2, 3)
    assert best.tokens_per_second_per_device == pytest.approx(5 / 0.015 / 3)
    assert (best.batch, best.tpot, best.ttft) == (5, pytest.approx(0.015), 0.5)


def test_a_tie_takes_the_fewest_devices():
    # osl 200: a prefill instance feeds 400 tok/s; (1, 1) 333.3 / 2 = 166.7 ties (2, 2) 666.7 / 4
    best = disagg_best([PREFILL], [DECODE], Workload(1024, 200, tpot_max=0.015), 4)[0]
    assert (best.decode_instances, best.prefill_instances) == (1, 1)
    assert best.tokens_per_second_per_device == pytest.approx(5 / 0.015 / 2)


def test_a_decode_pool_the_prefill_starves_runs_the_smallest_batch_that_keeps_up():
    # 2 devices: one of each, 200 tok/s fed; b / (10 + b) ms >= 200 from b = 3 (230.8 tok/s at 13 ms)
    best = disagg_best([PREFILL], [DECODE], Workload(1024, 100, tpot_max=0.015), 2)[0]
    assert (best.batch, best.tpot) == (3, pytest.approx(0.013))
    assert best.tokens_per_second_per_device == pytest.approx(100.0)


def test_targets_leave_out_pools_that_miss_them():
    assert disagg_best([PREFILL], [DECODE], Workload(1024, 100, tpot_max=0.010), 4) == []
    assert disagg_best([PREFILL], [DECODE], Workload(1024, 100, tpot_max=0.015, ttft_max=0.4), 4) == []
    assert disagg_best([PREFILL], [DECODE], Workload(1024, 100, tpot_max=0.015), 1) == []  # one device: no two pools


def test_more_devices_and_looser_targets_never_lower_the_best():
    def best(devices, tpot_max):
        found = disagg_best([PREFILL], [DECODE], Workload(1024, 100, tpot_max=tpot_max), devices)
        return found[0].tokens_per_second_per_device if found else 0.0
    by_devices = [best(n, 0.015) for n in range(2, 9)]
    assert by_devices == sorted(by_devices)
    by_target = [best(4, t) for t in (0.011, 0.013, 0.015, 0.02)]
    assert by_target == sorted(by_target)


def test_the_command_plans_both_pools(capsys):
    assert main(["plan", "--model", "llama-3-8b", "--device", "h200-sxm", "--gpus", "4", "--isl", "1024", "--osl",
                 "1024", "--tpot-max", "20", "--mode", "disagg", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    best = answer["best"][0]
    assert answer["mode"] == "disagg" and best["devices"] <= 4
    assert best["prefill"]["instances"] >= 1 and best["decode"]["instances"] >= 1 and best["tpot_ms"] <= 20
    per_gpu = best["decode"]["instances"] * best["batch"] / (best["tpot_ms"] / 1e3) / best["devices"]
    assert best["tokens_per_second_per_device"] <= per_gpu * (1 + 1e-9)
    # the decode pool's memory per device and the costs of its step, which sum to the TPOT
    decode = best["decode"]
    assert decode["memory_gb_per_device"] == pytest.approx(decode["weight_gb_per_device"] + decode["kv_gb_per_device"])
    assert decode["memory_gb_per_device"] <= decode["hbm_gb"] == 141
    assert decode["costs"]["estimate"] == "datasheet"
    assert sum(decode["costs"]["ms_per_output_token"].values()) == pytest.approx(best["tpot_ms"], rel=1e-12)


def _plan(*extra):
    return ["plan", "--model", "llama-3-8b", "--device", "h200-sxm", "--gpus", "2", "--isl", "1024", "--osl", "1024",
            "--tpot-max", "20", *extra]


def test_both_modes_are_the_two_answers_and_the_faster_per_device(capsys):
    answers = {}
    for mode in ("agg", "disagg", "both"):
        assert main(_plan("--mode", mode, "--json")) == 0
        answers[mode] = json.loads(capsys.readouterr().out)
    both = answers["both"]
    for mode in ("agg", "disagg"):
        assert both[mode] == answers[mode] and both[mode]["mode"] == mode
    assert both["mode"] == "both" and both["gpus"] == 2
    # On 2 devices the only disagg deployment is one prefill device and one decode device. One device's prompt of
    # 1,024 tokens (TTFT bound 15.8 ms) feeds 1,024 / 15.8 ms, about 65,000 tokens a second, more than one decode
    # device emits at its best batch within 20 ms (330 / 20.0 ms = 16,530): the pools serve the decode device's
    # tokens over two devices, half the rate of the agg answer's one-device layout.
    one_device = next(r for r in both["agg"]["best"] if r["layout"] == "1 device")
    disagg = both["disagg"]["best"][0]
    assert (disagg["prefill"]["layout"], disagg["decode"]["layout"], disagg["devices"]) == ("1 device", "1 device", 2)
    assert disagg["batch"] == one_device["batch"] == 330
    assert disagg["tokens_per_second_per_device"] == pytest.approx(one_device["tokens_per_second_per_device"] / 2,
                                                                   rel=1e-12)
    # agg's first, TP2 at 678 sequences, serves 678 / (20.0 ms x 2) = 16,952 per device, 2.05x disagg's 8,265
    first = both["agg"]["best"][0]
    assert first["layout"] == "TP2" and first["batch"] == 678
    assert first["tokens_per_second_per_device"] == pytest.approx(16_952, rel=1e-4)
    won = both["winner"]
    assert won["mode"] == "agg"
    assert won["tokens_per_second_per_device"] == {"agg": first["tokens_per_second_per_device"],
                                                   "disagg": disagg["tokens_per_second_per_device"]}
    assert won["ratio"] == pytest.approx(16_952 / 8_265, rel=1e-3)


def test_both_modes_in_text_name_the_winner_and_say_where_disagg_cannot_fit(capsys):
    assert main(_plan("--mode", "both")) == 0
    out = capsys.readouterr().out
    assert "disaggregated" in out and out.strip().splitlines()[-1].endswith("agg serves more, 2.05x the other")
    # one device holds no pair of pools: agg wins without a ratio
    one_gpu = _plan("--mode", "both", "--json")
    one_gpu[one_gpu.index("--gpus") + 1] = "1"
    assert main(one_gpu) == 0
    won = json.loads(capsys.readouterr().out)["winner"]
    assert won == {"tokens_per_second_per_device": {"agg": won["tokens_per_second_per_device"]["agg"], "disagg": None},
                   "mode": "agg", "ratio": None}
    assert won["tokens_per_second_per_device"]["agg"] == pytest.approx(330 / 0.020, rel=1e-2)


def test_the_winner_by_hand():
    from kvwall.cli.plan import winner

    def answer(*rates):
        return {"best": [{"tokens_per_second_per_device": r} for r in rates]}
    assert winner(answer(100.0, 90.0), answer(150.0)) == {
        "tokens_per_second_per_device": {"agg": 100.0, "disagg": 150.0}, "mode": "disagg", "ratio": 1.5}
    assert winner(answer(100.0), answer(100.0))["mode"] == "agg"  # a tie: no transfer between pools
    assert winner(answer(), answer())["mode"] is None
