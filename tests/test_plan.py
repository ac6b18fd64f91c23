"""`kvwall plan` (kvwall.plan.search): hand-computed search spaces, the frontier against its definition, the command."""

import json

import numpy as np
import pytest

from kvwall.cli.main import main
from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.inputs.loader import load_catalog
from kvwall.plan.breakdown import DATASHEET_COSTS, layout_costs
from kvwall.plan.curves import plan_curves
from kvwall.plan.search import LayoutCurve, Workload, best_within, closest, frontier, layout_curves

CONFIG = "config"


def _curve(devices: int, fixed: float, per_sequence: float, batches: int, ttft: float) -> LayoutCurve:
    """A layout whose TPOT is fixed + per_sequence x b, for b = 1 .. batches."""
    b = np.arange(1, batches + 1, dtype=float)
    return LayoutCurve(Deployment(devices, devices), b, fixed + per_sequence * b, np.full(b.shape, ttft))


#: A: 1 device, TPOT 10 ms + 1 ms per sequence up to 10; B: 2 devices, 8 ms + 0.5 ms per sequence up to 20, TTFT 2 s.
A, B = _curve(1, 0.010, 0.001, 10, 0.1), _curve(2, 0.008, 0.0005, 20, 2.0)


def test_the_best_is_the_batch_with_most_tokens_per_device_within_the_target():
    best = best_within([A, B], Workload(1024, 1024, tpot_max=0.015))
    # B: 8 + 0.5 b <= 15 ms holds up to b = 14: 14 / (15 ms x 2 devices) = 466.7 tok/s per device;
    # A: 10 + b <= 15 ms up to b = 5: 5 / 15 ms = 333.3 tok/s per device
    assert [(p.deployment.devices, p.batch) for p in best] == [(2, 14), (1, 5)]
    assert best[0].tokens_per_second_per_device == pytest.approx(14 / 0.030)
    assert best[1].tokens_per_second_per_device == pytest.approx(5 / 0.015)
    assert best[0].tokens_per_second_per_user == pytest.approx(1 / 0.015)


def test_a_ttft_target_leaves_out_a_layout_whose_bound_exceeds_it():
    best = best_within([A, B], Workload(1024, 1024, tpot_max=0.015, ttft_max=1.0))
    assert [(p.deployment.devices, p.batch) for p in best] == [(1, 5)]


def test_nothing_within_the_target_gives_the_lowest_tpot():
    assert best_within([A, B], Workload(1024, 1024, tpot_max=0.001)) == []
    nearest = closest([A, B])
    assert (nearest.deployment.devices, nearest.batch, nearest.tpot) == (2, 1, pytest.approx(0.0085))
    assert closest([]) is None


def test_the_frontier_is_every_point_no_other_beats_on_both_rates():
    points = [(c, i) for c in (A, B) for i in range(c.batches.size)]
    def rates(c, i):
        return c.tokens_per_second_per_user[i], c.tokens_per_second_per_device[i]
    dominated = {(id(c), i) for c, i in points for o, j in points
                 if rates(o, j)[0] >= rates(c, i)[0] and rates(o, j)[1] >= rates(c, i)[1] and rates(o, j) != rates(c, i)}
    expected = {(c.deployment.devices, int(c.batches[i])) for c, i in points if (id(c), i) not in dominated}
    found = frontier([A, B])
    assert {(p.deployment.devices, p.batch) for p in found} == expected
    assert (found[0].deployment.devices, found[0].batch) == (2, 1)  # the fastest per user: 8.5 ms
    per_user = [p.tokens_per_second_per_user for p in found]
    per_device = [p.tokens_per_second_per_device for p in found]
    assert per_user == sorted(per_user, reverse=True) and per_device == sorted(per_device)


def test_the_frontier_of_thousands_of_points_is_every_point_no_other_beats():
    """Past the sample the search first drops points by (every SAMPLE_STRIDE-th point), the frontier stays the
    definition's: 60 layouts of 1 to 8 devices with random fixed and per-sequence costs, checked pair by pair."""
    rng = np.random.default_rng(7)
    curves = [_curve(int(rng.integers(1, 9)), rng.uniform(0.005, 0.03), rng.uniform(1e-5, 2e-3), int(rng.integers(20, 120)), 0.1)
              for _ in range(60)]
    per_user = np.concatenate([c.tokens_per_second_per_user for c in curves])
    per_device = np.concatenate([c.tokens_per_second_per_device for c in curves])
    assert per_user.size > 20 * 64
    beaten = ((per_user[None, :] >= per_user[:, None]) & (per_device[None, :] >= per_device[:, None])
              & ((per_user[None, :] > per_user[:, None]) | (per_device[None, :] > per_device[:, None]))).any(axis=1)
    owners = [(c.deployment, int(b)) for c in curves for b in c.batches]
    expected = {(id(owners[k][0]), owners[k][1]) for k in np.flatnonzero(~beaten)}
    found = frontier(curves)
    assert {(id(p.deployment), p.batch) for p in found} == expected
    assert 5 < len(found) < per_user.size / 10


