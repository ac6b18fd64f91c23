"""Number formats the paper prints with, by name, so each table column and each audited number names its format."""

from __future__ import annotations

import math
from typing import Callable


def _fixed(decimals: int) -> Callable[[float], str]:
    return lambda v: f"{v:.{decimals}f}"


def tokens(v: float) -> str:
    """Context lengths as SoK Table 4 prints them: 957, 3.8k, 427.2k, 1.57M."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"


def kilo_tokens(v: float) -> str:
    """Capacity crossovers as the text prints them: 488k, 159k."""
    return f"{v / 1e3:.0f}k"


def capacity_tokens(v: float) -> str:
    """A capacity crossover: 488k, 1.34M, or "cannot load" when the weights alone exceed the memory (negative)."""
    if v < 0:
        return "cannot load"
    return tokens(v) if v >= 1e6 else kilo_tokens(v)


def context(v: float) -> str:
    """A context length as the paper names it: 128k, 512k, 1M."""
    return f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k"


def mega(decimals: int) -> Callable[[float], str]:
    """Rates in millions: 10.2M tokens/s."""
    return lambda v: f"{v / 1e6:.{decimals}f}M"


def times(decimals: int) -> Callable[[float], str]:
    """Ratios: 1.25x (printed with the multiplication sign)."""
    return lambda v: f"{v:.{decimals}f}×"


def thousands(v: float) -> str:
    """Integers with thousands separators: 327,680."""
    return f"{v:,.0f}"


def two_significant(v: float) -> str:
    """Two significant figures with thousands separators: 2,100."""
    if v == 0:
        return "0"
    digits = 1 - int(math.floor(math.log10(abs(v))))
    return f"{round(v, digits):,.{max(digits, 0)}f}"


def bandwidth_tbps(v: float) -> str:
    """TB/s as SoK Table 3 prints them: 3.35, 8.0, 0.66 (two decimals, trailing zero dropped, one kept)."""
    text = f"{v / 1e12:.2f}"
    return (text[:-1] if text.endswith("0") else text) + " TB/s"


def gigabytes(decimals: int) -> Callable[[float], str]:
    """Bytes shown in decimal GB: 41.9 (KV column) or 42 GB (in text)."""
    return lambda v: f"{v / 1e9:.{decimals}f}"


def megabytes_per_token(v: float) -> str:
    """Bytes per token in decimal MB: 0.33 MB (SoK Table 1)."""
    return f"{v / 1e6:.2f} MB"


def gigabytes_label(v: float) -> str:
    """A capacity as a datasheet prints it: 80 GB, 192 GB."""
    return f"{v / 1e9:g} GB"


def teraflops(v: float) -> str:
    """Dense TFLOP/s as SoK Table 3 prints them: 989.5, 2250."""
    return f"{v / 1e12:g}"


def bits(v: float) -> str:
    """A storage width: 16 bit."""
    return f"{v:g} bit"


def milliseconds(decimals: int) -> Callable[[float], str]:
    """Seconds shown in ms: 22.7."""
    return lambda v: f"{v * 1e3:.{decimals}f}"


def scientific(digits: int) -> Callable[[float], str]:
    """Large counts in scientific notation: 1.342e+09."""
    return lambda v: f"{v:.{digits - 1}e}"


def giga(decimals: int) -> Callable[[float], str]:
    """Counts in billions: 70.55."""
    return lambda v: f"{v / 1e9:.{decimals}f}"


def percent_signed(decimals: int) -> Callable[[float], str]:
    """A relative difference as a signed percentage: +0.8%."""
    return lambda v: f"{v * 100:+.{decimals}f}%"


def points_signed(decimals: int) -> Callable[[float], str]:
    """A difference of two shares in percentage points, signed: -4.6 pp."""
    return lambda v: f"{v * 100:+.{decimals}f} pp"


def percent(decimals: int) -> Callable[[float], str]:
    """A fraction as a percentage: 53%."""
    return lambda v: f"{v * 100:.{decimals}f}%"


def reciprocal(v: float) -> str:
    """A fraction as 1/N: 1/64."""
    return f"1/{1 / v:.0f}"


def text(v) -> str:
    """A value as it is."""
    return str(v)


def full_precision(v) -> str:
    """A number at full precision (shortest round-trip), thousands unseparated: 427246.09375."""
    return repr(float(v)) if isinstance(v, (int, float)) else str(v)


FORMATS: dict[str, Callable] = {
    "text": text,
    "full": full_precision,
    "int": _fixed(0),
    "fixed1": _fixed(1),
    "fixed2": _fixed(2),
    "fixed3": _fixed(3),
    "tokens": tokens,
    "kilo_tokens": kilo_tokens,
    "capacity_tokens": capacity_tokens,
    "context": context,
    "mega1": mega(1),
    "times0": times(0),
    "times1": times(1),
    "times2": times(2),
    "thousands": thousands,
    "two_significant": two_significant,
    "tbps": bandwidth_tbps,
    "gb0": gigabytes(0),
    "gb1": gigabytes(1),
    "mb_per_token": megabytes_per_token,
    "reciprocal": reciprocal,
    "gb_label": gigabytes_label,
    "sci3": scientific(3),
    "giga2": giga(2),
    "percent0": percent(0),
    "percent1": percent(1),
    "percent_signed1": percent_signed(1),
    "points_signed1": points_signed(1),
    "bits": bits,
    "ms0": milliseconds(0),
    "ms1": milliseconds(1),
    "tflops": teraflops,
}


def format_value(value, fmt: str) -> str:
    """Format ``value`` with the named format; a missing value prints as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return FORMATS[fmt](value)
