"""Deployments over several devices: per-device weights, KV, FLOPs, collectives, capacity and step times, pinned to
values computed by hand here; one device reproduces the paper-frame numbers exactly."""

import json
import math
from pathlib import Path

import pytest

from kvwall.cli.main import main
from kvwall.cli.serving import device_answer
from kvwall.inputs.deployment import NO_LINK, CollectiveLink, Deployment, checked_deployment, load_serving_inputs
from kvwall.inputs.errors import DeploymentError
from kvwall.model.capacity import deployment_capacity_crossover, device_traffic_crossover, sequences_that_fit
from kvwall.inputs.specs import Fabric
from kvwall.model.collectives import (DomainError, expert_parallel_time, pipeline_time, ring_all_reduce_bytes,
                                      stage_boundaries_past_domain, tensor_parallel_time)
from kvwall.model.regimes import traffic_crossover
from kvwall.model.roofline import resident_weight_bytes, step_flops, step_time, step_weight_bytes
from kvwall.model.sharding import (kv_bytes_per_device, kv_heads_per_device, resident_weight_bytes_per_device,
                                   step_flops_per_device, step_weight_bytes_per_device)
from kvwall.model.footprint import kv_bytes
from kvwall.model.step_time import device_step
from kvwall.units import dtype_bytes

CONFIG = str(Path(__file__).resolve().parents[1] / "config")


@pytest.fixture(scope="module")
def deepseek(catalog):
    return catalog.models["deepseek-v3"]


def test_llama_3_70b_at_tp4_holds_a_quarter_of_the_weights_and_two_kv_heads(llama70):
    d = checked_deployment(llama70, Deployment(4, 4))
    assert resident_weight_bytes_per_device(llama70, d) == 70e9 * 2 / 4 == 35e9
    assert kv_heads_per_device(llama70, 4) == 8 // 4 == 2
    # b = 1, s = 1000, bf16: 2 L (n_kv / TP) d_h w_kv s = 2 x 80 x 2 x 128 x 2 x 1000
    assert kv_bytes_per_device(llama70, d, 1000, 1) == 2 * 80 * 2 * 128 * 2 * 1000


def test_gqa_heads_replicate_above_n_kv(llama70):
    d = checked_deployment(llama70, Deployment(16, 16))
    assert kv_heads_per_device(llama70, 16) == 1
    assert kv_bytes_per_device(llama70, d, 1000, 1) == 2 * 80 * 1 * 128 * 2 * 1000  # one whole head, not half of one


def test_mla_latent_is_whole_on_every_tp_rank_and_dp_splits_sequences(deepseek):
    tp8 = checked_deployment(deepseek, Deployment(8, 8))
    assert kv_heads_per_device(deepseek, 8) is None
    assert kv_bytes_per_device(deepseek, tp8, 1000, 1) == 61 * (512 + 64) * 2 * 1000  # L (d_c + d_r) w_kv s
    dp8 = checked_deployment(deepseek, Deployment(8, 1, 1, 8, 8))
    assert kv_bytes_per_device(deepseek, dp8, 1000, 64) == 8 * 61 * 576 * 2 * 1000  # 64 / 8 sequences each


def test_deepseek_v3_weights_per_device_at_dp8_ep8_in_its_native_fp8(deepseek):
    # The checkpoint stores its linear layers in fp8, its router, embedding and LM head in bf16.
    assert str(deepseek.weight_format) == "fp8 (bf16: router, embedding, LM head)"
    d = checked_deployment(deepseek, Deployment(8, 1, 1, 8, 8, weight_format=deepseek.weight_format))
    routed = 58 * 256 * 3 * 7168 * 2048
    embeddings = 2 * 129280 * 7168
    router = 58 * 256 * 7168
    rest = 671e9 - routed - embeddings - router  # attention, dense MLP, shared experts: fp8, whole on each device
    # the experts over EP 8 at 1 B; the router and both tables whole on each device at 2 B
    assert resident_weight_bytes_per_device(deepseek, d) == pytest.approx(rest + routed / 8 + (router + embeddings) * 2,
                                                                          rel=1e-12)
    assert resident_weight_bytes_per_device(deepseek, d) == pytest.approx(100_789_614_080, rel=1e-12)
    every_part = checked_deployment(deepseek, Deployment(8, 1, 1, 8, 8, weight_format="fp8"))  # every part in fp8
    assert resident_weight_bytes_per_device(deepseek, every_part) == pytest.approx(98_829_825_536, rel=1e-12)