@pytest.fixture(scope="module")
def llama_on_h200():
    catalog = load_catalog(CONFIG)
    serving = load_serving_inputs(catalog)
    return catalog.models["llama-3-8b"], catalog.devices["h200-sxm"], serving.memory("trtllm")


def test_one_device_holds_what_the_engine_leaves_of_its_hbm(llama_on_h200):
    model, device, memory = llama_on_h200
    curves = layout_curves(model, "bf16", "bf16", 1, Workload(1024, 1024, 0.05), device.hbm_capacity, memory, True,
                           lambda d, s, b: 0.01 + 0 * b, lambda d, n, b: 0.1 + 0 * b)
    # TensorRT-LLM: 0.9 x (141 GB - 2 B x 8.03e9) = 112.446 GB of KV; one sequence at 2,048 tokens
    # 131,072 B x 2,048 = 268,435,456 B: floor(418.9) = 418 sequences
    assert len(curves) == 1 and curves[0].batches[-1] == 418 and curves[0].batches[0] == 1


def test_every_layout_of_two_devices_is_searched_and_one_without_a_link(llama_on_h200):
    model, device, memory = llama_on_h200
    def labels(linked):
        return sorted(c.deployment.label for c in layout_curves(
            model, "bf16", "bf16", 2, Workload(1024, 1024, 0.05), device.hbm_capacity, memory, linked,
            lambda d, s, b: 0.01 + 0 * b, lambda d, n, b: 0.1 + 0 * b))
    assert labels(True) == ["1 device", "DP2", "PP2", "TP2"]
    assert labels(False) == ["1 device"]


