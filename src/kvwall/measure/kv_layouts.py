"""Two layouts of the same KV cache in host memory: contiguous per sequence, and paged through a block table.

Contiguous: K[layer, sequence, kv_head, token, dim], one run of memory per (layer, sequence, head), as an unpaged
cache (Hugging Face's DynamicCache) holds it. Paged: fixed blocks of ``block_size`` tokens in a pool
pool[layer, kv_head, block, slot, dim], a sequence's blocks listed in its row of a block table and scattered over the
pool by a fixed-seed permutation, as PagedAttention allocates them (SoK section 2.4). Each layout loads a tile of
tokens into a small buffer, the analogue of a GPU kernel's tile in shared memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvwall.measure.shape import ARRAY_DTYPES, DecodeShape

#: Elements of the random pattern that fills a benchmark cache (1 MiB of fp32): values do not change the timing.
_FILL_PATTERN = 1 << 18


def carve(buffer: np.ndarray, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Arrays of the given shapes laid one after another over a flat buffer (views: nothing is allocated)."""
    arrays, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        arrays.append(buffer[start : start + size].reshape(shape))
        start += size
    if start > buffer.size:
        raise ValueError(f"a buffer of {buffer.size} elements cannot hold {start}")
    return arrays


def filled_buffer(elements: int, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """A flat buffer of ``elements``, filled once; every sweep point carves its cache from it."""
    return fill_uniform(np.empty(elements, dtype), rng)


def fill_uniform(array: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Fill ``array`` with a repeated pattern of uniform values in [-1, 1) at copy speed."""
    flat = array.reshape(-1)
    pattern = rng.uniform(-1.0, 1.0, min(flat.size, _FILL_PATTERN)).astype(array.dtype)
    whole = flat.size - flat.size % pattern.size
    flat[:whole].reshape(-1, pattern.size)[...] = pattern
    flat[whole:] = pattern[: flat.size - whole]
    return array


@dataclass(frozen=True)
class ContiguousKV:
    """K and V as [layer, sequence, kv_head, token, dim] arrays."""

    k: np.ndarray
    v: np.ndarray

    name = "contiguous"

    @classmethod
    def carve(cls, buffer: np.ndarray, shape: DecodeShape) -> "ContiguousKV":
        """K and V of ``shape`` over the start of ``buffer``."""
        return cls(*carve(buffer, [shape.kv_array_shape] * 2))

    @classmethod
    def allocate(cls, shape: DecodeShape, rng: np.random.Generator) -> "ContiguousKV":
        return cls.carve(filled_buffer(2 * int(np.prod(shape.kv_array_shape)), ARRAY_DTYPES[shape.dtype], rng), shape)

    def load(self, tensor: str, layer: int, sequence: int, start: int, tile: np.ndarray) -> np.ndarray:
        """Copy tokens [start, start + tile length) of every KV head into ``tile`` [kv_head, token, dim]."""
        source = self.k if tensor == "k" else self.v
        np.copyto(tile, source[layer, sequence, :, start : start + tile.shape[1]])
        return tile

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes


@dataclass(frozen=True)
class PagedKV:
    """K and V pools [layer, kv_head, block, slot, dim] and the block table [sequence, logical block] -> pool block."""

    k_pool: np.ndarray
    v_pool: np.ndarray
    block_table: np.ndarray
    block_size: int

    name = "paged"

    @staticmethod
    def scattered_table(batch: int, context: int, block_size: int, rng: np.random.Generator) -> np.ndarray:
        """Each sequence's ``context / block_size`` blocks, placed in the pool by a random permutation."""
        if context % block_size:
            raise ValueError(f"context {context} is not a whole number of {block_size}-token blocks")
        return rng.permutation(batch * (context // block_size)).reshape(batch, context // block_size)

    @classmethod
    def carve(cls, buffer: np.ndarray, shape: DecodeShape, block_size: int, rng: np.random.Generator) -> "PagedKV":
        """Pools for ``shape`` over the start of ``buffer``, with a freshly scattered block table."""
        table = cls.scattered_table(shape.batch, shape.context, block_size, rng)
        pool_shape = (shape.layers, shape.kv_heads, table.size, block_size, shape.head_dim)
        return cls(*carve(buffer, [pool_shape] * 2), table, block_size)

    @classmethod
    def allocate(cls, shape: DecodeShape, rng: np.random.Generator, block_size: int) -> "PagedKV":
        buffer = filled_buffer(2 * int(np.prod(shape.kv_array_shape)), ARRAY_DTYPES[shape.dtype], rng)
        return cls.carve(buffer, shape, block_size, rng)

    @classmethod
    def paginate(cls, contiguous: ContiguousKV, block_table: np.ndarray, block_size: int) -> "PagedKV":
        """The same cache, stored in blocks at the places ``block_table`` names (for checking the paged kernel)."""
        layers, batch, heads, context, dim = contiguous.k.shape
        pools = []
        for source in (contiguous.k, contiguous.v):
            pool = np.empty((layers, heads, block_table.size, block_size, dim), source.dtype)
            blocks = source.reshape(layers, batch, heads, context // block_size, block_size, dim)
            pool[:, :, block_table.reshape(-1)] = blocks.transpose(0, 2, 1, 3, 4, 5).reshape(layers, heads, -1, block_size, dim)
            pools.append(pool)
        return cls(pools[0], pools[1], block_table, block_size)

    def load(self, tensor: str, layer: int, sequence: int, start: int, tile: np.ndarray) -> np.ndarray:
        """Gather the blocks of tokens [start, start + tile length) through the block table into ``tile``."""
        pool = self.k_pool if tensor == "k" else self.v_pool
        first = start // self.block_size
        blocks = self.block_table[sequence, first : first + tile.shape[1] // self.block_size]
        heads, tokens, dim = tile.shape
        np.take(pool[layer], blocks, axis=1, out=tile.reshape(heads, tokens // self.block_size, self.block_size, dim), mode="clip")
        return tile

    @property
    def nbytes(self) -> int:
        return self.k_pool.nbytes + self.v_pool.nbytes