def test_weight_formats_count_their_scales():
    assert dtype_bytes("fp4") == 0.5625  # 4 bits + an 8-bit scale per 16 values = 4.5 bits
    assert dtype_bytes("mxfp4") == 0.53125  # 4 bits + an 8-bit scale per 32 values = 4.25 bits
    assert dtype_bytes("fp8") == dtype_bytes("int8") == 1.0
    assert dtype_bytes("int4-g32") == 0.5625 and dtype_bytes("int4-g128") == 0.515625  # a 16-bit scale per group


def test_ring_all_reduce_and_tensor_parallel_time(llama70):
    assert ring_all_reduce_bytes(1e6, 4) == 1.5e6
    assert ring_all_reduce_bytes(1e6, 1) == 0.0
    d = checked_deployment(llama70, Deployment(4, 4))
    message = 32 * 8192 * 2  # b x hidden x bf16
    by_hand = 2 * 80 * (2 * 3 / 4 * message / 450e9 + 10e-6)
    nvlink = CollectiveLink("NVLink 4", 450e9)
    assert float(tensor_parallel_time(llama70, d, 32, nvlink, 10e-6, 2.0)) == pytest.approx(by_hand, rel=1e-12)
    assert float(tensor_parallel_time(llama70, Deployment(), 32, nvlink, 10e-6, 2.0)) == 0.0


HGX = CollectiveLink("NVLink 4", 450e9, Fabric(8, "ConnectX-7 400 Gb/s", 50e9))


def test_a_ring_past_its_domain_runs_at_the_scale_out_rate(llama70):
    message = 32 * 8192 * 2
    inside = checked_deployment(llama70, Deployment(8, 8))
    assert float(tensor_parallel_time(llama70, inside, 32, HGX, 10e-6, 2.0)) == pytest.approx(
        2 * 80 * (2 * 7 / 8 * message / 450e9 + 10e-6), rel=1e-12)
    across = checked_deployment(llama70, Deployment(16, 16))  # two 8-GPU boards: the ring's slowest hop is the NIC
    assert float(tensor_parallel_time(llama70, across, 32, HGX, 10e-6, 2.0)) == pytest.approx(
        2 * 80 * (2 * 15 / 16 * message / 50e9 + 10e-6), rel=1e-12)


def test_expert_dispatch_past_its_domain_splits_over_both_links(catalog):
    deepseek = catalog.models["deepseek-v3"]  # hidden 7,168, k = 8 of 256 routed experts, 58 MoE layers of 61
    d = checked_deployment(deepseek, Deployment(16, 1, 1, 16, 16))  # DP 16, EP 16 over two 8-GPU boards
    activations = 4 * 8 * 7168 * 2  # ceil(64 / 16) tokens per device x k x hidden x bf16
    # 7 of the 16 destinations on the device's own board (NVLink), 8 on the other (the NIC): the NIC is slower
    inside, outside = activations * 7 / 16 / 450e9, activations * 8 / 16 / 50e9
    assert outside > inside
    assert float(expert_parallel_time(deepseek, d, 64, HGX, 10e-6, 2.0)) == pytest.approx(
        2 * 58 * (outside + 10e-6), rel=1e-12)
    one_board = checked_deployment(deepseek, Deployment(8, 1, 1, 8, 8))
    assert float(expert_parallel_time(deepseek, one_board, 64, HGX, 10e-6, 2.0)) == pytest.approx(
        2 * 58 * (8 * 8 * 7168 * 2 * 7 / 8 / 450e9 + 10e-6), rel=1e-12)


