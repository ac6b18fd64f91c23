"""Units: every conversion the project makes, in one place.

The paper works in decimal units (1 GB = 1e9 B, 1 TB/s = 1e12 B/s, "128k" = 128,000 tokens); GiB appears only
where a source uses it. Quantities are held internally in base units: bytes, bytes/s, FLOP/s, seconds, counts.
"""

from __future__ import annotations

#: Factor from each accepted unit to its base unit, grouped by dimension.
UNITS: dict[str, tuple[str, float]] = {
    "count": ("count", 1.0),
    "ratio": ("ratio", 1.0),
    "percent": ("ratio", 0.01),
    "×": ("ratio", 1.0),
    "tokens": ("tokens", 1.0),
    "tokens/s": ("tokens/s", 1.0),
    "bit": ("bytes", 1 / 8),
    "B": ("bytes", 1.0),
    "KB": ("bytes", 1e3),
    "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12),
    "KiB": ("bytes", 2.0**10),
    "MiB": ("bytes", 2.0**20),
    "GiB": ("bytes", 2.0**30),
    "B/s": ("bytes/s", 1.0),
    "GB/s": ("bytes/s", 1e9),
    "TB/s": ("bytes/s", 1e12),
    "GiB/s": ("bytes/s", 2.0**30),
    "Gb/s": ("bytes/s", 1e9 / 8),  # link rates as network datasheets print them (ICI, Ethernet)
    "FLOP/s": ("FLOP/s", 1.0),
    "GFLOP/s": ("FLOP/s", 1e9),
    "TFLOP/s": ("FLOP/s", 1e12),
    "PFLOP/s": ("FLOP/s", 1e15),
    "s": ("s", 1.0),
    "ms": ("s", 1e-3),
    "us": ("s", 1e-6),
    "ns": ("s", 1e-9),
    "min": ("s", 60.0),
    "ms/GiB": ("s/byte", 1e-3 / 2.0**30),
    "ms/GB": ("s/byte", 1e-3 / 1e9),
    "FLOP/B": ("FLOP/B", 1.0),
}

#: Storage formats named in specs: bits of one value, and the bits of the scale shared by a block of values (0 and 1
#: where none). NVFP4 stores an fp8 scale per 16 values, 4 + 8/16 = 4.5 bits; MXFP4 (as gpt-oss ships) an 8-bit scale
#: per 32 values, 4 + 8/32 = 4.25 bits; symmetric group-wise INT4 (compressed-tensors pack-quantized, as Kimi-K2.5
#: ships its experts) a 16-bit scale per group of 32 or 128 values, 4.5 or 4.125 bits.
STORAGE_FORMATS: dict[str, tuple[float, float, int]] = {
    "fp32": (32.0, 0.0, 1),
    "bf16": (16.0, 0.0, 1),
    "fp16": (16.0, 0.0, 1),
    "fp8": (8.0, 0.0, 1),
    "int8": (8.0, 0.0, 1),
    "int4": (4.0, 0.0, 1),
    "int4-g32": (4.0, 16.0, 32),
    "int4-g128": (4.0, 16.0, 128),
    "fp4": (4.0, 8.0, 16),
    "mxfp4": (4.0, 8.0, 32),
    "int3": (3.0, 0.0, 1),
    "int2": (2.0, 0.0, 1),
}

#: Bytes per element of each storage format, scales included: (value bits + scale bits / block) / 8.
DTYPE_BYTES: dict[str, float] = {
    name: (value_bits + scale_bits / block) / 8.0 for name, (value_bits, scale_bits, block) in STORAGE_FORMATS.items()
}

#: Scale factors code divides by to print in a unit: decimal GB, binary GiB, milliseconds, microseconds, GFLOP/s.
GB = 1e9
GiB = 2.0**30
MS = 1e-3
US = 1e-6
GFLOP_PER_S = UNITS["GFLOP/s"][1]


class UnitError(ValueError):
    """A unit that is not understood, or one of the wrong dimension."""


def to_base(value: float, unit: str, dimension: str | None = None) -> float:
    """Convert ``value`` given in ``unit`` to its base unit, checking the dimension when one is expected."""
    if unit not in UNITS:
        known = ", ".join(sorted(UNITS))
        raise UnitError(f"unit {unit!r} is not understood (known units: {known})")
    base, factor = UNITS[unit]
    if dimension is not None and base != dimension:
        raise UnitError(f"unit {unit!r} measures {base}, expected {dimension}")
    return value * factor


def dimension_of(unit: str) -> str:
    """The base dimension a unit measures."""
    return UNITS[unit][0]


def dtype_bytes(dtype: str) -> float:
    """Bytes per stored element of a storage format (bf16 -> 2.0)."""
    if dtype not in DTYPE_BYTES:
        raise UnitError(f"storage format {dtype!r} is not understood (known: {', '.join(DTYPE_BYTES)})")
    return DTYPE_BYTES[dtype]


def parse_tokens(text: str | int | float, k: float = 1000.0) -> float:
    """Parse a context length: ``131072``, ``128k``, ``1M``, ``1e6``.

    ``k`` is the size of a "k" (the paper's 128k = 128,000 tokens; an assumption in config/assumptions.yaml).
    """
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip().replace(",", "").replace("_", "")
        multiplier = 1.0
        if s[-1:] in ("k", "K"):
            multiplier, s = k, s[:-1]
        elif s[-1:] in ("m", "M"):
            multiplier, s = k * k, s[:-1]
        try:
            value = float(s) * multiplier
        except ValueError:
            raise UnitError(f"context length {text!r} is not a number of tokens (examples: 8192, 128k, 1M)") from None
    if not value > 0:
        raise UnitError(f"context length {text!r} must be positive")
    return value


def in_unit(base_value: float, unit: str) -> float:
    """A base-unit value (bytes, s, bytes/s, FLOP/s, fractions) expressed in ``unit``."""
    return base_value / to_base(1.0, unit)
