"""Streaming-copy bandwidth: the achievable memory bandwidth of a device, the bound a KV kernel is held to.

A copy of N bytes reads N bytes and writes N bytes; the bandwidth is 2N / time, as STREAM counts its Copy kernel.
Write-allocate traffic (a cache reading a line before overwriting it) is not counted, so the figure never
overstates the bus. Buffers are far larger than any cache, touched once before timing, and split across all cores.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Bytes counted per byte of buffer: each byte is read once and written once.
BYTES_COUNTED_PER_BUFFER_BYTE = 2


class HostCopy:
    """numpy copy between two host buffers of ``nbytes``, each of ``workers`` threads copying its own slice."""

    def __init__(self, nbytes: int, workers: int):
        self.source = np.ones(nbytes // 8, np.float64)
        self.target = np.zeros_like(self.source)
        bounds = np.linspace(0, self.source.size, workers + 1).astype(int)
        self.slices = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kvwall-copy")

    @property
    def bytes_counted(self) -> int:
        return BYTES_COUNTED_PER_BUFFER_BYTE * self.source.nbytes

    def _copy(self, part: slice) -> None:
        np.copyto(self.target[part], self.source[part])

    def __call__(self) -> None:
        list(self.pool.map(self._copy, self.slices))

    def close(self) -> None:
        self.pool.shutdown()
        self.source = self.target = None