def test_stage_boundaries_between_domains_go_over_the_network(llama70):
    # PP 4 of TP 4: stages on devices 0-3, 4-7 | 8-11, 12-15; only the boundary at device 8 leaves a board
    d = checked_deployment(llama70, Deployment(16, 4, 4))
    assert stage_boundaries_past_domain(d, HGX) == 1
    message = 32 * 8192 * 2
    assert float(pipeline_time(llama70, d, 32, HGX, 10e-6, 2.0)) == pytest.approx(
        2 * (message / 450e9 + 10e-6) + (message / 50e9 + 10e-6), rel=1e-12)
    assert stage_boundaries_past_domain(checked_deployment(llama70, Deployment(16, 8, 2)), HGX) == 1
    assert stage_boundaries_past_domain(d, CollectiveLink("NVLink 5", 900e9)) == 0  # no domain: one fabric


def test_a_domain_without_a_scale_out_link_cannot_be_left(llama70):
    pod = CollectiveLink("ICI", 400e9, Fabric(8, None, None))
    with pytest.raises(DomainError, match="TP 16 spans 16 devices, past the 8 that ICI connects"):
        tensor_parallel_time(llama70, checked_deployment(llama70, Deployment(16, 16)), 32, pod, 10e-6, 2.0)


def test_the_catalogue_fabrics_are_assumptions(catalog):
    h100, gb200, v5p = (catalog.devices[i] for i in ("h100-sxm", "gb200", "tpu-v5p"))
    assert (h100.fabric.domain, h100.fabric.scale_out) == (8, 50e9)  # 400 Gb/s, one NIC per GPU
    assert gb200.fabric.domain == 72 and v5p.fabric.scale_out is None
    assert h100.provenance["fabric.domain"].evidence == h100.provenance["fabric.scale_out"].evidence == "assumption"
    link = load_serving_inputs(catalog).link_of(h100)
    assert (link.bandwidth, link.fabric.domain, link.fabric.scale_out) == (450e9, 8, 50e9)


def test_capacity_per_device(llama70, catalog):
    d = checked_deployment(llama70, Deployment(4, 4))
    h100, vllm = catalog.devices["h100-sxm"], load_serving_inputs(catalog).memory("vllm")
    free = 0.9 * 80e9 - 35e9  # vLLM: gpu_memory_utilization x HBM - weights (TensorRT-LLM: 0.9 x (80 - 35) GB)
    one_sequence = 128_000 * 2 * 80 * 2 * 128 * 2
    assert float(sequences_that_fit(llama70, d, 128_000, h100.hbm_capacity, vllm)) == free // one_sequence == 3
    assert float(deployment_capacity_crossover(llama70, d, h100.hbm_capacity, vllm)) == pytest.approx(
        free / (2 * 80 * 2 * 128 * 2), rel=1e-12)


def test_compute_bound_step_gains_nothing_from_a_narrower_kv_format(llama70, catalog):
    b200, serving = catalog.devices["b200"], load_serving_inputs(catalog)
    # b = 1024, s = 100 (33.6 GB of KV fit in 0.9 x (192 - 140) GB, TensorRT-LLM's rule): FLOPs
    # 1024 (2 (70e9 - 128,256 x 8,192) + 4 x 80 x 64 x 128 x 100) / 2250e12 = 0.063 s against
    # (140e9 + 1024 x 100 x 327,680) / 8e12 = 0.022 s of memory time
    answer = device_answer(llama70, b200, Deployment(), 1024, 100, serving, "bf16", "trtllm")
    assert answer.running_batch.value == 1024
    assert answer.compute_bound and answer.regime == "compute-bound"
    assert answer.compute_time.value == pytest.approx(
        1024 * (2 * (70e9 - 128_256 * 8192) + 4 * 80 * 64 * 128 * 100) / 2250e12, rel=1e-12)
    assert answer.kv_format_speedups and set(q.value for q in answer.kv_format_speedups.values()) == {1.0}
    assert "fp4" in answer.kv_format_speedups and "bf16" not in answer.kv_format_speedups