def test_the_command_answers_with_the_estimate_by_hand(capsys):
    assert main(["plan", "--model", "llama-3-8b", "--device", "h200-sxm", "--gpus", "1", "--isl", "1024", "--osl",
                 "1024", "--tpot-max", "1000", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    best = answer["best"][0]  # the default engine's memory rule: TensorRT-LLM's
    assert (answer["evidence"], best["layout"], best["batch"]) == ("derived", "1 device", 418)
    # memory-bound at the mean decode context 1,536: the weights but of the input embedding only the 418 rows of the
    # batch's tokens (2 B x (8.03e9 - (128,256 - 418) x 4,096)) and 418 x 1,536 x 131,072 B of KV, over 4.8 TB/s x 0.85
    hand = (2 * (8.03e9 - (128_256 - 418) * 4096) + 418 * 1536 * 131_072) / (4.8e12 * 0.85)
    assert best["tpot_ms"] == pytest.approx(hand * 1e3, rel=1e-12)
    assert best["tokens_per_second_per_device"] == pytest.approx(418 / (best["tpot_ms"] / 1e3))


@pytest.mark.parametrize("flag, value", [("--gpus", "0"), ("--tpot-max", "0"), ("--isl", "-5"), ("--gpus", "2.5"),
                                         ("--ttft-max", "inf")])
def test_an_impossible_input_is_one_line(capsys, flag, value):
    argv = {"--model": "llama-3-8b", "--device": "h200-sxm", "--gpus": "2", "--isl": "1024", "--osl": "1024",
            "--tpot-max": "50", flag: value}
    with pytest.raises(SystemExit) as stop:
        main(["plan", *[item for pair in argv.items() for item in pair]])
    assert stop.value.code == 2
    assert f"argument {flag}: " in capsys.readouterr().err


def test_targets_nothing_meets_name_the_closest(capsys):
    assert main(["plan", "--model", "llama-3-70b", "--device", "h200-sxm", "--gpus", "2", "--isl", "1024", "--osl",
                 "1024", "--tpot-max", "1"]) == 0
    out = capsys.readouterr().out
    assert "no layout meets TPOT <= 1 ms; the closest" in out and "TP2" in out


def test_replicas_that_serve_the_same_rate_rank_the_fewest_devices_first():
    # DP2 of A serves A's rate but for a last bit of the floating point: it ties, and A's one device ranks first
    twice = LayoutCurve(Deployment(2, 1, data_parallel=2), A.batches * 2, A.tpot * (1 - 1e-15), A.ttft)
    best = best_within([twice, A], Workload(1024, 1024, tpot_max=0.015))
    assert twice.tokens_per_second_per_device[4] > A.tokens_per_second_per_device[4]
    assert [p.deployment.devices for p in best] == [1, 2]


def test_a_replica_that_serves_the_same_rates_adds_no_point_to_the_frontier():
    # DP2 of A at twice A's batches: per user and per device A's rates but for a last bit, higher on both, which a
    # comparison of the last bits would put on the frontier in A's place; to 9 digits they tie and A's one device stays
    twice = LayoutCurve(Deployment(2, 1, data_parallel=2), A.batches * 2, A.tpot * (1 - 1e-15), A.ttft)
    assert np.all(twice.tokens_per_second_per_user > A.tokens_per_second_per_user)
    assert {p.deployment.devices for p in frontier([twice, A])} == {1}
    assert [(p.deployment.devices, p.batch) for p in frontier([twice, A])] == [(1, b) for b in range(1, 11)]


def test_the_first_layout_s_memory_and_costs_by_hand(capsys):
    assert main(["plan", "--model", "llama-3-8b", "--device", "h200-sxm", "--gpus", "1", "--isl", "1024", "--osl",
                 "1024", "--tpot-max", "1000", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["best"][0]
    # 418 sequences at isl + osl = 2,048 tokens of 131,072 B of BF16 KV each beside 2 B x 8.03e9 of weights, of 141 GB
    kv = 418 * 2048 * 131_072
    assert best["weight_gb_per_device"] == pytest.approx(16.06, rel=1e-12)
    assert best["kv_gb_per_device"] == pytest.approx(kv / 1e9, rel=1e-12)
    assert best["memory_gb_per_device"] == pytest.approx(16.06 + kv / 1e9, rel=1e-12) and best["hbm_gb"] == 141
    # the datasheet step at 1,536 tokens: the weights read (of the input embedding only the batch's 418 rows) and the
    # KV over 0.85 x 4.8 TB/s, no compute past the bytes, no collective on one device, no expert to wait for
    costs = best["costs"]
    assert costs["estimate"] == "datasheet" and list(costs["ms_per_output_token"]) == list(DATASHEET_COSTS)
    ms = costs["ms_per_output_token"]
    assert ms["weights"] == pytest.approx(2 * (8.03e9 - (128_256 - 418) * 4096) / (4.8e12 * 0.85) * 1e3, rel=1e-12)
    assert ms["kv"] == pytest.approx(418 * 1536 * 131_072 / (4.8e12 * 0.85) * 1e3, rel=1e-12)
    assert (ms["compute"], ms["collectives"], ms["imbalance"]) == (0.0, 0.0, 0.0)
    assert sum(ms.values()) == pytest.approx(best["tpot_ms"], rel=1e-12)
    assert sum(costs["share_of_tpot"].values()) == pytest.approx(1.0)


@pytest.mark.parametrize("model_id", ["llama-3-70b", "mixtral-8x7b"])
def test_the_costs_of_every_layout_sum_to_its_tpot(model_id):
    catalog = load_catalog(CONFIG)
    serving = load_serving_inputs(catalog)
    model, device = catalog.models[model_id], catalog.devices["h200-sxm"]
    workload = Workload(1024, 1024, 1.0)
    curves = plan_curves(catalog, model, device, "bf16", 4, workload, "trtllm", serving)
    assert {c.deployment.label for c in curves} >= {"TP2", "PP2", "TP2 PP2", "PP4"}
    for curve in curves:
        for i in (0, curve.batches.size // 2, curve.batches.size - 1):
            found = layout_costs(model, curve.deployment, int(curve.batches[i]), workload, device, "bf16", serving)
            assert found.tpot == pytest.approx(curve.tpot[i], rel=1e-12)
            assert min(found.costs.values()) >= 0.0


def test_the_printed_costs_are_one_line_of_the_first_row(capsys):
    assert main(["plan", "--model", "llama-3-70b", "--device", "h200-sxm", "--gpus", "2", "--isl", "1024", "--osl",
                 "1024", "--tpot-max", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(k for k, line in enumerate(lines) if "mem/GPU" in line and "devices" in line)
    first = lines[header + 1]
    assert first.rstrip().endswith("/141 GB")
    costs = next(line for line in lines if line.startswith("  costs of the first (datasheet estimate"))
    assert "weights " in costs and "collectives " in costs
