"""The serving engines and how each sizes the KV memory of a device (config/assumptions.yaml, each rule cited there).

vLLM (``gpu_memory_utilization``, vllm/v1/worker/gpu_worker.py ``determine_available_memory``) and SGLang
(``mem_fraction_static``, sglang/srt/model_executor/model_runner.py ``profile_max_num_token``) take a fraction of a
device's whole memory for weights and KV together, so the KV gets that fraction of the HBM less the weights; TensorRT-LLM
(``free_gpu_memory_fraction``, tensorrt_llm.llmapi.KvCacheConfig) gives the KV a fraction of the memory the weights
leave free. SGLang's default fraction depends on the device and the layout (kvwall.model.engine_memory).
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
#: The value of sglang_mem_fraction_static that leaves SGLang's default to SGLang's own rule.
AUTO = "auto"


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