@pytest.mark.parametrize("model_id", ["llama-3-70b", "mixtral-8x7b", "gpt-oss-120b", "deepseek-v2", "gemma-3-27b"])
def test_one_device_differs_from_the_paper_frame_by_the_gathered_embedding(catalog, model_id):
    # One device in bf16: the paper frame's P w_p held; a step reads it less the rows of the embedding it does not
    # gather, (V d - b d) w_p (none where the table is tied to the head), and computes 2 V d b FLOPs less.
    model, b200 = catalog.models[model_id], catalog.devices["b200"]
    d, batch, context = Deployment(), 8, 131_072
    table = 0.0 if model.tied_embeddings else model.vocab_size * model.hidden_size
    gathered = 0.0 if model.tied_embeddings else batch * model.hidden_size
    assert resident_weight_bytes_per_device(model, d) == pytest.approx(resident_weight_bytes(model, 2.0), rel=1e-12)
    read = step_weight_bytes(model, 2.0, batch) - (table - gathered) * 2.0
    assert float(step_weight_bytes_per_device(model, d, batch)) == pytest.approx(float(read), rel=1e-12)
    assert kv_bytes_per_device(model, d, context, batch) == kv_bytes(model, context, 2.0, batch)
    flops = step_flops(model, context, batch) - 2.0 * table * batch
    assert float(step_flops_per_device(model, d, context, batch)) == pytest.approx(float(flops), rel=1e-12)
    step = device_step(model, d, context, batch, b200.hbm_bandwidth, b200.dense_flops["bf16"], NO_LINK, 1.0, 2.0, 1.0)
    moved = read + kv_bytes(model, context, 2.0, batch)
    assert float(step.bound) == float(step.estimate) == pytest.approx(
        float(step_time(flops, moved, b200.dense_flops["bf16"], b200.hbm_bandwidth)), rel=1e-12)
    assert step.collectives_time == 0.0
    assert float(device_traffic_crossover(model, d, batch)) == pytest.approx(
        float(traffic_crossover(model, read, 2.0, batch)), rel=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["--tp", "3"], "kvwall: --tp: TP 3 does not divide the 64 query heads of Llama-3-70B"),
    (["--devices", "8", "--tp", "4"], "kvwall: --devices: 8 devices do not match TP 4 x PP 1 x DP 1 = 4"),
    (["--ep", "2"], "kvwall: --ep: Llama-3-70B has no experts to spread (EP must be 1)"),
    (["--pp", "81"], "kvwall: --pp: PP 81 exceeds the 80 layers of Llama-3-70B"),
])
def test_bad_deployments_are_refused_with_flag_and_reason(capsys, argv, message):
    status = main(["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "32", "--context", "128k",
                   *argv, "--config", CONFIG])
    assert status == 2
    assert capsys.readouterr().err.strip() == message


def test_experts_must_divide(deepseek):
    with pytest.raises(DeploymentError, match=r"^--ep: EP 3 does not divide the 256 routed experts of DeepSeek-V3$"):
        checked_deployment(deepseek, Deployment(3, 1, 1, 3, 3))


def test_regime_answers_per_device_with_a_bound_and_an_estimate(capsys):
    status = main(["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "32",
                   "--context", "128k", "--json", "--config", CONFIG])
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    per_device = out["per_device"]
    assert per_device["weight_bytes_per_device"]["value"] == 35e9
    assert per_device["kv_heads_per_device"]["value"] == 2
    assert per_device["running_batch"]["value"] == 3  # (80 - 35) x 0.9 GB over 10.5 GB per sequence: 3 fit
    # bound at the 3 that run: (35e9 - (V d / 4 - 3 / 4 d) x 2 + 3 x 10,485,760,000) / 3.35e12, memory-bound: a
    # rank reads its quarter of the weights but, of its quarter of the embedding, the rows of its tokens only
    read = 35e9 - (128_256 * 8192 / 4 - 3 / 4 * 8192) * 2
    assert per_device["step_time_bound"]["value"] == pytest.approx((read + 3 * 128_000 * 81_920) / 3.35e12, rel=1e-12)
    assert per_device["step_time_estimate"]["value"] > per_device["step_time_bound"]["value"]
    # 32 sequences of 128k: TP 8 x PP 3 on 24 H100s, 27 of 80 layers and the head over TP 8 per device,
    # (11,527,207,936 + 56,371,445,760) x 27 / 80 / 8 + 1,050,673,152 / 8 parameters, 5.99 GB; one KV head of 27
    # layers, 2 x 27 x 128 x 2 B x 128,000 = 1.77 GB a sequence: floor(0.9 x (80 - 5.99) / 1.77) = 37 hold the 32
    smallest = out["smallest_fitting_deployment"]
    assert (smallest["devices"], smallest["tensor_parallel"], smallest["pipeline_parallel"]) == (24, 8, 3)
    weights = ((70e9 - 2 * 128_256 * 8192) * 27 / 80 / 8 + 128_256 * 8192 / 8) * 2
    assert math.floor(0.9 * (80e9 - weights) / (2 * 27 * 128 * 2 * 128_000)) == 37


