"""The serving frame checked by hand: each number recomputed here from the config's fields (the arithmetic in the
comments) and the datasheet values in config/, against `kvwall regime|crossover|fit|footprint` and the model
functions: storage formats per part, pipeline microbatches, state under TP, the engines' memory rules, the regime
where compute binds, one headline per answer, deployments that do not fit, the model's maximum context, the smallest
deployment, and the smaller serving conventions."""

import json
import math
from pathlib import Path

import pytest

from kvwall.cli.main import main
from kvwall.inputs.deployment import Deployment, checked_deployment, load_serving_inputs
from kvwall.inputs.engines import OF_FREE, EngineMemory
from kvwall.model.capacity import sequences_that_fit
from kvwall.model.engine_memory import sglang_static_fraction
from kvwall.model.fitting import candidate_deployments, holds_batch
from kvwall.model.params import weight_part_params
from kvwall.model.sharding import (kv_bytes_per_device, pipeline_microbatches, resident_weight_bytes_per_device,
                                   step_weight_bytes_per_device)
from kvwall.model.step_time import device_step

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "config")
CORPUS = ROOT / "tests" / "fixtures" / "hf-configs"
MXFP4, FP8, INT4_G32 = 4.25 / 8, 1.0, 4.5 / 8  # bytes per value: 4 bits + an 8-bit scale per 32; 4 + a 16-bit per 32


def answer(capsys, *argv):
    """`kvwall argv --json` as parsed JSON, the exit status 0."""
    assert main([*argv, "--json", "--config", CONFIG]) == 0
    return json.loads(capsys.readouterr().out)


# ---- storage formats per part ----------------------------------------------------------------------------------

# gpt-oss-120b (config.json): 36 layers, hidden 2,880, 128 experts of 2,880 (3 matrices), top 4, vocabulary 201,088,
# untied; P = 116.8e9 (model card).
GPT_OSS_EXPERTS = 36 * 128 * 3 * 2880 * 2880            # 114,661,785,600
GPT_OSS_TABLE = 201_088 * 2880                          # 579,133,440, embedding and LM head each
GPT_OSS_ROUTER = 36 * 128 * 2880                        # 13,271,040
GPT_OSS_ATTENTION = 116.8e9 - GPT_OSS_EXPERTS - 2 * GPT_OSS_TABLE - GPT_OSS_ROUTER   # the rest: 966,676,480


def test_gpt_oss_prices_its_mxfp4_experts_and_its_bf16_rest(catalog, capsys):
    model = catalog.models["gpt-oss-120b"]
    assert str(model.weight_format) == "mxfp4 (bf16: attention, router, embedding, LM head)"
    parts = weight_part_params(model)
    assert (parts["experts"], parts["attention"]) == (GPT_OSS_EXPERTS, GPT_OSS_ATTENTION)
    out = answer(capsys, "regime", "--model", "gpt-oss-120b", "--device", "h100-sxm", "--batch", "1", "--context",
                 "128k", "--weight-dtype", "native")
    device = out["per_device"]
    # resident: 2,138,214,400 bf16 parameters x 2 B + the experts x 4.25 bits = 65,190,502,400 B, not 62.05 GB
    # (every weight at MXFP4); the 65.25 GB of a count by hand that keeps the experts' biases (4.0e7) in bf16
    bf16 = GPT_OSS_ATTENTION + GPT_OSS_ROUTER + 2 * GPT_OSS_TABLE
    resident = bf16 * 2 + GPT_OSS_EXPERTS * MXFP4
    assert device["weight_bytes_per_device"]["value"] == pytest.approx(resident, rel=1e-12)
    assert round(resident / 1e9, 2) == 65.19 and round(116.8e9 * MXFP4 / 1e9, 2) == 62.05
    # read at b = 1: 4 of 128 experts, the head whole, one row of the embedding: 5.02 GB, not 3.04 GB
    read = (GPT_OSS_ATTENTION + GPT_OSS_ROUTER + GPT_OSS_TABLE + 2880) * 2 + GPT_OSS_EXPERTS / 32 * MXFP4
    assert device["step_weight_bytes_per_device"]["value"] == pytest.approx(read, rel=1e-12)
    assert round(read / 1e9, 2) == 5.02
    # one sequence of 128k: 18 full layers x 2 x 8 x 64 x 2 B x 128,000 + 18 window layers x 2,048 B x 128
    sequence = 18 * 2048 * 128_000 + 18 * 2048 * 128
    assert device["kv_bytes_per_device"]["value"] == sequence == 4_723_310_592
    # TensorRT-LLM (the default engine): 0.9 x (80 - 65.19) GB = 13.33 GB hold 2, not 3; vLLM: 0.9 x 80 GB - 65.19 GB
    # = 6.81 GB hold 1
    assert device["sequences_that_fit"]["value"] == math.floor(0.9 * (80e9 - resident) / sequence) == 2
    vllm = answer(capsys, "regime", "--model", "gpt-oss-120b", "--device", "h100-sxm", "--batch", "1", "--context",
                  "128k", "--weight-dtype", "native", "--engine", "vllm")["per_device"]
    assert vllm["sequences_that_fit"]["value"] == math.floor((0.9 * 80e9 - resident) / sequence) == 1
    # the paper frame with the checkpoint's formats prices each part too
    assert answer(capsys, "footprint", "--model", "gpt-oss-120b", "--weight-dtype", "native")["weights"]["value"] == \
        pytest.approx(resident, rel=1e-12)


