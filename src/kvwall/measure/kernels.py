"""The kernels a run times on each device, and the streaming copy that bounds them there.

cpu: numpy over a contiguous cache and over a paged one (kvwall.measure.numpy_decode), plus torch SDPA when torch
is installed without a GPU. cuda: torch SDPA and a device copy, when torch sees a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from kvwall.measure import torch_decode
from kvwall.measure.config import MeasureConfig
from kvwall.measure.copy_bandwidth import HostCopy
from kvwall.measure.kv_layouts import ContiguousKV, PagedKV
from kvwall.measure.numpy_decode import NumpyDecode
from kvwall.measure.shape import DecodeShape


class Step(Protocol):
    """One decode step (or one copy): calling it returns when the device has finished."""

    def __call__(self): ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Kernel:
    """A kernel as a record names it, and how to set one up for a shape."""

    name: str
    device: str
    layout: str
    library: str
    build: Callable[[DecodeShape], Step]


def _random_queries(shape: DecodeShape, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(shape.query_shape, dtype=np.float32)


def numpy_kernels(config: MeasureConfig, workers: int) -> list[Kernel]:
    """numpy decode over the contiguous and the paged layout, ``workers`` threads each."""
    library = f"numpy {np.__version__}"

    def contiguous(shape: DecodeShape) -> Step:
        rng = np.random.default_rng(config.seed)
        return NumpyDecode(_random_queries(shape, rng), ContiguousKV.allocate(shape, rng), config.tile_tokens, workers)

    def paged(shape: DecodeShape) -> Step:
        rng = np.random.default_rng(config.seed)
        kv = PagedKV.allocate(shape, rng, config.block_size)
        return NumpyDecode(_random_queries(shape, rng), kv, config.tile_tokens, workers)

    return [
        Kernel("numpy-contiguous", "cpu", ContiguousKV.name, library, contiguous),
        Kernel("numpy-paged", "cpu", f"{PagedKV.name} ({config.block_size}-token blocks)", library, paged),
    ]


def torch_kernel(config: MeasureConfig, device: str) -> Kernel:
    return Kernel("torch-sdpa", device, "contiguous", f"torch {torch_decode.torch_version()}",
                  lambda shape: torch_decode.TorchSdpa.random(shape, device, config.seed))


def kernels_by_device(config: MeasureConfig, workers: int) -> dict[str, tuple[list[Kernel], Callable[[int], Step]]]:
    """Each device this machine offers: its kernels, and a factory of its streaming copy for a buffer size."""
    torch_device = torch_decode.torch_device()
    cpu = numpy_kernels(config, workers)
    if torch_device == "cpu":
        cpu.append(torch_kernel(config, "cpu"))
    devices = {"cpu": (cpu, lambda nbytes: HostCopy(nbytes, workers))}
    if torch_device == "cuda":
        devices["cuda"] = ([torch_kernel(config, "cuda")], lambda nbytes: torch_decode.TorchCopy(nbytes, "cuda"))
    return devices
