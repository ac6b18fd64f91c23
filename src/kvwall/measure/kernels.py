"""The kernels a run times on each device, and the bounds measured beside them there.

cpu: numpy over a contiguous cache and over a paged one (kvwall.measure.numpy_decode), plus torch SDPA (packed) when
torch is installed without a GPU; bounded by a host copy and, for the numpy kernels, by the compute ceiling of their
products (kvwall.measure.compute_ceiling). cuda: torch SDPA in the engines' layout, one query per head with grouped
KV, each step one CUDA graph timed by CUDA events, and a device copy, when torch sees a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from kvwall.measure import torch_decode
from kvwall.measure.compute_ceiling import TileProducts
from kvwall.measure.config import MeasureConfig
from kvwall.measure.copy_bandwidth import HostCopy
from kvwall.measure.kv_layouts import ContiguousKV, PagedKV, filled_buffer
from kvwall.measure.numpy_decode import NumpyDecode
from kvwall.measure.shape import ARRAY_DTYPES, DecodeShape
from kvwall.measure.torch_timing import GRAPH_EVENTS, GraphReplay
from kvwall.model.roofline import intensity_long_context_limit
from kvwall.units import dtype_bytes


#: How a step is timed unless it times itself: a host clock around a call that returns once the device has finished.
HOST_CLOCK = "host clock (time.perf_counter) around each call, which returns once the device has finished"


class Step(Protocol):
    """One decode step (or one copy): calling it returns when the device has finished."""

    def __call__(self): ...

    def close(self) -> None: ...


class Builder(Protocol):
    """Holds one filled buffer as large as the sweep's largest cache and sets up a step for any point over it."""

    def __call__(self, shape: DecodeShape) -> Step: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Kernel:
    """A kernel as a record names it, and how to prepare it for a sweep whose largest point is given."""

    name: str
    device: str
    layout: str
    library: str
    prepare: Callable[[DecodeShape], Builder]
    timing: str = HOST_CLOCK


class _NumpyBuilder:
    """numpy decode over one layout, every point's cache carved from the same filled host buffer."""

    def __init__(self, largest: DecodeShape, config: MeasureConfig, workers: int, paged: bool):
        self.rng = np.random.default_rng(config.seed)
        elements = 2 * int(np.prod(largest.kv_array_shape))
        self.buffer = filled_buffer(elements, ARRAY_DTYPES[largest.dtype], self.rng)
        self.config, self.workers, self.paged = config, workers, paged

    def __call__(self, shape: DecodeShape) -> Step:
        if self.paged:
            kv = PagedKV.carve(self.buffer, shape, self.config.block_size, self.rng)
        else:
            kv = ContiguousKV.carve(self.buffer, shape)
        queries = self.rng.standard_normal(shape.query_shape, dtype=np.float32)
        return NumpyDecode(queries, kv, self.config.tile_tokens, self.workers)

    def close(self) -> None:
        self.buffer = None


def numpy_kernels(config: MeasureConfig, workers: int) -> list[Kernel]:
    """numpy decode over the contiguous and the paged layout, ``workers`` threads each."""
    library = f"numpy {np.__version__}"
    return [
        Kernel("numpy-contiguous", "cpu", ContiguousKV.name, library,
               lambda largest: _NumpyBuilder(largest, config, workers, paged=False)),
        Kernel("numpy-paged", "cpu", f"{PagedKV.name} ({config.block_size}-token blocks)", library,
               lambda largest: _NumpyBuilder(largest, config, workers, paged=True)),
    ]


class _Captured:
    """A builder whose every step is captured as one CUDA graph and timed by CUDA events (torch_timing.GraphReplay)."""

    def __init__(self, builder: Builder):
        self.builder = builder

    def __call__(self, shape: DecodeShape) -> Step:
        return GraphReplay(self.builder(shape))

    def close(self) -> None:
        self.builder.close()


def torch_kernel(config: MeasureConfig, device: str) -> Kernel:
    """torch SDPA: on CUDA in the engines' layout, captured as a graph; on the CPU packed, by the host clock."""
    library = f"torch {torch_decode.torch_version()}"

    def build(largest: DecodeShape) -> Builder:
        builder = torch_decode.SdpaBuilder(largest, device, config.seed)
        return _Captured(builder) if device == "cuda" else builder

    if device == "cuda":
        return Kernel("torch-sdpa-gqa", device, "contiguous, one query per head (enable_gqa)", library, build,
                      GRAPH_EVENTS)
    return Kernel("torch-sdpa", device, "contiguous", library, build)


@dataclass(frozen=True)
class DeviceBench:
    """One device's part of a run: its kernels, its streaming copy for a buffer size, and the compute ceiling of
    the kernels named in ``ceiling_applies_to`` for the sweep's largest shape (None where none is measured)."""

    kernels: list[Kernel]
    copy: Callable[[int], Step]
    ceiling: Callable[[DecodeShape], Step] | None = None
    ceiling_applies_to: tuple[str, ...] = ()


def numpy_ceiling(config: MeasureConfig, workers: int) -> Callable[[DecodeShape], Step]:
    """The products of the numpy kernels on cache-resident tiles, at the model's long-context intensity."""
    def build(shape: DecodeShape) -> Step:
        intensity = float(intensity_long_context_limit(config.model, dtype_bytes(shape.dtype)))
        return TileProducts(shape, config.tile_tokens, workers, intensity, np.random.default_rng(config.seed))
    return build


def kernels_by_device(config: MeasureConfig, workers: int) -> dict[str, DeviceBench]:
    """Each device this machine offers, with what is timed on it."""
    torch_device = torch_decode.torch_device()
    cpu = numpy_kernels(config, workers)
    numpy_names = tuple(kernel.name for kernel in cpu)
    if torch_device == "cpu":
        cpu.append(torch_kernel(config, "cpu"))
    devices = {"cpu": DeviceBench(cpu, lambda nbytes: HostCopy(nbytes, workers), numpy_ceiling(config, workers), numpy_names)}
    if torch_device == "cuda":
        devices["cuda"] = DeviceBench([torch_kernel(config, "cuda")], lambda nbytes: torch_decode.TorchCopy(nbytes, "cuda"))
    return devices