def test_fit_lists_deployments_smallest_first(capsys):
    status = main(["fit", "--model", "deepseek-v3", "--device", "b200", "--batch", "64", "--context", "128k",
                   "--weight-dtype", "native", "--json", "--config", CONFIG])
    assert status == 0
    found = json.loads(capsys.readouterr().out)["deployments"]
    devices = [f["deployment"]["devices"] for f in found]
    assert devices == sorted(devices) and devices[0] == 8
    assert found[0]["deployment"]["data_parallel"] == 8  # TP 8 cannot: 64 x 128k x 70,272 B of latent per device


def test_native_weight_format_is_the_checkpoint_format_or_refused(capsys):
    status = main(["footprint", "--model", "deepseek-v3", "--weight-dtype", "native", "--json", "--config", CONFIG])
    assert status == 0
    # FP8: 1 B per parameter, but the router (58 x 256 x 7,168) and both tables (2 x 129,280 x 7,168) at 2 B
    assert json.loads(capsys.readouterr().out)["weights"]["value"] == 671e9 + 58 * 256 * 7168 + 2 * 129_280 * 7168
    status = main(["footprint", "--model", "llama-2-13b", "--weight-dtype", "native", "--config", CONFIG])
    assert status == 2
    assert capsys.readouterr().err.strip() == ("kvwall: --weight-dtype native: llama-2-13b records no weight_format in "
                                               "config/models.yaml")


def test_crossover_per_device_at_tp4(capsys):
    status = main(["crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "1",
                   "--json", "--config", CONFIG])
    assert status == 0
    (row,) = json.loads(capsys.readouterr().out)["per_device"]
    # weights and KV both split over 4: s*(1) = weights read / (2 x 80 x 2 x 128 x 2 B), the weights read 35e9 less
    # the embedding rows one token does not need, (128,256 / 4 - 1 / 4) x 8,192 x 2 B
    read = 35e9 - (128_256 / 4 - 1 / 4) * 8192 * 2
    assert row["traffic_crossover"]["value"] == pytest.approx(read / 81_920, rel=1e-12)
    assert row["capacity_crossover"]["h100-sxm"]["value"] == pytest.approx(0.9 * (80e9 - 35e9) / 81_920, rel=1e-12)


