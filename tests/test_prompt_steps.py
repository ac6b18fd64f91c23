"""The decode steps one prompt's chunks ride in an agg engine at its token budget per step (kvwall.model.prompt_steps,
config/assumptions.yaml): each engine's default by hand (a bad budget stops the load in one line:
tests/test_serving_by_hand.py)."""

import numpy as np
import pytest

from kvwall.inputs.deployment import Deployment, load_serving_inputs
from kvwall.inputs.engines import PromptBudget
from kvwall.model.engine_memory import sglang_chunked_prefill_size
from kvwall.model.prompt_steps import budget_tokens, prompt_steps, scheduled_sequences


def test_each_engines_budget_is_its_default(catalog):
    budgets = load_serving_inputs(catalog).prompt_budgets
    h200, b200 = catalog.devices["h200-sxm"].hbm_capacity, catalog.devices["b200"].hbm_capacity
    # vLLM's API server and TensorRT-LLM: 8,192 tokens a step, decodes and prompt chunks together
    for engine in ("vllm", "trtllm"):
        assert budgets[engine].mixes_decodes and budget_tokens(budgets[engine], h200) == 8192.0
    # SGLang: 8,192 below 160 GiB (141 GB), 16,384 above (192 GB), its prefill batches apart from its decodes
    assert budgets["sglang"].tokens is None and not budgets["sglang"].mixes_decodes
    assert budget_tokens(budgets["sglang"], h200) == 8192.0 and budget_tokens(budgets["sglang"], b200) == 16384.0
    assert sglang_chunked_prefill_size(40e9) == 4096 and sglang_chunked_prefill_size(24e9) == 2048


def test_a_prompt_rides_isl_over_the_budget_the_decodes_leave_by_hand(catalog):
    mixed = PromptBudget("vllm", "vllm_max_num_batched_tokens", 8192.0, True, "test")
    h200 = catalog.devices["h200-sxm"].hbm_capacity
    # 8,192 tokens in, 192 running: the decodes take 192 of the budget, a prompt rides 8,192 / 8,000 steps
    assert prompt_steps(mixed, h200, [1024.0, 8192.0], [64.0, 192.0]) == pytest.approx([1024 / 8128, 8192 / 8000])
    # more running than the budget holds: a prompt's token a step, its most
    assert prompt_steps(mixed, h200, 1024.0, 9000.0) == pytest.approx(1024.0)
    # prompts apart from the decodes ride none, at any batch
    apart = PromptBudget("sglang", "sglang_chunked_prefill_size", None, False, "test")
    assert prompt_steps(apart, h200, [1024.0, 8192.0], [64.0, 192.0]).tolist() == [0.0, 0.0]
    # more running sequences leave less of the budget: more steps, never fewer
    steps = prompt_steps(mixed, h200, 4096.0, np.arange(1.0, 8000.0, 97.0))
    assert (np.diff(steps) > 0).all()



def test_each_scheduler_budgets_its_own_batch_by_hand():
    # attention DP: each of 8 ranks schedules ceil(256 / 8) = 32 running sequences, so a prompt of 1,024 tokens rides
    # 1,024 / (8,192 - 32) of its rank's steps, not 1,024 / (8,192 - 256)
    dp = Deployment(devices=8, data_parallel=8, expert_parallel=8)
    assert scheduled_sequences(dp, [256.0, 250.0]) == pytest.approx([32.0, 32.0])  # ceil(250 / 8) = 32
    mixed = PromptBudget("vllm", "vllm_max_num_batched_tokens", 8192.0, True, "test")
    assert prompt_steps(mixed, 141e9, 1024.0, scheduled_sequences(dp, 256.0)) == pytest.approx(1024 / 8160)
    # PP: each microbatch in flight is a batch of its own, min(PP, sequences) of them: 64 over 2 stages, 32 a batch;
    # 2 sequences over 3 stages, 2 microbatches of 1
    assert scheduled_sequences(Deployment(devices=2, pipeline_parallel=2), 64.0) == pytest.approx(32.0)
    assert scheduled_sequences(Deployment(devices=3, pipeline_parallel=3), 2.0) == pytest.approx(1.0)
    # one device: the batch itself
    assert scheduled_sequences(Deployment(), [1.0, 64.0]) == pytest.approx([1.0, 64.0])
