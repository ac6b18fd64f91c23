"""The decode-attention problem one benchmark step solves, and the KV bytes it streams (SoK Eq. 1 over a layer subset)."""

from __future__ import annotations

from dataclasses import dataclass

from kvwall.model.footprint import kv_bytes
from kvwall.inputs.specs import FullAttention, Model
from kvwall.units import dtype_bytes

#: numpy/torch element type of each storage format the benchmark can hold KV in.
ARRAY_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class DecodeShape:
    """One decode step of attention: ``layers`` layers, ``batch`` sequences of ``context`` cached tokens each.

    Grouped-query attention: ``group`` query heads share each of the ``kv_heads`` KV heads (query head
    h * group + g reads KV head h, as Hugging Face's repeat_kv orders them).
    """

    layers: int
    batch: int
    context: int
    kv_heads: int
    group: int
    head_dim: int
    dtype: str  # storage format: fp32, fp16, bf16

    @classmethod
    def of(cls, model: Model, layers: int, batch: int, context: int, dtype: str) -> "DecodeShape":
        """The shape of ``layers`` of ``model``'s layers; only full (MHA/GQA) attention has per-head K and V."""
        if not isinstance(model.attention, FullAttention) or model.attention.has_window:
            raise ValueError(f"model {model.id!r}: the benchmark needs full (MHA/GQA) attention, not {model.attention.label}")
        if not 1 <= layers <= model.n_layers:
            raise ValueError(f"model {model.id!r} has {model.n_layers} layers; cannot measure {layers}")
        return cls(layers, batch, context, model.n_kv_heads, model.n_q_heads // model.n_kv_heads, model.head_dim, dtype)

    @property
    def kv_bytes(self) -> int:
        """Bytes of K and V one step reads: 2 * layers * batch * context * kv_heads * head_dim * bytes per element."""
        return int(2 * self.layers * self.batch * self.context * self.kv_heads * self.head_dim * dtype_bytes(self.dtype))

    @property
    def kv_array_shape(self) -> tuple[int, int, int, int, int]:
        """Contiguous K (or V): layer, sequence, KV head, token, dimension."""
        return (self.layers, self.batch, self.kv_heads, self.context, self.head_dim)

    @property
    def query_shape(self) -> tuple[int, int, int, int, int]:
        """The step's queries: layer, sequence, KV head, query head within the group, dimension."""
        return (self.layers, self.batch, self.kv_heads, self.group, self.head_dim)


def measured_kv_bytes(model: Model, shape: DecodeShape) -> float:
    """KV bytes of the measured layers by SoK Eq. 1 (kvwall.model.footprint), scaled from all layers to the subset.

    Equal to ``shape.kv_bytes``: the check that the arrays the kernels read are the bytes the model says.
    """
    return float(kv_bytes(model, shape.context, dtype_bytes(shape.dtype), shape.batch)) * shape.layers / model.n_layers
