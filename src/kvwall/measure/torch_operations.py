"""The operations of kvwall.measure.operations as torch calls on one device, with random inputs in their formats.

A GEMM is ``torch.matmul`` in bf16, or ``torch._scaled_mm`` in fp8 (e4m3, per-tensor scales) on a GPU that offers
it (compute capability 8.9 or newer; its smallest M is 16, so a smaller M runs as 16); routed experts are one
``torch.bmm`` per projection over the experts touched; attention is scaled_dot_product_attention in the engines'
decode layout (one query per head, ``enable_gqa``). Each operation holds enough copies of its weights (or its KV)
that one pass over them is past a GPU's last-level cache, and cycles through them, so a call reads its bytes from HBM
as a real step's layers do. torch is imported only here, only when called.
"""

from __future__ import annotations

import math

from kvwall.measure.operations import ATTENTION, EXPERTS, Operation
from kvwall.measure.torch_decode import _torch, synchronize

#: A pass over an operation's copies moves at least this many bytes: past any GPU's last-level cache (H200: 50 MB).
CACHE_FLUSH_BYTES = 256 * 2**20
#: The formats a profile multiplies in, and where each exists.
FORMATS = ("bf16", "fp8")
#: fp8 GEMMs need a GPU of compute capability 8.9 or newer (Ada, Hopper, Blackwell).
FP8_CAPABILITY = (8, 9)
#: torch._scaled_mm's smallest M.
FP8_SMALLEST_M = 16


def format_refusal(weight_format: str, device: str) -> str | None:
    """Why ``device`` cannot multiply in ``weight_format`` (None where it can), before anything is allocated."""
    if weight_format not in FORMATS:
        return f"{weight_format!r} is not a format the profile multiplies in ({', '.join(FORMATS)})"
    if weight_format == "fp8":
        torch = _torch()
        if device != "cuda" or not hasattr(torch, "_scaled_mm"):
            return "fp8 GEMMs (torch._scaled_mm) need a CUDA GPU"
        if torch.cuda.get_device_capability() < FP8_CAPABILITY:
            return f"fp8 GEMMs need compute capability {FP8_CAPABILITY[0]}.{FP8_CAPABILITY[1]} or newer"
    return None


def copies_for(op: Operation) -> int:
    """How many copies of an operation's inputs one pass cycles through: enough to pass the cache, at most its count."""
    return max(1, min(op.count, math.ceil(CACHE_FLUSH_BYTES / op.moved_bytes)))


class TorchOperation:
    """One operation with its inputs on ``device``; calling it runs the next copy and returns its output."""

    def __init__(self, op: Operation, device: str, generator):
        torch = _torch()
        self.op, self.device, self.turn = op, device, 0
        bf16 = torch.bfloat16

        def rand(*shape, dtype=bf16):
            return torch.empty(shape, dtype=bf16, device=device).normal_(0.0, 0.02, generator=generator).to(dtype)

        n = copies_for(op)
        if op.kind == ATTENTION:
            self.inputs = [(rand(op.m, op.n, 1, op.head_dim), rand(op.m, op.k, op.context, op.head_dim),
                            rand(op.m, op.k, op.context, op.head_dim)) for _ in range(n)]
        elif op.kind == EXPERTS:
            self.inputs = [(rand(op.groups, op.m, op.k), rand(op.groups, op.k, op.n)) for _ in range(n)]
        elif op.weight_format == "fp8":
            rows = max(op.m, FP8_SMALLEST_M)
            fp8 = torch.float8_e4m3fn
            # _scaled_mm takes its second operand column-major: the transpose of a row-major [n, k]
            self.inputs = [(rand(rows, op.k, dtype=fp8), rand(op.n, op.k, dtype=fp8).t()) for _ in range(n)]
            self.scale = torch.ones((), dtype=torch.float32, device=device)
        else:
            self.inputs = [(rand(op.m, op.k), rand(op.k, op.n)) for _ in range(n)]

    def __call__(self):
        torch = _torch()
        inputs = self.inputs[self.turn % len(self.inputs)]
        self.turn += 1
        if self.op.kind == ATTENTION:
            return torch.nn.functional.scaled_dot_product_attention(*inputs, enable_gqa=True)
        if self.op.kind == EXPERTS:
            return torch.bmm(*inputs)
        if self.op.weight_format == "fp8":
            return torch._scaled_mm(*inputs, scale_a=self.scale, scale_b=self.scale, out_dtype=torch.bfloat16)
        return torch.matmul(*inputs)

    def close(self) -> None:
        self.inputs = []
