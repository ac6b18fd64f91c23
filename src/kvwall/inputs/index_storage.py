"""How the serving engines store a sparse-attention indexer's keys: in fp8 with one fp32 scale per 128 values,
whatever the format of the KV cache beside them.

vLLM caches each DeepSeek-V3.2 / GLM-5 index key as ``head_dim + head_dim // quant_block_size * 4`` bytes of uint8
(vllm/model_executor/models/deepseek_v2.py, ``DeepseekV32IndexerCache`` with ``quant_block_size`` 128), SGLang as
``index_head_dim + index_head_dim // quant_block_size * 4`` (sglang/srt/mem_cache/memory_pool.py,
``NSATokenToKVPool``, fp8 by default), TensorRT-LLM alike (tensorrt_llm/_torch/attention_backend/sparse/dsa.py,
``DSACacheManager``): 128 + 4 = 132 B for a 128-wide key, at bf16 KV as at fp8.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.inputs.engines import SGLANG, TRTLLM, VLLM


@dataclass(frozen=True)
class IndexStorage:
    """One engine's storage of an index key: ``value_bytes`` per value and ``scale_bytes`` per ``block`` values."""

    value_bytes: int
    scale_bytes: int
    block: int
    source: str

    def key_bytes(self, index_head_dim: int) -> int:
        """Bytes of one index key of ``index_head_dim`` values: d_I w_I + (d_I / block) w_scale."""
        return index_head_dim * self.value_bytes + index_head_dim // self.block * self.scale_bytes


#: Each engine's rule (the three agree: fp8 values, one fp32 scale per 128).
ENGINE_INDEX_STORAGE = {
    VLLM: IndexStorage(1, 4, 128, "vllm/model_executor/models/deepseek_v2.py DeepseekV32IndexerCache"),
    SGLANG: IndexStorage(1, 4, 128, "sglang/srt/mem_cache/memory_pool.py NSATokenToKVPool"),
    TRTLLM: IndexStorage(1, 4, 128, "tensorrt_llm/_torch/attention_backend/sparse/dsa.py DSACacheManager"),
}
#: The storage kvwall prices index keys at: every engine's.
INDEX_STORAGE = ENGINE_INDEX_STORAGE[VLLM]