def test_kimi_k2_5_ships_int4_experts(catalog, capsys):
    model = catalog.models["kimi-k2.5"]
    assert model.weight_format.experts == "int4-g32" and model.weight_format.attention == "bf16"
    # 60 MoE layers x 384 experts x 3 x 7,168 x 2,048 = 1,014,686,023,680 routed parameters; with the dense MLP
    # (3 x 7,168 x 18,432), the shared experts (60 x 3 x 7,168 x 2,048), the router (60 x 384 x 7,168) and the two
    # 163,840 x 7,168 tables the fixed parts, 1,020,238,757,888, exceed the published 1e12: scaled to it.
    fixed = 1_014_686_023_680 + 3 * 7168 * 18432 + 60 * 3 * 7168 * 2048 + 60 * 384 * 7168 + 2 * 163_840 * 7168
    assert fixed == 1_020_238_757_888
    resident = (1_014_686_023_680 * INT4_G32 + (fixed - 1_014_686_023_680) * 2) * 1e12 / fixed
    weights = answer(capsys, "footprint", "--model", "kimi-k2.5", "--weight-dtype", "native")["weights"]["value"]
    assert weights == pytest.approx(resident, rel=1e-12)
    assert round(weights / 1e9) == 570  # not 2,000 GB of bf16


def test_a_count_rounded_below_the_experts_leaves_the_always_active_weights_non_negative(catalog):
    from kvwall.model.params import published_routed_params, routed_expert_params
    from kvwall.model.roofline import active_params_per_token

    kimi, deepseek = catalog.models["kimi-k2.5"], catalog.models["deepseek-v3"]
    # Kimi-K2.5's routed experts alone (1,014.7e9) exceed its published 1e12: of P they are the parts' scaled share,
    # 1,014,686,023,680 x 1e12 / 1,020,238,757,888 = 994.56e9, so a token multiplies 1e12 - 994.56e9 always-active
    # weights and 8 of the 384 experts, 26.2e9 (not 1e12 - 1,014.7e9 + 8 / 384 of them = 6.5e9)
    routed = 1_014_686_023_680 * 1e12 / 1_020_238_757_888
    assert published_routed_params(kimi) == pytest.approx(routed, rel=1e-12)
    assert active_params_per_token(kimi) == pytest.approx(1e12 - routed + routed * 8 / 384, rel=1e-12)
    assert round(active_params_per_token(kimi) / 1e8) == 262
    # a published count above the fixed parts keeps every expert: DeepSeek-V3's 37.5e9 active as before
    assert published_routed_params(deepseek) == routed_expert_params(deepseek)
    assert round(active_params_per_token(deepseek) / 1e8) == 375


def test_fp8_checkpoints_keep_embedding_head_and_router_in_bf16(catalog, capsys):
    # DeepSeek-V3 (quant_method fp8): P = 671e9, of which the router 58 x 256 x 7,168 and two 129,280 x 7,168 tables
    # stay bf16: P + router + 2 tables bytes, 0.3% above 671 GB.
    router, table = 58 * 256 * 7168, 129_280 * 7168
    weights = answer(capsys, "footprint", "--model", "deepseek-v3", "--weight-dtype", "native")["weights"]["value"]
    assert weights == 671e9 + router + 2 * table == 672_959_788_544


def test_kv_dtype_native_is_the_checkpoint_kv_format(capsys):
    # nvidia/Llama-3.1-70B-Instruct-FP8: hf_quant_config.json kv_cache_quant_algo FP8: 2 x 80 x 8 x 128 x 1 B/token
    config = str(CORPUS / "nvidia--Llama-3.1-70B-Instruct-FP8_config.json")
    out = answer(capsys, "footprint", "--hf-config", config, "--kv-dtype", "native")
    assert out["kv"][0]["kv_dtype"] == "fp8" and out["kv"][0]["kv_bytes_per_token"]["value"] == 2 * 80 * 8 * 128
    assert main(["footprint", "--model", "llama-3-70b", "--kv-dtype", "native", "--config", CONFIG]) == 2
    assert capsys.readouterr().err.strip() == ("kvwall: --kv-dtype native: llama-3-70b records no kv_format (its "
                                               "checkpoint states no KV cache format, kv_cache_quant_algo)")


# ---- pipeline parallelism: microbatches in flight ----------------------------------------------------------------

# Llama-3.1-70B: P = 70.6e9; dense MLP 80 x 3 x 8,192 x 28,672; two 128,256 x 8,192 tables; attention the rest.
LLAMA_MLP, LLAMA_TABLE = 80 * 3 * 8192 * 28672, 128_256 * 8192
LLAMA_ATTENTION = 70.6e9 - LLAMA_MLP - 2 * LLAMA_TABLE


