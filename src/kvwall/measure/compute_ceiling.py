"""The compute ceiling of the numpy kernels: how fast this CPU streams KV through their products when loads are free.

Each worker thread repeats the two products of one tile (scores K q^T and the weighted sum p V, as
kvwall.measure.numpy_decode computes them) on K and V tiles that stay in its cache, all workers at once. The KV
bytes those products consume per second is the highest KV bandwidth the kernels could reach if loading a tile cost
nothing. Decode attention does 2g / w_kv FLOPs per KV byte (SoK section 3.2's long-context intensity; 3.5 FLOP/B for
Qwen2.5-7B's g = 7 in fp32). Where the machine's ridge (FLOP/s over copy bandwidth) is below that, this ceiling and not
the copy bandwidth bounds the kernels: attainable KV bandwidth = min(copy bandwidth, compute ceiling).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kvwall.measure.shape import DecodeShape

#: Tiles each worker multiplies per timed call: enough for milliseconds of work, few enough to time it often.
TILES_PER_WORKER = 64


class TileProducts:
    """Each of ``workers`` threads runs a tile's two products ``TILES_PER_WORKER`` times on cache-resident tiles."""

    def __init__(self, shape: DecodeShape, tile_tokens: int, workers: int, flop_per_byte: float, rng: np.random.Generator):
        if shape.dtype != "fp32":
            raise ValueError(f"the numpy kernels hold KV in fp32, not {shape.dtype}")
        heads, group, dim = shape.kv_heads, shape.group, shape.head_dim
        self.workers, self.flop_per_byte = workers, flop_per_byte
        self.tile_bytes = 2 * heads * tile_tokens * dim * np.dtype(np.float32).itemsize
        self.workspaces = [
            {
                "k": rng.standard_normal((heads, tile_tokens, dim), dtype=np.float32),
                "v": rng.standard_normal((heads, tile_tokens, dim), dtype=np.float32),
                "queries_t": rng.standard_normal((heads, dim, group), dtype=np.float32),
                "scores": np.empty((heads, tile_tokens, group), np.float32),
                "weights": rng.standard_normal((heads, group, tile_tokens), dtype=np.float32),
                "products": np.empty((heads, group, dim), np.float32),
            }
            for _ in range(workers)
        ]
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kvwall-ceiling")

    @property
    def bytes_counted(self) -> int:
        """KV bytes the products of one call consume, over all workers."""
        return self.workers * TILES_PER_WORKER * self.tile_bytes

    @property
    def flops_counted(self) -> float:
        return self.bytes_counted * self.flop_per_byte

    def _products(self, worker: int) -> None:
        ws = self.workspaces[worker]
        for _ in range(TILES_PER_WORKER):
            np.matmul(ws["k"], ws["queries_t"], out=ws["scores"])
            np.matmul(ws["weights"], ws["v"], out=ws["products"])

    def __call__(self) -> None:
        list(self.pool.map(self._products, range(self.workers)))

    def close(self) -> None:
        self.pool.shutdown()
        self.workspaces = []
