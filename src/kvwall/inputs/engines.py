"""The serving engines and how each sizes the KV memory of a device (config/assumptions.yaml, each rule cited there).

vLLM (``gpu_memory_utilization``, vllm/v1/worker/gpu_worker.py ``determine_available_memory``) and SGLang
(``mem_fraction_static``, sglang/srt/model_executor/model_runner.py ``profile_max_num_token``) take a fraction of a
device's whole memory for weights and KV together, so the KV gets that fraction of the HBM less the weights; TensorRT-LLM
(``free_gpu_memory_fraction``, tensorrt_llm.llmapi.KvCacheConfig) gives the KV a fraction of the memory the weights
leave free. SGLang's default fraction depends on the device and the layout (kvwall.model.engine_memory).

Each engine's scheduler also caps the tokens of one step (kvwall.model.prompt_steps): vLLM's
``max_num_batched_tokens`` (its V1 scheduler runs the decodes of the running requests and prompt chunks in one step,
under one budget), TensorRT-LLM's ``max_num_tokens`` (its in-flight batching runs context and generation requests in
one step, under one budget) and SGLang's ``chunked_prefill_size`` (its scheduler runs a prefill batch apart from the
decode batch unless ``--enable-mixed-chunk``, off by default; its default size grows with the device's memory,
kvwall.model.engine_memory).
"""

from __future__ import annotations

from dataclasses import dataclass

VLLM, SGLANG, TRTLLM = "vllm", "sglang", "trtllm"
#: The engines whose memory rules kvwall knows, as ``--engine`` and the serving measurements name them.
ENGINES = (VLLM, SGLANG, TRTLLM)
ENGINE_NAMES = {VLLM: "vLLM", SGLANG: "SGLang", TRTLLM: "TensorRT-LLM"}
#: The fraction each engine's rule takes: of the whole HBM (weights then taken from it), or of what the weights leave.
OF_TOTAL, OF_FREE = "total", "free"
#: Each engine's parameter (its key in config/assumptions.yaml) and what it is a fraction of.
PARAMETERS = {VLLM: ("vllm_gpu_memory_utilization", OF_TOTAL), SGLANG: ("sglang_mem_fraction_static", OF_TOTAL),
              TRTLLM: ("trtllm_free_gpu_memory_fraction", OF_FREE)}
#: Each engine's token budget per step (its key in config/assumptions.yaml) and whether a step runs the decodes of
#: the running requests beside its prompts' chunks under that budget.
PROMPT_BUDGETS = {VLLM: ("vllm_max_num_batched_tokens", True), SGLANG: ("sglang_chunked_prefill_size", False),
                  TRTLLM: ("trtllm_max_num_tokens", True)}
#: The value of sglang_mem_fraction_static or sglang_chunked_prefill_size that leaves SGLang's default to SGLang's
#: own rule.
AUTO = "auto"
#: The assumptions that may be AUTO.
COMPUTED_BY_SGLANG = (PARAMETERS[SGLANG][0], PROMPT_BUDGETS[SGLANG][0])


@dataclass(frozen=True)
class EngineMemory:
    """One engine's rule for the KV memory of a device: ``fraction`` of the whole HBM less the weights (``of`` total),
    or of the HBM the weights leave (``of`` free); None for SGLang's default, which it computes from the device's
    memory and the layout. ``parameter`` is the engine's own name for the fraction, ``source`` its citation."""

    engine: str
    parameter: str
    of: str
    fraction: float | None
    source: str

    @property
    def name(self) -> str:
        return ENGINE_NAMES[self.engine]

    @property
    def rule(self) -> str:
        """The rule in words: ``0.9 x HBM - weights`` (vLLM), ``0.9 x (HBM - weights)`` (TensorRT-LLM)."""
        fraction = "f" if self.fraction is None else f"{self.fraction:g}"
        shape = f"{fraction} x HBM - weights" if self.of == OF_TOTAL else f"{fraction} x (HBM - weights)"
        default = (", f = (HBM - reserved) / HBM by SGLang's default (activations, CUDA graphs)"
                   if self.fraction is None else "")
        return f"{self.name} {self.parameter.split('_', 1)[1]}: {shape}{default}"


@dataclass(frozen=True)
class PromptBudget:
    """One engine's token budget per step: ``tokens`` (None: SGLang's default, which it computes from the device's
    memory), whether a step runs the running requests' decodes beside its prompts' chunks (``mixes_decodes``), the
    engine's own name for it (``parameter``) and its citation (``source``)."""

    engine: str
    parameter: str
    tokens: float | None
    mixes_decodes: bool
    source: str

