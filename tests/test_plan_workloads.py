"""kvwall plan for the paper's W1 and W2 on every catalogue device (kvwall.plan.workload_frontiers, plan_workloads,
figures/plan_workloads): hand-worked capacities and picks, the deployments table's W2 rows, frontier properties."""

import math

import numpy as np
import pandas as pd
import pytest

from kvwall.figures import legibility
from kvwall.figures.layout import collisions
from kvwall.figures.plan_workloads import draw
from kvwall.figures.style import save
from kvwall.inputs.deployment import Deployment
from kvwall.plan.search import LayoutCurve
from kvwall.plan.workload_frontiers import MIN_DEVICES, WORKLOADS, budget, pick, workload_frontiers
from kvwall.tables.plan_workloads import plan_workloads

#: Llama-3-70B (config.json): 80 layers x 8 KV heads x head dim 128, K and V: 163,840 elements per token; 70.55e9
#: parameters (hidden 8,192, MLP 28,672, vocabulary 128,256, untied embeddings).
KV_ELEMENTS_PER_TOKEN, PARAMS = 2 * 80 * 8 * 128, 70.55e9
CONTEXT = 128_000


@pytest.fixture(scope="module")
def lines(catalog):
    return workload_frontiers(catalog, catalog.devices)


def line_of(lines, device, formats):
    (found,) = [x for x in lines if x.device == device and x.formats == formats]
    return found


def test_each_budget_is_eight_or_the_fewest_devices_that_hold_w2(catalog, root):
    rows = pd.read_csv(root / "tables/derived/deployments.csv")
    w2 = rows[(rows["model_id"] == "llama-3-70b") & (rows["workload_id"] == "W2")].set_index("device_id")["devices"]
    assert {d: budget(catalog, d) for d in ("h100-sxm", "h200-sxm", "b200", "mi300x")} == {
        "h100-sxm": 24, "h200-sxm": 12, "b200": 9, "mi300x": 9}
    for device in ("h100-sxm", "h200-sxm", "b200", "mi300x"):
        assert budget(catalog, device) == max(MIN_DEVICES, int(w2[device]))


def test_tp8_on_b200_holds_the_sequences_the_memory_rule_gives_by_hand(lines):
    # TensorRT-LLM's rule: KV memory = 0.9 x (HBM - weights), over 8 x 192 GB; a sequence holds 128k tokens of KV.
    by_hand = {"paper": math.floor(0.9 * (8 * 192e9 - 2 * PARAMS) / (CONTEXT * KV_ELEMENTS_PER_TOKEN * 2)),
               "fp8": math.floor(0.9 * (8 * 192e9 - 1 * PARAMS) / (CONTEXT * KV_ELEMENTS_PER_TOKEN * 1))}
    assert by_hand == {"paper": 29, "fp8": 62}
    for formats, held in by_hand.items():
        last = line_of(lines, "b200", formats).points[-1]
        assert (last.deployment.label, last.batch) == ("TP8", held)


def test_w2_on_h100_is_the_deployments_table_w2_layout_and_step_time(lines, root):
    rows = pd.read_csv(root / "tables/derived/deployments.csv")
    (w2,) = rows[(rows["model_id"] == "llama-3-70b") & (rows["workload_id"] == "W2")
                 & (rows["device_id"] == "h100-sxm")].itertuples()
    found = line_of(lines, "h100-sxm", "paper").picks["w2"]
    assert (found.deployment.label, found.deployment.devices, found.batch) == (w2.layout, w2.devices, 32) == ("TP8 PP3", 24, 32)
    assert found.tpot == pytest.approx(w2.step_time_estimate, rel=1e-12)


def test_w2_at_its_batch_of_32_on_nine_b200_is_beaten_by_tp8_at_the_29_it_holds(lines):
    line = line_of(lines, "b200", "paper")
    w2, last = line.picks["w2"], line.points[-1]
    assert (w2.deployment.label, w2.batch) == ("PP9", 32)
    assert last.tokens_per_second_per_user > w2.tokens_per_second_per_user
    assert last.tokens_per_second_per_device > 1.5 * w2.tokens_per_second_per_device
    assert all((p.deployment, p.batch) != (w2.deployment, w2.batch) for p in line.points)


def test_every_device_has_a_line_per_format_it_lists_a_dense_rate_for(catalog, lines):
    assert {(x.device, x.formats) for x in lines} == {
        *((d, "paper") for d in catalog.devices),
        *((d, "fp8") for d, device in catalog.devices.items() if "fp8" in device.dense_flops)}
    assert ("tpu-v6e", "fp8") not in {(x.device, x.formats) for x in lines}  # Cloud TPU v6e lists BF16 only
    # 32 GB per v6e chip: W2's 32 x 128k tokens of KV (1.34 TB) and 141 GB of weights need 54 of them (PP27 x TP2)
    assert budget(catalog, "tpu-v6e") == 54 and line_of(lines, "tpu-v6e", "paper").picks["w2"].deployment.label == "TP2 PP27"


