"""PyTorch's scaled_dot_product_attention over an unpaged cache, and a device copy, on CUDA when present.

torch is an optional extra (``uv sync --extra torch``): it is imported only here and only when called, and the
benchmark leaves these kernels out when it is missing. Every call ends with a device synchronisation. On the CPU a
host-side clock read after it times the work; on CUDA every layer of one step is captured as one CUDA graph and
timed by CUDA events around its replay (kvwall.measure.torch_timing.GraphReplay), without a launch per layer.
"""

from __future__ import annotations

import importlib.util
import math
import os
from functools import cache

from kvwall.measure.shape import ARRAY_DTYPES, DecodeShape

#: Bytes counted per byte of buffer by a device copy (read once, written once), as for the host copy.
BYTES_COUNTED_PER_BUFFER_BYTE = 2


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


@cache
def _torch():
    # Interleaved with the numpy kernels on the same cores: idle OpenMP workers must sleep, not spin on them.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    return torch


def torch_device() -> str | None:
    """'cuda' when torch sees a GPU, 'cpu' when torch is installed without one, None without torch."""
    if not torch_installed():
        return None
    return "cuda" if _torch().cuda.is_available() else "cpu"


def gpu_fingerprint() -> dict | None:
    """Name, memory and CUDA version of GPU 0, or None."""
    if torch_device() != "cuda":
        return None
    torch = _torch()
    props = torch.cuda.get_device_properties(0)
    return {"name": props.name, "memory_bytes": int(props.total_memory), "cuda": torch.version.cuda, "count": torch.cuda.device_count()}


def torch_version() -> str | None:
    return _torch().__version__ if torch_installed() else None


def synchronize(device: str) -> None:
    if device == "cuda":
        _torch().cuda.synchronize()


class TorchSdpa:
    """F.scaled_dot_product_attention per layer, one query token per sequence.

    Grouped-query attention is packed: the ``group`` query heads that share a KV head are the query rows of one
    attention over that head's K and V, unmasked, as flash-decoding packs them. This is exactly decode GQA, and it
    reads each KV head once; ``enable_gqa`` would instead repeat K and V per query head on the CPU path (5x slower
    there).
    """

    layout = "contiguous"

    def __init__(self, queries, k, v, device: str):
        """Tensors on ``device``: queries [layer, sequence, kv_head, group, dim], K and V [layer, sequence, kv_head, token, dim]."""
        self.q, self.k, self.v, self.device = queries, k, v, device

    @classmethod
    def from_arrays(cls, queries, k, v, device: str = "cpu") -> "TorchSdpa":
        """From numpy arrays laid out as kvwall.measure.numpy_decode takes them."""
        torch = _torch()
        return cls(*(torch.from_numpy(array).to(device) for array in (queries, k, v)), device)

    #: Keyword arguments of every attention call (the packed form needs none).
    attention_options: dict = {}

    def layer_outputs(self) -> list:
        """Every layer's attention, launched without a synchronisation (a CUDA graph capture forbids one)."""
        attention = _torch().nn.functional.scaled_dot_product_attention
        return [attention(self.q[layer], self.k[layer], self.v[layer], **self.attention_options)
                for layer in range(self.k.shape[0])]

    def __call__(self):
        """The step's output [layer, sequence, kv_head, group, dim], once the device has finished."""
        with _torch().inference_mode():
            out = self.layer_outputs()
        synchronize(self.device)
        stacked = _torch().stack(out)
        return stacked.reshape(*stacked.shape[:2], self.k.shape[2], -1, stacked.shape[-1])

    def close(self) -> None:
        self.q = self.k = self.v = None


class TorchSdpaGqa(TorchSdpa):
    """F.scaled_dot_product_attention per layer as the engines lay decode GQA out: one query token per query head,
    ``enable_gqa=True`` mapping query head h to KV head h // group (Hugging Face's repeat_kv order).

    The kernel then spreads sequences x query heads over the device's multiprocessors from batch 1, where the packed
    form (TorchSdpa) gives a KV head's group of query rows to one, and leaves a GPU mostly idle at small batch.
    """

    def __init__(self, queries, k, v, device: str):
        """``queries`` [layer, sequence, kv_head, group, dim] as TorchSdpa takes them, held as [layer, sequence,
        query head, 1, dim]."""
        layers, batch, kv_heads, group, dim = queries.shape
        super().__init__(queries.reshape(layers, batch, kv_heads * group, 1, dim), k, v, device)

    attention_options = {"enable_gqa": True}


class SdpaBuilder:
    """One filled device buffer as large as the sweep's largest cache; each point's K and V are views of it.

    On CUDA each point's step is the engines' layout (TorchSdpaGqa); on the CPU the packed form (``enable_gqa``
    repeats K and V per query head there, 5x slower).
    """

    def __init__(self, largest: DecodeShape, device: str, seed: int):
        torch = _torch()
        self.device, self.dtype = device, getattr(torch, ARRAY_DTYPES[largest.dtype])
        self.generator = torch.Generator(device=device).manual_seed(seed)
        elements = 2 * math.prod(largest.kv_array_shape)
        self.buffer = torch.empty(elements, dtype=self.dtype, device=device).uniform_(-1.0, 1.0, generator=self.generator)

    def __call__(self, shape: DecodeShape) -> TorchSdpa:
        torch = _torch()
        size = math.prod(shape.kv_array_shape)
        q = torch.empty(shape.query_shape, dtype=self.dtype, device=self.device).uniform_(-1.0, 1.0, generator=self.generator)
        k = self.buffer[:size].view(shape.kv_array_shape)
        v = self.buffer[size : 2 * size].view(shape.kv_array_shape)
        return (TorchSdpaGqa if self.device == "cuda" else TorchSdpa)(q, k, v, self.device)

    def close(self) -> None:
        self.buffer = None
        if self.device == "cuda":
            _torch().cuda.empty_cache()


class TorchCopy:
    """Device-to-device copy between two buffers of ``nbytes`` (``dst.copy_(src)``)."""

    def __init__(self, nbytes: int, device: str):
        torch = _torch()
        self.device = device
        self.source = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        self.target = torch.zeros_like(self.source)

    @property
    def bytes_counted(self) -> int:
        return BYTES_COUNTED_PER_BUFFER_BYTE * self.source.numel() * self.source.element_size()

    def __call__(self) -> None:
        self.target.copy_(self.source)
        synchronize(self.device)

    def close(self) -> None:
        self.source = self.target = None
        if self.device == "cuda":
            _torch().cuda.empty_cache()
