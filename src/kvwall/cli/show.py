"""How the commands print an answer: a quantity as the paper prints it, one line of label, value, evidence class
and basis, strict JSON, and where the smallest deployment that holds a batch lies."""

from __future__ import annotations

import json
from dataclasses import asdict

from kvwall.cli import answers
from kvwall.cli.request import CommandError
from kvwall.formats import thousands, times, tokens
from kvwall.inputs.deployment import Deployment
from kvwall.model.fitting import MAX_DEVICES


def quantity(q: answers.Quantity) -> str:
    """A quantity as the paper prints it: decimal GB, 13.4k tokens, TB/s, ms, 1.25x."""
    v, unit = q.value, q.unit
    if v is None:
        return "cannot load (weights exceed HBM)" if unit == "tokens" else "none"
    if unit == "tokens":
        return "cannot load (weights exceed HBM)" if v < 0 else f"{tokens(v)} ({thousands(v)} tokens)"
    if unit == "bytes/token":
        return f"{thousands(v)} B/token ({v / 1e6:.2f} MB)"
    if unit == "bytes":
        return f"{v / 1e9:,.1f} GB" if v >= 1e8 else f"{thousands(v)} B"
    if unit == "bytes/s":
        return f"{v / 1e12:.2f} TB/s"
    if unit == "FLOP/byte":
        return f"{v:.1f} FLOP/B"
    if unit == "s":
        return f"{v * 1e3:.1f} ms" if v >= 1e-3 or v == 0 else f"{v * 1e6:.1f} us"
    if unit == "ratio":
        return times(2)(v)
    if unit == "tokens/s":
        return f"{v:,.0f} tokens/s"
    return thousands(v) if v >= 1e6 else f"{v:g}"


def line(label: str, q: answers.Quantity) -> str:
    """One answer line: label, value, evidence class and basis, in columns."""
    return f"  {label:<30} {quantity(q):<28} {q.evidence:<10} {q.basis}"


def as_json(obj) -> None:
    """Print ``obj`` as strict JSON; an answer that is not finite is a CommandError."""
    try:
        print(json.dumps(obj, indent=2, default=lambda o: asdict(o), allow_nan=False))  # strict JSON: no Infinity, NaN
    except ValueError:
        raise CommandError("an answer is not a finite number and cannot be written as JSON") from None


def where(smallest: Deployment | None) -> str:
    """Where the smallest deployment that holds the batch lies: one device, a layout on N, or none of up to N."""
    if smallest is None:
        return f"none of up to {MAX_DEVICES}"
    return "one device" if smallest.devices == 1 else f"{smallest.label} on {smallest.devices}"