def test_crossover_at_a_context_answers_per_device_as_regime_does(capsys):
    status = main(["crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "1", "32",
                   "--context", "128k", "--json", "--config", CONFIG])
    assert status == 0
    one, many = json.loads(capsys.readouterr().out)["per_device_at_context"]
    # one sequence: 35 GB of weights and 128,000 x 81,920 B of KV per device, memory-bound on 3.35 TB/s
    assert (one["device"], one["batch"], one["regime"]) == ("h100-sxm", 1, "weight-bound")
    assert one["numbers"]["weight_bytes_per_device"]["value"] == 35e9
    assert one["numbers"]["kv_bytes_per_device"]["value"] == 128_000 * 81_920
    assert one["numbers"]["memory_needed_per_device"]["value"] == 35e9 + 128_000 * 81_920
    read = 35e9 - (128_256 / 4 - 1 / 4) * 8192 * 2  # of its quarter of the embedding, one token's share of a row
    assert one["numbers"]["step_time_bound"]["value"] == pytest.approx((read + 128_000 * 81_920) / 3.35e12, rel=1e-12)
    # one sequence: 3 devices, PP 3 (27 layers and the head, 47.9 GB; 27 x 2 x 8 x 128 x 2 B x 128,000 = 14.2 GB)
    assert one["smallest_fitting_deployment"]["devices"] == 3 and one["smallest_fitting_deployment"]["pipeline_parallel"] == 3
    # 32 asked, floor(40.5 GB / 10.49 GB) = 3 fit and run
    assert (many["numbers"]["sequences_that_fit"]["value"], many["numbers"]["running_batch"]["value"]) == (3, 3)
    assert many["numbers"]["kv_bytes_per_device"]["value"] == 3 * 128_000 * 81_920
    status = main(["crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "tpu-v6e", "--tp", "4", "--batch",
                   "1", "--context", "128k", "--config", CONFIG])
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    h100 = next(line for line in lines if line.startswith("  H100 SXM"))
    assert h100.split()[2:8] == ["1", "1", "35.0", "GB", "10.5", "GB"] and "45.5 / 80 GB" in h100 and "PP3 on 3" in h100
    v6e = next(line for line in lines if line.startswith("  TPU v6e"))
    assert "does not fit" in v6e and "45.5 / 32 GB" in v6e  # 35 GB of weights per device on 32 GB: no step times
    assert any(line.startswith("  does not fit: the weights leave no KV memory") for line in lines)


