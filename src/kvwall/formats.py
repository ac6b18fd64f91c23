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


def reciprocal(v: float) -> str:
    """A fraction as 1/N: 1/64."""
    return f"1/{1 / v:.0f}"


def text(v) -> str:
    return str(v)


FORMATS: dict[str, Callable] = {
    "text": text,
    "int": _fixed(0),
    "fixed1": _fixed(1),
    "fixed2": _fixed(2),
    "fixed3": _fixed(3),
    "tokens": tokens,
    "kilo_tokens": kilo_tokens,
    "mega1": mega(1),
    "times1": times(1),
    "times2": times(2),
    "thousands": thousands,
    "two_significant": two_significant,
    "tbps": bandwidth_tbps,
    "gb0": gigabytes(0),
    "gb1": gigabytes(1),
    "mb_per_token": megabytes_per_token,
    "reciprocal": reciprocal,
}


def format_value(value, fmt: str) -> str:
    """Format ``value`` with the named format; a missing value prints as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return FORMATS[fmt](value)