def test_every_frontier_trades_per_user_for_per_gpu_and_starts_at_w1(lines):
    for line in lines:
        user = np.array([p.tokens_per_second_per_user for p in line.points])
        gpu = np.array([p.tokens_per_second_per_device for p in line.points])
        assert np.all(np.diff(user) < 0) and np.all(np.diff(gpu) > 0), (line.device, line.formats)
        for p in line.points:
            assert p.tokens_per_second_per_user == pytest.approx(1 / p.tpot)
            assert p.tokens_per_second_per_device == pytest.approx(p.batch / (p.tpot * p.deployment.devices))
        w1 = line.picks["w1"]
        assert w1.batch == 1 and (w1.deployment, w1.batch) == (line.points[0].deployment, line.points[0].batch)


def test_fp8_serves_more_per_gpu_at_every_pick(lines):
    for device in ("h100-sxm", "h200-sxm", "b200", "mi300x"):
        bf16, fp8 = line_of(lines, device, "paper"), line_of(lines, device, "fp8")
        for w in ("w1", "w2"):
            assert fp8.picks[w].tokens_per_second_per_device > bf16.picks[w].tokens_per_second_per_device


def _curve(tensor_parallel: int, devices: int, tpot) -> LayoutCurve:
    tpot = np.asarray(tpot, dtype=float)
    d = Deployment(devices, tensor_parallel, data_parallel=devices // tensor_parallel)
    return LayoutCurve(d, np.arange(1.0, tpot.size + 1), tpot, np.zeros(tpot.size))


def test_a_pick_by_hand_on_two_layouts():
    # TP2 on 2 devices: TPOT 10 and 12 ms at b = 1, 2; TP1 DP2 (2 devices): 20, 21, 22 ms.
    two, replicas = _curve(2, 2, [0.010, 0.012]), _curve(1, 2, [0.020, 0.021, 0.022])
    assert pick([two, replicas], 1, "user").deployment == two.deployment  # 100 against 50 tok/s per user
    per_gpu = pick([two, replicas], 2, "device")  # 2 / (0.012 x 2) = 83.3 against 2 / (0.021 x 2) = 47.6
    assert per_gpu.deployment == two.deployment and per_gpu.tokens_per_second_per_device == pytest.approx(250 / 3)
    held = pick([two, replicas], 3, "device")  # only the replicas hold 3: 3 / (0.022 x 2)
    assert held.deployment == replicas.deployment and held.tokens_per_second_per_device == pytest.approx(3 / 0.044)
    assert pick([two, replicas], 4, "device") is None


def test_the_table_holds_every_point_and_names_each_pick_once(catalog, lines):
    table = plan_workloads(lines, catalog, WORKLOADS, MIN_DEVICES)
    table.check_key()
    rows = pd.DataFrame(table.rows)
    assert len(rows) == sum(len(x.points) for x in lines) + int((rows["on_frontier"] == "no").sum())
    picks = rows[rows["workload"] != ""].groupby(["device_id", "weight_format"])["workload"].apply(sorted)
    assert all(found == ["W1", "W2"] for found in picks), picks
    assert set(rows.loc[rows["on_frontier"] == "no", "workload"]) == {"W2"}


@pytest.mark.slow
def test_the_figure_is_legible_labels_each_pick_and_saves_the_same_bytes_twice(catalog, selections, lines, tmp_path):
    paper = [x for x in lines if x.device in selections["table3_devices"]]
    figure = draw(paper, catalog, WORKLOADS)
    assert [ax.get_title() for ax in figure.axes if ax.get_visible()] == [
        "H100 SXM, up to 24 devices", "H200 SXM, up to 12 devices", "B200, up to 9 devices", "MI300X, up to 9 devices"]
    assert collisions(figure) + legibility.problems(figure) == []
    labels = {t.get_text() for ax in figure.axes for t in ax.texts}
    assert {"W1 TP8", "W2 PP9", "W2 TP8 PP3", "W1 TP16"} <= labels
    save(figure, [tmp_path / "a.svg", tmp_path / "a.png"])
    save(draw(paper, catalog, WORKLOADS), [tmp_path / "b.svg", tmp_path / "b.png"])
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_what_the_planning_page_says_the_plan_shows(lines):
    # docs/planning.md: the numbers its paragraph on W1 and W2 quotes
    b200, b200_fp8 = line_of(lines, "b200", "paper"), line_of(lines, "b200", "fp8")
    assert round(b200.picks["w2"].tokens_per_second_per_device, 1) == 78.5
    assert round(b200.points[-1].tokens_per_second_per_device / b200.picks["w2"].tokens_per_second_per_device, 1) == 1.7
    assert round(b200_fp8.picks["w2"].tokens_per_second_per_device) == 260
    assert round(b200_fp8.picks["w2"].tokens_per_second_per_device / b200.picks["w2"].tokens_per_second_per_device, 1) == 3.3
    for device in ("h100-sxm", "h200-sxm", "b200", "mi300x"):
        w2 = line_of(lines, device, "paper").picks["w2"]
        assert all((p.deployment, p.batch) != (w2.deployment, w2.batch) for p in line_of(lines, device, "paper").points)
    assert {d: line_of(lines, d, "fp8").picks["w2"].deployment.label for d in ("h200-sxm", "b200", "mi300x", "b300", "gb300", "mi355x")} == {
        "h200-sxm": "TP8", "b200": "TP8", "mi300x": "TP8", "b300": "TP4", "gb300": "TP4", "mi355x": "TP4"}