def test_pipeline_bound_holds_under_microbatches_in_flight(catalog, capsys):
    # PP 4 x TP 2 on H100, 32 sequences at 8k. A device of the last stage holds 20 of 80 layers over TP 2 and half
    # the head: (attention + MLP) / 4 / 2 + table / 2 = 9,087,668,288 parameters, 18,175,336,576 B.
    stage = ((LLAMA_ATTENTION + LLAMA_MLP) / 4 / 2 + LLAMA_TABLE / 2) * 2
    assert stage == 18_175_336_576
    # 4 microbatches of 8, one per stage: each stage reads its weights once per microbatch and the KV of all 32:
    # 32 x 8,000 x (2 x 20 x 4 heads x 128 x 2 B) = 10,485,760,000 B. TPOT >= (4 x 18.18 + 10.49) GB / 3.35 TB/s.
    kv = 32 * 8000 * 2 * 20 * 4 * 128 * 2
    bound = (4 * stage + kv) / 3.35e12
    device = answer(capsys, "regime", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--pp", "4", "--tp", "2",
                    "--batch", "32", "--context", "8k")["per_device"]
    assert device["microbatches"]["value"] == 4
    assert device["step_time_bound"]["value"] == pytest.approx(bound, rel=1e-12)
    assert round(bound * 1e3, 1) == 24.8 and round(32 / bound) == 1289
    # one batch walking the stages while the others idle would take PP x (18.18 + 10.49) GB / 3.35 TB/s: beaten
    assert round(4 * (stage + kv) / 3.35e12 * 1e3, 1) == 34.2
    assert "microbatches in flight" in device["step_time_bound"]["basis"]


def test_no_microbatch_count_beats_the_pipeline_bound(catalog):
    # m microbatches of b / m: the busiest stage works m stage times a round and a round lasts PP of them, so
    # TPOT(m) = max(m, PP) x stage time(b / m); the bound, at m = min(PP, b), is the least of them.
    model, h100 = catalog.models["llama-3.1-70b"], catalog.devices["h100-sxm"]
    d = checked_deployment(model, Deployment(8, 2, 4))
    for batch in (2, 32):
        step = device_step(model, d, 8000, batch, h100.hbm_bandwidth, h100.dense_flops["bf16"], load_serving_inputs(
            catalog).link_of(h100), 0.0, 2.0, 1.0)
        tpot = {}
        for m in range(1, 9):
            if m <= batch:
                stage = (step_weight_bytes_per_device(model, d, batch / m) + kv_bytes_per_device(model, d, 8000, batch / m))
                tpot[m] = max(m, 4) * float(stage) / h100.hbm_bandwidth
        assert float(step.bound) == pytest.approx(min(tpot.values()), rel=1e-12)
        assert float(pipeline_microbatches(d, batch)) == min(4, batch) == min(tpot, key=tpot.get)


# ---- constant state under TP --------------------------------------------------------------------------------------

