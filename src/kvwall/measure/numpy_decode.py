"""Decode attention in numpy over either KV layout: split-KV softmax(q K^T / sqrt(d)) V, one new token per sequence.

Work is split as flash-decoding splits it: each (layer, sequence) is cut into token ranges that worker threads take
in turn; a range streams its K tiles (scores), then its V tiles (weighted sum), and leaves a partial result (its
maximum score, sum of exponentials and unnormalised output) that a final merge combines exactly. Tiles are small
(a few hundred KiB) so the layout's load (a slice copy or a block-table gather) streams from memory and the BLAS
products read from cache. numpy matmul has BLAS only in float32 and float64, so these kernels hold KV in fp32:
2 * group FLOPs per 4-byte element, 3.5 FLOP/B for Qwen2.5-7B's 7 query heads per KV head.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kvwall.measure.kv_layouts import ContiguousKV, PagedKV


def splits_per_sequence(layers: int, batch: int, tiles: int, workers: int) -> int:
    """Token ranges per (layer, sequence): the smallest divisor of the tile count giving every worker two ranges."""
    wanted = math.ceil(2 * workers / (layers * batch))
    return next((n for n in range(1, tiles + 1) if tiles % n == 0 and n >= wanted), tiles)


class NumpyDecode:
    """One decode step over a KV layout, run by ``workers`` threads; call it to run a step, close it when done."""

    def __init__(self, queries: np.ndarray, kv: ContiguousKV | PagedKV, tile_tokens: int, workers: int):
        layers, batch, heads, group, dim = queries.shape
        context = kv.k.shape[3] if isinstance(kv, ContiguousKV) else kv.block_table.shape[1] * kv.block_size
        if context % tile_tokens:
            raise ValueError(f"context {context} is not a whole number of {tile_tokens}-token tiles")
        self.kv, self.tile, self.workers = kv, tile_tokens, workers
        # Scaled queries, transposed per KV head so scores come out of one product per tile: [.., dim, group].
        self.queries_t = np.ascontiguousarray((queries / np.float32(math.sqrt(dim))).swapaxes(-1, -2), dtype=np.float32)
        splits = splits_per_sequence(layers, batch, context // tile_tokens, workers)
        self.span = context // splits
        self.items = [(layer, seq, split) for layer in range(layers) for seq in range(batch) for split in range(splits)]
        self.max = np.empty((layers, batch, splits, heads, group), np.float32)
        self.total = np.empty_like(self.max)
        self.partial = np.empty((layers, batch, splits, heads, group, dim), np.float32)
        self.workspaces = [self._workspace(heads, group, dim) for _ in range(workers)]
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kvwall-decode")

    def _workspace(self, heads: int, group: int, dim: int) -> dict[str, np.ndarray]:
        tiles = self.span // self.tile
        return {
            "k": np.empty((heads, self.tile, dim), np.float32),
            "v": np.empty((heads, self.tile, dim), np.float32),
            "score_tiles": np.empty((tiles, heads, self.tile, group), np.float32),
            "scores": np.empty((heads, group, self.span), np.float32),
            "products": np.empty((tiles, heads, group, dim), np.float32),
        }

    def _run(self, worker: int) -> None:
        ws = self.workspaces[worker]
        scores, score_tiles, products = ws["scores"], ws["score_tiles"], ws["products"]
        heads, group, _ = scores.shape
        for layer, seq, split in self.items[worker :: self.workers]:
            start, queries_t = split * self.span, self.queries_t[layer, seq]
            for i, offset in enumerate(range(start, start + self.span, self.tile)):
                np.matmul(self.kv.load("k", layer, seq, offset, ws["k"]), queries_t, out=score_tiles[i])
            np.copyto(scores.reshape(heads, group, -1, self.tile), score_tiles.transpose(1, 3, 0, 2))
            peak = self.max[layer, seq, split]
            np.max(scores, axis=2, out=peak)
            np.subtract(scores, peak[..., None], out=scores)
            np.exp(scores, out=scores)
            np.sum(scores, axis=2, out=self.total[layer, seq, split])
            for i, offset in enumerate(range(start, start + self.span, self.tile)):
                local = offset - start
                np.matmul(scores[:, :, local : local + self.tile], self.kv.load("v", layer, seq, offset, ws["v"]), out=products[i])
            np.sum(products, axis=0, out=self.partial[layer, seq, split])

    def __call__(self) -> np.ndarray:
        """Run one step; the attention output [layer, sequence, kv_head, group, dim]."""
        list(self.pool.map(self._run, range(self.workers)))  # re-raises a worker's exception
        peak = self.max.max(axis=2, keepdims=True)
        weight = np.exp(self.max - peak)
        numerator = np.einsum("lbshg,lbshgd->lbhgd", weight, self.partial)
        return numerator / np.einsum("lbshg,lbshg->lbhg", weight, self.total)[..., None]

    def close(self) -> None:
        self.pool.shutdown()

    def __enter__(self) -> "NumpyDecode":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def reference_decode(queries: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Decode attention written out in float64, one query head at a time: the check for both kernels."""
    layers, batch, heads, group, dim = queries.shape
    out = np.empty(queries.shape, np.float64)
    for index in np.ndindex(layers, batch, heads, group):
        layer, seq, head, _ = index
        keys, values = k[layer, seq, head].astype(np.float64), v[layer, seq, head].astype(np.float64)
        logits = keys @ queries[index].astype(np.float64) / math.sqrt(dim)
        weights = np.exp(logits - logits.max())
        out[index] = weights @ values / weights.sum()
    return out