def test_crossover_without_a_context_says_how_to_ask_for_one(capsys):
    assert main(["crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "1", "--config", CONFIG]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("Add --context S for each device's bytes")
    assert main(["crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "1", "--json",
                 "--config", CONFIG]) == 0
    assert json.loads(capsys.readouterr().out)["per_device_at_context"] is None


def test_mla_equations_are_printed_in_latent_terms(capsys):
    status = main(["crossover", "--model", "deepseek-v3", "--device", "b200", "--batch", "1", "--config", CONFIG])
    assert status == 0
    out = capsys.readouterr().out
    assert "s*(b) = W(b) / (b L (d_c + d_r) w_kv)" in out and "n_kv d_h" not in out


def test_deployments_table_sizes_llama_3_70b_on_h100(catalog, selections):
    from kvwall.tables.deployments import deployments

    rows = {(r["model_id"], r["device_id"], r["workload_id"]): r for r in deployments(catalog, selections).rows}
    # W1, one sequence of 128k: on 2 devices (TP 2 or PP 2) 70 GB of weights leave 0.9 x (80 - 70) = 9 GB for a
    # 21 GB sequence; PP 3 holds
    # 27 layers and the head, (attention + MLP) x 27 / 80 + the table = 23.97e9 parameters, 47.9 GB, and a sequence's
    # 27 x 2 x 8 x 128 x 2 B x 128,000 = 14.2 GB: 3 devices. A step reads the head and all 27 layers once.
    w1 = rows[("llama-3-70b", "h100-sxm", "W1")]
    held = ((70e9 - 2 * 128_256 * 8192) * 27 / 80 + 128_256 * 8192) * 2
    assert (w1["devices"], w1["layout"]) == (3, "PP3") and w1["weight_bytes"] == pytest.approx(held, rel=1e-12)
    # W2: TP 8 x PP 3 on 24 (test_regime_answers_per_device_with_a_bound_and_an_estimate), 32 x 1.77 GB of KV per GPU
    w2 = rows[("llama-3-70b", "h100-sxm", "W2")]
    assert (w2["devices"], w2["layout"]) == (24, "TP8 PP3")
    assert w2["kv_bytes"] == 32 * 128_000 * 2 * 27 * 1 * 128 * 2


def test_deployment_figure_panels(catalog):
    from kvwall.figures.deployment_regimes import BATCHES, CONTEXTS, PANELS, panel_bounds
    from kvwall.figures.inputs import FigureInputs

    inputs = FigureInputs(catalog, {}, {})
    _, _, tp1, regions, held = panel_bounds(inputs, *PANELS[0])
    lower, upper = regions["capacity-bound"]
    assert tp1.label == "1 device" and (held < 0).all()  # 140 GB of weights on 80 GB: nothing held, capacity-bound everywhere
    assert (lower == CONTEXTS[0]).all() and (upper == CONTEXTS[-1]).all()
    _, _, tp4, regions, _ = panel_bounds(inputs, *PANELS[2])
    # TP 4: s_cap = 0.9 x (80 - 35) GB / 81,920 B per token per device = 494,385 tokens (TensorRT-LLM's rule)
    assert regions["kv-bound"][1][0] == pytest.approx(0.9 * 45e9 / 81_920, rel=1e-12)
    _, _, dp8, regions, held = panel_bounds(inputs, *PANELS[5])
    assert (dp8.data_parallel, dp8.expert_parallel, str(dp8.weight_format)) == (8, 8, "fp8 (bf16: router, embedding, LM head)")
    # DP 8: up to 8 sequences each rank holds one, so the batch held is flat at s_cap up to b = 8, then falls as 1/ceil(b/8)
    s_cap = regions["kv-bound"][1][0]
    assert held[BATCHES <= 8] == pytest.approx(s_cap, rel=1e-12)
    assert held[-1] == pytest.approx(s_cap / 32, rel=1e-9)  # b = 256: 32 sequences a rank


def test_the_collective_rate_is_one_way_per_device(catalog):
    from kvwall.inputs.deployment import collective_link

    devices = catalog.files["devices"]
    # NVLink 4 prints 900 GB/s per GPU, both directions together: 450 GB/s one way (H100 and H200).
    assert collective_link(catalog.devices["h100-sxm"], devices).bandwidth == 450e9
    # NVLink 5 prints 1.8 TB/s per GPU, both directions: 900 GB/s one way.
    assert collective_link(catalog.devices["b200"], devices).bandwidth == 900e9
    # Infinity Fabric prints 128 GB/s per link, 7 links, direction unstated: 7 x 128 / 2 = 448 GB/s.
    assert collective_link(catalog.devices["mi300x"], devices).bandwidth == 448e9


def test_a_device_without_a_scale_up_link_cannot_be_deployed_on_several(catalog):
    from dataclasses import replace

    from kvwall.inputs.deployment import collective_link
    from kvwall.inputs.errors import SpecError

    lonely = replace(catalog.devices["h100-sxm"], scale_up=None)
    with pytest.raises(SpecError) as error:
        collective_link(lonely, "config/devices.yaml")
    assert error.value.key == "devices.h100-sxm.scale_up" and "no scale-up link" in error.value.reason



def test_the_answer_says_how_many_scale_up_domains_a_deployment_fills(capsys):
    argv = ["regime", "--model", "deepseek-v3", "--device", "h100-sxm", "--devices", "16", "--dp", "16", "--ep", "16",
            "--weight-dtype", "native", "--batch", "64", "--context", "32k", "--json", "--config", CONFIG]
    assert main(argv) == 0
    per_device = json.loads(capsys.readouterr().out)["per_device"]
    assert per_device["scale_up_domains"]["value"] == 2  # 16 GPUs on 8-GPU boards
    assert "ConnectX-7 400 Gb/s past it" in per_device["collectives_time"]["basis"]
    assert main(["fit", "--model", "llama-3-70b", "--device", "gb200", "--batch", "1", "--context", "8k", "--json",
                 "--config", CONFIG]) == 0
    found = json.loads(capsys.readouterr().out)["deployments"]
    assert {f["scale_up_domains"]["value"] for f in found} == {1}  # up to 64 GPUs all fit one 72-GPU NVL72 rack


def test_the_basis_names_the_scale_out_link_only_where_a_collective_crosses(capsys):
    # 16 H100s as TP 8 x DP 2 of a dense model: each TP ring stays on its board and the replicas exchange nothing
    argv = ["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--devices", "16", "--tp", "8", "--dp", "2",
            "--batch", "8", "--context", "8k", "--json", "--config", CONFIG]
    assert main(argv) == 0
    per_device = json.loads(capsys.readouterr().out)["per_device"]
    assert per_device["scale_up_domains"]["value"] == 2
    assert "over NVLink 4, " in per_device["collectives_time"]["basis"] and "past it" not in per_device["collectives_time"]["basis"]