def test_mamba_and_linear_attention_state_split_over_every_tp_rank(capsys):
    # Nemotron-3-Nano at TP 8, 64 sequences of 1k: 6 attention layers keep 1 of their 2 KV heads per GPU,
    # 2 x 6 x 1 x 128 x 2 B x 1,000 tokens; 23 Mamba layers of 542,720 fp32 elements split over all 8 GPUs.
    config = str(CORPUS / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json")
    kv = answer(capsys, "regime", "--hf-config", config, "--device", "h100-sxm", "--tp", "8", "--batch", "64",
                "--context", "1k")["per_device"]["kv_bytes_per_device"]["value"]
    assert kv == 64 * (2 * 6 * 1 * 128 * 2 * 1000 + 23 * 542_720 * 4 / 8) == 596_049_920  # not 1.79 GB
    assert round(64 * (2 * 6 * 2 * 128 * 2 * 1000 + 23 * 542_720 * 4) / 2 / 1e9, 2) == 1.79  # the state halved
    # Qwen3.5-397B at TP 8: 15 full layers keep 1 of 2 heads of 256, 45 Gated DeltaNet states over 8: 2.8x less
    config = str(CORPUS / "Qwen--Qwen3.5-397B-A17B_config.json")
    kv = answer(capsys, "regime", "--hf-config", config, "--device", "b300", "--tp", "8", "--batch", "64",
                "--context", "1k")["per_device"]["kv_bytes_per_device"]["value"]
    state = 45 * (64 * 128 * 128 + 3 * (2 * 16 * 128 + 64 * 128)) * 4
    assert kv == 64 * (2 * 15 * 1 * 256 * 2 * 1000 + state / 8) == 2_546_073_600
    assert round(64 * (2 * 15 * 2 * 256 * 2 * 1000 + state) / 2 / kv, 1) == 2.8


# ---- the engines' memory rules -------------------------------------------------------------------------------------

def test_each_engine_sizes_the_kv_memory_by_its_own_rule(catalog, llama70):
    serving, h100 = load_serving_inputs(catalog), catalog.devices["h100-sxm"]
    d = checked_deployment(llama70, Deployment(4, 4))  # 35 GB of weights per H100
    sequence = 128_000 * 2 * 80 * 2 * 128 * 2  # one 128k sequence's KV on a TP 4 rank: 10,485,760,000 B
    assert serving.engine == "trtllm"
    # vLLM: 0.9 x 80 GB - 35 GB = 37 GB; TensorRT-LLM: 0.9 x (80 - 35) GB = 40.5 GB
    assert float(sequences_that_fit(llama70, d, 128_000, 80e9, serving.memory("vllm"))) == (0.9 * 80e9 - 35e9) // sequence == 3
    assert float(sequences_that_fit(llama70, d, 39_000, 80e9, serving.memory("trtllm"))) == \
        0.9 * (80e9 - 35e9) // (39_000 * 81_920) == 12
    assert float(sequences_that_fit(llama70, d, 39_000, 80e9, serving.memory("vllm"))) == 37e9 // (39_000 * 81_920) == 11
    # SGLang's default on an 80 GB H100 (76,293.9 MiB): chunked prefill 8,192, CUDA graphs up to 256 requests below
    # TP 4 and 512 from it: reserved 512 + 1.5 x 8,192 + 2 x 256 + 128 x TP PP MiB
    memory = 80e9 / 2**20
    assert sglang_static_fraction(h100.hbm_capacity, Deployment()) == round((memory - 13_440) / memory, 3) == 0.824
    assert sglang_static_fraction(h100.hbm_capacity, d) == round((memory - (512 + 12_288 + 2 * 512 + 512)) / memory, 3) == 0.812
    assert serving.memory("sglang").fraction is None  # config/assumptions.yaml: auto, SGLang's own default
    for engine in ("vllm", "sglang", "trtllm"):
        source = serving.memory(engine).source
        assert source.startswith({"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}[engine])


def test_engine_choice_on_the_command_line(capsys):
    argv = ["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "32", "--context", "39k"]
    trtllm, vllm = answer(capsys, *argv), answer(capsys, *argv, "--engine", "vllm")
    assert (vllm["engine"], trtllm["engine"]) == ("vllm", "trtllm")
    assert vllm["per_device"]["kv_memory_per_device"]["value"] == pytest.approx(0.9 * 80e9 - 35e9, rel=1e-12)
    assert trtllm["per_device"]["kv_memory_per_device"]["value"] == pytest.approx(0.9 * (80e9 - 35e9), rel=1e-12)
    assert "free_gpu_memory_fraction" in trtllm["per_device"]["kv_memory_per_device"]["basis"]


# ---- the regime where compute binds, and the advice that follows --------------------------------------------------

def test_a_compute_bound_step_reads_compute_bound_and_is_not_told_to_quantize(capsys):
    # Llama-3.1-8B on one H100, 1,024 sequences of 128: FLOPs 1,024 x (2 (8.03e9 - 128,256 x 4,096) + 4 x 32 x 32 x
    # 128 x 128) over 989.5 TFLOP/s take 15.6 ms, longer than its 32.1 GB over 3.35 TB/s.
    out = answer(capsys, "regime", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--batch", "1024",
                 "--context", "128")
    flops = 1024 * (2 * (8.03e9 - 128_256 * 4096) + 4 * 32 * 32 * 128 * 128)
    assert out["per_device"]["compute_time"]["value"] == pytest.approx(flops / 989.5e12, rel=1e-12)
    assert out["compute_bound"] and out["regime"] == "compute-bound"
    assert {q["value"] for q in out["kv_format_speedups"].values()} == {1.0}
    rule4 = next(r for r in out["design_rules"] if r["number"] == 4)
    assert not rule4["applies"] and "compute-bound" in rule4["advice"] and "1.00×" in rule4["advice"]
    assert "1.63×" in rule4["advice"] and "1.83×" in rule4["advice"]  # the paper frame's bytes-only S(c), so named


# ---- one answer: the deployment's, the paper's frame under its own name -------------------------------------------

def test_the_deployment_heads_the_answer_and_the_paper_frame_follows(capsys):
    out = answer(capsys, "regime", "--model", "llama-3.1-70b", "--device", "gb200", "--batch", "8", "--context", "128k")
    # one GB200: TensorRT-LLM leaves 0.9 x (186 - 141.2) GB = 40.3 GB, less than one sequence's 41.9 GB:
    # capacity-bound; the paper's frame, HBM - P w_p = 44.8 GB, holds one: kv-bound there, and named so
    assert out["regime"] == "capacity-bound" and out["per_device"]["sequences_that_fit"]["value"] == 0
    assert out["paper_frame"]["regime"] == "kv-bound"
    assert main(["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "32", "--context",
                 "128k", "--config", CONFIG]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Llama-3-70B on 4 x H100 SXM, TP4, batch 32")
    # 3 of 32 run: s*(3) per device = (35 GB - most of the embedding) / (3 x 81,920 B) = 142k > 128k: weight-bound
    assert lines[1].startswith("Regime: weight-bound per device at the 3 sequences that run (derived); time per output")
    paper = next(i for i, line in enumerate(lines) if line.startswith("Paper frame"))
    assert all("step time" not in line or i > paper for i, line in enumerate(lines) if line.startswith("  step time  "))


# ---- deployments whose weights do not fit --------------------------------------------------------------------------

def test_an_impossible_deployment_gets_no_step_times(capsys):
    from kvwall.inputs.hf_import import read_config

    config = str(CORPUS / "Qwen--Qwen3.5-397B-A17B_config.json")
    out = answer(capsys, "regime", "--hf-config", config, "--device", "b300", "--batch", "8", "--context", "128k")
    # the count the config implies (no published one given), 396.35e9 bf16 parameters, 792.7 GB, against the
    # 288 GB of a B300 that TensorRT-LLM's 0.9 x (HBM - weights) lets weights take: at least 3 devices (4 under
    # vLLM's 0.9 x HBM - weights, 259.2 GB)
    params = float(f"{read_config(config).params_derived / 1e9:g}e9")  # as the imported entry writes it: 396.346e9
    assert params == 396.346e9
    assert out["regime"] == "does not fit" and "the weights need at least 3 devices" in out["reason"]
    assert math.ceil(params * 2 / 288e9) == 3 and math.ceil(params * 2 / (0.9 * 288e9)) == 4
    device = out["per_device"]
    assert device["weight_bytes_per_device"]["value"] == pytest.approx(params * 2, rel=1e-12)
    for name in ("step_time_bound", "step_time_estimate", "kv_memory_per_device", "deployment_capacity_crossover",
                 "time_per_output_token_bound", "token_rate_bound"):
        assert device[name] is None, name
    assert device["devices_for_the_weights"]["value"] == 3
    vllm = answer(capsys, "regime", "--hf-config", config, "--device", "b300", "--batch", "8", "--context", "128k",
                  "--engine", "vllm")
    assert vllm["per_device"]["devices_for_the_weights"]["value"] == 4
    crossover = answer(capsys, "crossover", "--hf-config", config, "--device", "b300", "--batch", "1")
    assert crossover["per_device"][0]["capacity_crossover"]["b300"]["value"] is None
    assert crossover["paper_frame"][0]["capacity_crossover"]["b300"]["value"] is None
    assert "none: the weights" in crossover["paper_frame"][0]["capacity_crossover"]["b300"]["basis"]


# ---- a context beyond the model's maximum --------------------------------------------------------------------------

@pytest.mark.parametrize("argv, maximum", [
    (["--hf-config", str(CORPUS / "Qwen--Qwen3-8B_config.json")], "40,960 Qwen3-8B"),
    (["--model", "gemma-3-27b"], "131,072 Gemma-3-27B"),
])
def test_a_context_beyond_the_maximum_is_named_once(capsys, argv, maximum):
    assert main(["regime", *argv, "--device", "h100-sxm", "--batch", "1", "--context", "1M", "--config", CONFIG]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "exceed" in line]
    assert warnings == [f"kvwall: warning: --context 1M: 1,000,000 tokens exceed the {maximum} is configured for "
                        "(max_context, max_position_embeddings); the answer extrapolates its architecture"]


# ---- the smallest deployment ----------------------------------------------------------------------------------------

def test_the_smallest_deployment_searches_every_device_count_and_pp(catalog, capsys):
    model = catalog.models["llama-3.1-70b"]
    trtllm = load_serving_inputs(catalog).memory()
    # Llama-3.1-70B in fp8, 128 sequences of 32k on H100. TP 8 x DP 3 (24 GPUs): 70.6 GB / 8 of weights and one KV
    # head, 2 x 80 x 1 x 128 x 2 B x 32,000 = 1.31 GB a sequence: floor(0.9 x (80 - 8.825) / 1.31) = 48 a replica, 144.
    tp8dp3 = checked_deployment(model, Deployment(24, 8, 1, 1, 3, "fp8"))
    assert float(sequences_that_fit(model, tp8dp3, 32_000, 80e9, trtllm)) == \
        3 * math.floor(0.9 * (80e9 - 70.6e9 / 8) / 1_310_720_000) == 144
    # TP 4 x PP 5 (20 GPUs): 16 layers and the head over TP 4, (attention + MLP) / 5 / 4 + table / 4 parameters at
    # 1 B; two heads of 16 layers, 2 x 16 x 2 x 128 x 2 B x 32,000 = 524,288,000 B a sequence: 130 fit.
    tp4pp5 = checked_deployment(model, Deployment(20, 4, 5, 1, 1, "fp8"))
    weights = (LLAMA_ATTENTION + LLAMA_MLP) / 5 / 4 + LLAMA_TABLE / 4
    assert float(sequences_that_fit(model, tp4pp5, 32_000, 80e9, trtllm)) == \
        math.floor(0.9 * (80e9 - weights) / 524_288_000) == 130
    # and no layout of 19 GPUs holds 128
    assert not any(holds_batch(model, d, 128, 32_000, 80e9, trtllm) for d in candidate_deployments(model, "fp8", "bf16", 19))
    out = answer(capsys, "regime", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--batch", "128", "--context",
                 "32k", "--weight-dtype", "fp8")
    smallest = out["smallest_fitting_deployment"]
    assert (smallest["devices"], smallest["tensor_parallel"], smallest["pipeline_parallel"]) == (20, 4, 5)


def test_the_smallest_deployment_of_llama_405b(catalog, capsys):
    model = catalog.models["llama-3.1-405b"]
    serving = load_serving_inputs(catalog)
    # TP 8 x PP 2 on 16 H100s: 63 of 126 layers and half... a device 405 GB / 16 of fp8 weights and the head's share;
    # one KV head of 63 layers, 2 x 63 x 128 x 2 B x 32,000 = 1,032,192,000 B a sequence: 47 under TensorRT-LLM's
    # 0.9 x (80 GB - weights), 45 under vLLM's 0.9 x 80 GB - weights; either holds the 32 asked for.
    d = checked_deployment(model, Deployment(16, 8, 2, 1, 1, "fp8"))
    weights = resident_weight_bytes_per_device(model, d)
    parts = weight_part_params(model)
    assert weights == pytest.approx((parts["attention"] + parts["dense_mlp"]) / 2 / 8 + parts["lm_head"] / 8, rel=1e-12)
    assert float(sequences_that_fit(model, d, 32_000, 80e9, serving.memory("trtllm"))) == \
        math.floor(0.9 * (80e9 - weights) / 1_032_192_000) == 47
    assert float(sequences_that_fit(model, d, 32_000, 80e9, serving.memory("vllm"))) == \
        math.floor((72e9 - weights) / 1_032_192_000) == 45
    # fewer devices do: TP 2 x PP 7 on 14 holds 18 of 126 layers, 4 KV heads: 2 x 18 x 4 x 128 x 2 x 32,000 B,
    # 38 of them in 0.9 x (80 GB - weights), 35 in vLLM's 0.9 x 80 GB - weights
    smallest = answer(capsys, "regime", "--model", "llama-3.1-405b", "--device", "h100-sxm", "--batch", "32",
                      "--context", "32k", "--weight-dtype", "fp8")["smallest_fitting_deployment"]
    assert (smallest["devices"], smallest["tensor_parallel"], smallest["pipeline_parallel"]) == (14, 2, 7)
    tp2pp7 = checked_deployment(model, Deployment(14, 2, 7, 1, 1, "fp8"))
    held = (parts["attention"] + parts["dense_mlp"]) / 7 / 2 + parts["lm_head"] / 2
    assert float(sequences_that_fit(model, tp2pp7, 32_000, 80e9, serving.memory())) == \
        math.floor(0.9 * (80e9 - held) / (2 * 18 * 4 * 128 * 2 * 32_000)) == 38
    assert float(sequences_that_fit(model, tp2pp7, 32_000, 80e9, serving.memory("vllm"))) == \
        (72e9 - held) // (2 * 18 * 4 * 128 * 2 * 32_000) == 35


# ---- smaller conventions --------------------------------------------------------------------------------------------

def test_the_input_embedding_is_gathered_not_read(capsys):
    # Llama-3.1-8B, one sequence of 1k on an H100: the paper frame reads all 8.03e9 x 2 B; a step gathers one row of
    # the 128,256 x 4,096 table: 1,050,664,960 B less, 7% below the paper frame's bound.
    out = answer(capsys, "regime", "--model", "llama-3.1-8b", "--device", "h100-sxm", "--batch", "1", "--context", "1k")
    kv = 1000 * 2 * 32 * 8 * 128 * 2
    served = (8.03e9 * 2 - (128_256 - 1) * 4096 * 2 + kv) / 3.35e12
    assert out["per_device"]["step_time_bound"]["value"] == pytest.approx(served, rel=1e-12)
    assert out["paper_frame"]["numbers"]["step_time"]["value"] == pytest.approx((8.03e9 * 2 + kv) / 3.35e12, rel=1e-12)
    assert round((8.03e9 * 2 + kv) / (8.03e9 * 2 - (128_256 - 1) * 4096 * 2 + kv) - 1, 2) == 0.07
    # FLOPs: 2 (P - V d) per token, the lookup free
    assert out["per_device"]["compute_time"]["value"] == pytest.approx(
        (2 * (8.03e9 - 128_256 * 4096) + 4 * 32 * 32 * 128 * 1000) / 989.5e12, rel=1e-12)


def test_replicated_projections_are_held_by_every_rank(catalog, capsys):
    # Qwen3-32B at TP 16: 8 KV heads, so each rank holds a whole one: its k and v projections, 2 x 5,120 x 128, are
    # held by 2 ranks, (1 - 8 / 16) of them beyond the rank's share, over 64 layers: +2.0% on 32.8e9 x 2 B / 16.
    weights = answer(capsys, "regime", "--model", "qwen3-32b", "--device", "h100-sxm", "--tp", "16", "--batch", "1",
                     "--context", "1k")["per_device"]["weight_bytes_per_device"]["value"]
    extra = 64 * 2 * 5120 * 128 * (1 - 8 / 16) * 2
    assert weights == pytest.approx(32.8e9 * 2 / 16 + extra, rel=1e-12)
    assert round(extra / weights, 3) == 0.020
    # DeepSeek-V2 at TP 8: q_a (5,120 x 1,536) and kv_a (5,120 x (512 + 64)) whole on every rank, 60 layers
    model = catalog.models["deepseek-v2"]
    d = checked_deployment(model, Deployment(8, 8))
    parts = weight_part_params(model)
    held = ((parts["attention"] + parts["dense_mlp"] + parts["shared_experts"]) / 8 + parts["router"]
            + parts["experts"] / 8 + (parts["embedding"] + parts["lm_head"]) / 8
            + 60 * 5120 * (1536 + 576) * (1 - 1 / 8))
    assert resident_weight_bytes_per_device(model, d) == pytest.approx(held * 2, rel=1e-12)


def test_the_mla_intensity_prints_the_absorbed_formula(capsys):
    numbers = answer(capsys, "regime", "--model", "deepseek-v3", "--device", "b200", "--batch", "8", "--context",
                     "32k")["paper_frame"]["numbers"]
    assert "2 L n_q (2 d_c + d_r) s" in numbers["arithmetic_intensity"]["basis"]
    assert "4 L n_q d_h s" not in numbers["arithmetic_intensity"]["basis"]


def test_per_device_s_cap_follows_the_batch(capsys):
    # TP 4 on H100: 0.9 x (80 - 35) GB / (b x 81,920 B per token per device)
    rows = answer(capsys, "crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "1",
                  "32")["per_device"]
    caps = [row["capacity_crossover"]["h100-sxm"]["value"] for row in rows]
    assert caps == pytest.approx([40.5e9 / 81_920, 40.5e9 / (32 * 81_920)], rel=1e-12)


def test_the_basis_names_the_batch_that_runs(capsys):
    device = answer(capsys, "regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "32",
                    "--context", "128k")["per_device"]
    assert device["running_batch"]["value"] == 3
    basis = device["collectives_time"]["basis"]
    assert "of b = 3 (the batch that runs) x hidden" in basis and "ceil(b / DP)" not in basis
    assert device["kv_bytes_per_device"]["basis"].endswith("b the batch that runs")


# ---- what else a serving engineer asks for --------------------------------------------------------------------------

def test_collective_bytes_parameters_experts_replication_and_ttft(catalog, capsys):
    device = answer(capsys, "regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "4", "--batch", "32",
                    "--context", "128k")["per_device"]
    # the 3 that run: 2 x 80 ring all-reduces of 3 x 8,192 x 2 B, 2 x 3 / 4 of each sent
    assert device["tensor_parallel_bytes"]["value"] == 2 * 80 * 2 * 3 / 4 * 3 * 8192 * 2 == 11_796_480
    assert device["active_params_per_token"]["value"] == 70e9 - 128_256 * 8192
    assert device["kv_replication"]["value"] == 1.0
    assert device["kv_bytes_across_deployment"]["value"] == 4 * 3 * 128_000 * 81_920
    # one request of 128k: causal prefill 2 (70e9 - V d) s + 2 x 80 x 64 x 128 s^2 over 4 x 989.5 TFLOP/s
    s = 128_000
    prefill = (2 * (70e9 - 128_256 * 8192) * s + 2 * 80 * 64 * 128 * s**2) / (4 * 989.5e12)
    assert device["first_token_bound"]["value"] == pytest.approx(max(prefill, 35e9 / 3.35e12), rel=1e-12)
    tp16 = answer(capsys, "regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--tp", "16", "--batch", "1",
                  "--context", "8k")["per_device"]
    assert tp16["kv_replication"]["value"] == 2.0  # 16 ranks, 8 heads: each held twice
    deepseek = answer(capsys, "regime", "--model", "deepseek-v3", "--device", "b200", "--tp", "8", "--batch", "64",
                      "--context", "8k", "--weight-dtype", "native")["per_device"]
    assert deepseek["kv_replication"]["value"] == 8.0  # the latent whole on all 8 ranks
    assert deepseek["experts_touched_per_layer"]["value"] == pytest.approx(256 * (1 - (1 - 8 / 256) ** 64), rel=1e-12)


def test_a_specs_device_error_names_its_file(tmp_path, capsys):
    spec = tmp_path / "mine.yaml"
    spec.write_text("""evidence: spec
sources: {mine: "my notes"}
devices:
  lonely:
    name: Lonely
    hbm_capacity: {value: 80, unit: GB, source: mine}
    hbm_bandwidth: {value: 3.35, unit: TB/s, source: mine}
    package: {description: one die, partitions: {value: 1, unit: count, source: mine}}
    dense_flops: {bf16: {value: 989, unit: TFLOP/s, source: mine}}
""")
    argv = ["--model", "llama-3-70b", "--device", "lonely", "--specs", str(spec), "--batch", "8", "--context", "8k",
            "--config", CONFIG]
    assert main(["regime", *argv, "--tp", "4"]) == 2
    assert capsys.readouterr().err.strip().endswith(f"kvwall: {spec}: devices.lonely.scale_up: no scale-up link: a "
                                                    "deployment of more than one Lonely needs the rate its devices "
                                                    "exchange data at")
    assert main(["fit", *argv]) == 0
    assert f"Lonely has no scale-up link in {spec}: only one device is tried." in capsys.readouterr().out


def test_a_templated_device_can_be_deployed(tmp_path, capsys):
    from kvwall.cli.template import template

    spec = tmp_path / "t.yaml"
    spec.write_text(template(["device"]))
    device = answer(capsys, "regime", "--specs", str(spec), "--model", "llama-3-70b", "--device", "my-accelerator",
                    "--tp", "16", "--batch", "8", "--context", "8k")["per_device"]
    assert device["scale_up_domains"]["value"] == 2  # 16 devices on 8-device domains (the template's fabric)
    assert "My Link inside each 8-device domain and My NIC 400 Gb/s past it" in device["collectives_time"]["basis"]
    assert math.isfinite(device["step_time_estimate"]["value"])


def test_a_memory_rule_of_the_whole_free_memory_is_the_papers_capacity(catalog, llama70):
    # With f = 1 of the memory the weights leave, a device's s_cap is the paper's HBM - P w_p (SoK section 3.4).
    from kvwall.model.capacity import deployment_capacity_crossover
    from kvwall.model.regimes import capacity_crossover

    whole = EngineMemory("trtllm", "trtllm_free_gpu_memory_fraction", OF_FREE, 1.0, "all of it")
    b200 = catalog.devices["b200"]
    assert float(deployment_capacity_crossover(llama70, Deployment(), b200.hbm_capacity, whole)) == pytest.approx(
        float(capacity_crossover(llama70, b200.hbm_capacity, 140e9, 2.0)), rel=1e-12)


@pytest.mark.parametrize("old, new, key, reason", [
    ("  engine:\n    value: trtllm\n", "  engine:\n    value: tgi\n", "assumptions.engine.value", "'tgi' is not one of"),
    ("  vllm_gpu_memory_utilization:\n    value: 0.9\n", "  vllm_gpu_memory_utilization:\n    value: auto\n",
     "assumptions.vllm_gpu_memory_utilization.value", ""),
    ("  trtllm_free_gpu_memory_fraction:\n    value: 0.9\n", "  trtllm_free_gpu_memory_fraction:\n    value: 1.5\n",
     "assumptions.trtllm_free_gpu_memory_fraction.value", "greater than the maximum of 1"),
    # the token budgets per step (kvwall.model.prompt_steps): a positive whole number, auto for SGLang's alone
    ("  vllm_max_num_batched_tokens:\n    value: 8192\n", "  vllm_max_num_batched_tokens:\n    value: 0\n",
     "assumptions.vllm_max_num_batched_tokens.value", "must be > 0 (got 0)"),
    ("  trtllm_max_num_tokens:\n    value: 8192\n", "  trtllm_max_num_tokens:\n    value: auto\n",
     "assumptions.trtllm_max_num_tokens.value", "must be of type integer"),
    ("  trtllm_max_num_tokens:\n    value: 8192\n", "  trtllm_max_num_tokens:\n    value: 8192.5\n",
     "assumptions.trtllm_max_num_tokens.value", "must be of type integer"),
    ("  sglang_chunked_prefill_size:\n    value: auto\n", "  sglang_chunked_prefill_size:\n    value: -4096\n",
     "assumptions.sglang_chunked_prefill_size.value", "must be > 0 (got -4096)"),
])
def test_a_bad_engine_assumption_stops_with_one_line(tmp_path, old, new, key, reason):
    import shutil

    from kvwall.inputs.errors import SpecError
    from kvwall.inputs.loader import load_catalog

    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    assumptions = config / "assumptions.yaml"
    text = assumptions.read_text()
    assert old in text
    assumptions.write_text(text.replace(old, new))
    with pytest.raises(SpecError) as error:
        load_catalog(config)
    assert (error.value.file, error.value.key) == (str(assumptions), key) and reason in error.value.reason


@pytest.mark.parametrize("command", [
    ["regime", "--device", "b200", "--batch", "32"], ["footprint"], ["fit", "--device", "h100-sxm", "--batch", "1"],
    ["crossover", "--device", "b200", "--batch", "1", "32"],
])
def test_the_papers_own_workloads_say_once_that_they_extrapolate_the_model(capsys, command):
    # SoK Table 6 runs Llama-3-70B (max_position_embeddings 8,192) at 128k on purpose: no warning, one line in the answer
    assert main([*command, "--model", "llama-3-70b", "--context", "128k", "--config", CONFIG]) == 0
    out, err = capsys.readouterr()
    assert "exceed" not in err
    assert [line for line in out.splitlines() if "extrapolates" in line] == [
        "  The SoK's W1, W2, W3, W4 run Llama-3-70B at 128,000 tokens, past the 8,192 it is configured for "
        "(max_position_embeddings): the paper's frame extrapolates its architecture on purpose (SoK Table 6)"]
    # the same model at a context of the user's own is warned about, and the answer says nothing of the paper
    assert main([*command, "--model", "llama-3-70b", "--context", "200k", "--config", CONFIG]) == 0
    out, err = capsys.readouterr()
    assert "200,000 tokens exceed the 8,192 Llama-3-70B is configured for" in err and "SoK Table 6" not in out
