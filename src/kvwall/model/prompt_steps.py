"""The decode steps one prompt's chunks ride in an agg engine, at the engine's token budget per step
(kvwall.inputs.engines, config/assumptions.yaml).

An engine that mixes them (vLLM, TensorRT-LLM) runs a step's decodes and prompt chunks under one budget of B tokens
per scheduler: each attention-DP rank schedules its own sequences, and under PP each microbatch is a batch of its own,
so the b_s = ceil(b / DP) / microbatches running sequences a scheduler's batch holds take b_s of it and prompt chunks
the B - b_s left. A prompt of isl tokens rides isl / (B - b_s) steps, each of which also runs the batch's decode
(kvwall.model.first_token_estimate prices that decode for every prompt a request waits for). An engine that runs its
prefill batches apart from its decode batch (SGLang by default) gives its prompts no decode step to ride. A budget
that the running sequences fill (b_s >= B) leaves a prompt one token a step, its most.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.engines import PromptBudget
from kvwall.model.engine_memory import sglang_chunked_prefill_size
from kvwall.model.sharding import pipeline_microbatches, sequences_per_replica


def budget_tokens(budget: PromptBudget, hbm_capacity: float) -> float:
    """The tokens of one step under ``budget`` on a device of ``hbm_capacity`` bytes: as configured, or SGLang's
    default for the device's memory."""
    return float(sglang_chunked_prefill_size(hbm_capacity) if budget.tokens is None else budget.tokens)


def scheduled_sequences(d: Deployment, batch: ArrayLike) -> np.ndarray:
    """The running sequences one scheduler's batch holds, b_s: those of an attention-DP rank over the microbatches in
    flight through the stages (kvwall.model.sharding)."""
    return sequences_per_replica(batch, d.data_parallel) / pipeline_microbatches(d, batch)


def prompt_steps(budget: PromptBudget, hbm_capacity: float, isl: ArrayLike, running: ArrayLike) -> np.ndarray:
    """Decode steps a prompt of ``isl`` tokens rides beside ``running`` sequences of one scheduler's batch
    (scheduled_sequences): isl / (B - b_s) where the engine mixes them, at least one token a step; 0 where it runs
    prompts apart."""
    isl, running = np.asarray(isl, dtype=float), np.asarray(running, dtype=float)
    if not budget.mixes_decodes:
        return np.zeros(np.broadcast(isl, running).shape)
    return isl / np.maximum(budget_tokens(budget, hbm_capacity) - running, 1.0)
