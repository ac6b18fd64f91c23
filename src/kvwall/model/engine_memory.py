"""The KV memory a serving engine leaves on one device: its own rule (kvwall.inputs.engines), and SGLang's default
fraction, which SGLang computes from the device's memory and the layout.

SGLang (python/sglang/srt/server_args.py, ``ServerArgs._handle_gpu_memory_settings``) reserves, in MiB, 512 for
metadata, 1.5 per token of its chunked-prefill size for activations, 2 per request of its largest CUDA-graph batch,
TP x PP x 128 for large layouts, under attention DP 3 x DP per graph request (4.5 x DP above 300 requests), at
least 10 GiB on devices of more than 60 GiB, and sets ``mem_fraction_static`` to (HBM - reserved) / HBM rounded to
three digits; the chunked-prefill size and the largest graph batch grow with the device's memory.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvwall.inputs.deployment import Deployment
from kvwall.inputs.engines import OF_TOTAL, EngineMemory
from kvwall.units import in_unit

#: SGLang's defaults by device memory: (devices below this many MiB, chunked-prefill tokens, largest CUDA-graph batch
#: below TP 4, at TP 4 and above); the last band holds every larger device.
SGLANG_BANDS = (
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
    (float("inf"), 16384, 512, 512),
)


def _sglang_band(hbm_capacity: float) -> tuple[float, int, int, int]:
    """The band of SGLANG_BANDS a device of ``hbm_capacity`` bytes falls in."""
    memory = in_unit(hbm_capacity, "MiB")
    return next(band for band in SGLANG_BANDS if memory < band[0])


def sglang_chunked_prefill_size(hbm_capacity: float) -> int:
    """SGLang's default chunked_prefill_size on a device of ``hbm_capacity`` bytes (tokens)."""
    return _sglang_band(hbm_capacity)[1]


def sglang_static_fraction(hbm_capacity: float, d: Deployment) -> float:
    """SGLang's default mem_fraction_static on a device of ``hbm_capacity`` bytes under ``d`` (module docstring)."""
    memory = in_unit(hbm_capacity, "MiB")
    _, chunked, small, large = _sglang_band(hbm_capacity)
    graph_batch = small if d.tensor_parallel < 4 else large
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_batch * 2 + d.tensor_parallel * d.pipeline_parallel / 8 * 1024
    if d.data_parallel > 1:
        reserved += graph_batch * d.data_parallel * 3
        if graph_batch > 300:
            reserved += graph_batch * d.data_parallel * 1.5
    if memory > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((memory - reserved) / memory, 3)


def engine_fraction(memory: EngineMemory, hbm_capacity: float, d: Deployment) -> float:
    """The fraction the engine's rule takes on this device and layout: as configured, or SGLang's default."""
    return sglang_static_fraction(hbm_capacity, d) if memory.fraction is None else memory.fraction


def kv_memory(memory: EngineMemory, hbm_capacity: float, weight_bytes: ArrayLike, d: Deployment) -> np.ndarray:
    """Bytes the engine gives to KV on a device holding ``weight_bytes``: f x HBM - weights (vLLM, SGLang) or
    f x (HBM - weights) (TensorRT-LLM); negative where the weights do not fit. Activations are not modelled beyond
    what the rule reserves."""
    f, weights = engine_fraction(memory, hbm_capacity, d), np.asarray(weight_bytes, dtype=float)
    return f * hbm_capacity - weights if memory.of == OF_TOTAL else f * (hbm_capacity - weights)
