"""What the calibrated estimate misses on one engine, model, device, layout and weight format, looked up from the
measurements: derived from reported data.

The calibrated estimate fits a few constants per engine over every model, device and layout
(kvwall.validation.calibration); what an engine does differently on one of them stays in the residuals
r = ln(measured / estimate), and the table of its error sources (kvwall.validation.error_sources) shows that offsets
per engine and model, device and layout take most of it. Here those offsets are nested, coarse to fine (LEVELS): per
engine, mode and model, then per device under it, per layout (GPUs, TP, PP, attention DP, expert ranks) under that,
per weight format last. Each level's offset of a key is a shrunk mean of what the coarser levels left of its points'
residuals, sum / (n + K) over its n points, with the pseudo-count K an assumption (config/validation.yaml
offset_pseudo_count): a key of n points keeps n / (n + K) of its mean, a key no point holds adds nothing. Its 80%
interval is that of a normal mean with a prior of K points: offset +/- z(0.9) s / sqrt(n + K), s the level's pooled
standard deviation within keys. An estimate with offsets is the estimate times the product of its keys' factors
exp(offset) at every level: where the measurements hold nothing of the engine, mode and model, the plain calibrated
estimate. A lookup, not a law: it does not carry over to a model the measurements do not hold, and no bound reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.engine_constants import rounded

#: The quantities offset.
QUANTITIES = ("TPOT", "TTFT")
#: The key columns of a point, coarse to fine, and the level each one's offset belongs to (a level's key: its
#: columns and every coarser level's).
KEY_COLUMNS = ("backend", "mode", "model", "device", "layout", "weight_format")
LEVELS = {"model": 3, "device": 4, "layout": 5, "weight format": 6}
#: z of the 90th percentile of a standard normal: an 80% interval spans +/- Z80 standard deviations.
Z80 = 1.2815515655446004
#: Significant digits a factor keeps, as the constants it multiplies (kvwall.model.engine_constants).
FACTOR_DIGITS = 3
#: What joins a key's columns into one string (no name holds it).
SEPARATOR = "\x1f"


def layout_name(devices, tp, pp, dp, experts) -> str:
    """8 GPUs TP8 EP8: the GPUs and the degrees above 1 of a priced deployment (experts: the ranks the routed
    experts span, 1 for a dense model)."""
    degrees = [f"{name}{int(degree)}" for name, degree in (("TP", tp), ("PP", pp), ("DP", dp), ("EP", experts))
               if int(degree) > 1]
    return " ".join([f"{int(devices)} GPU{'s' if int(devices) > 1 else ''}", *degrees])


def point_keys(points: pd.DataFrame) -> pd.DataFrame:
    """KEY_COLUMNS of understood points (kvwall.validation.points' columns), their layout as layout_name."""
    layouts = points[["devices", "tp", "pp", "dp", "expert_ranks"]].astype(int)
    names = {row: layout_name(*row) for row in set(layouts.itertuples(index=False, name=None))}
    keyed = points[["backend", "mode", "model", "device", "weight_format"]].astype(str)
    return keyed.assign(layout=[names[row] for row in layouts.itertuples(index=False, name=None)])[list(KEY_COLUMNS)]


def _joined(keys: pd.DataFrame, width: int) -> pd.Series:
    """Each row's first ``width`` key columns as one string."""
    first, *rest = (keys[c].astype(str) for c in KEY_COLUMNS[:width])
    return first.str.cat(rest, sep=SEPARATOR) if rest else first


@dataclass(frozen=True)
class Offsets:
    """Per quantity and level width (LEVELS), each key's log offset (its first ``width`` KEY_COLUMNS, joined)."""

    log_offsets: Mapping[str, Mapping[int, Mapping[str, float]]]

    def levels_of(self, quantity: str, key: tuple[str, ...]) -> dict[str, float]:
        """The factor of each level that holds ``key`` (KEY_COLUMNS' values, a shorter tuple where the finer ones are
        not known), coarse to fine."""
        by_width = self.log_offsets.get(quantity, {})
        return {level: math.exp(by_width[width][SEPARATOR.join(key[:width])]) for level, width in LEVELS.items()
                if width <= len(key) and SEPARATOR.join(key[:width]) in by_width.get(width, {})}

    def holds(self, quantity: str, key: tuple[str, ...]) -> bool:
        """Whether the coarsest level holds ``key`` (its engine, mode and model): where it does not, no level does."""
        width = min(LEVELS.values())
        return SEPARATOR.join(key[:width]) in self.log_offsets.get(quantity, {}).get(width, {})

    def factor(self, quantity: str, key: tuple[str, ...]) -> float:
        """The product of ``key``'s factors at every level that holds it (1 where none does)."""
        by_width = self.log_offsets.get(quantity, {})
        return math.exp(math.fsum(by_width.get(width, {}).get(SEPARATOR.join(key[:width]), 0.0)
                                  for width in LEVELS.values() if width <= len(key)))

    def log_offsets_of(self, quantity: str, keys: pd.DataFrame) -> np.ndarray:
        """The summed log offset of every row of ``keys`` (KEY_COLUMNS)."""
        by_width = self.log_offsets.get(quantity, {})
        total = np.zeros(len(keys))
        for width in LEVELS.values():
            total += _joined(keys, width).map(by_width.get(width, {})).fillna(0.0).to_numpy(dtype=float)
        return total


def _levels(keys: pd.DataFrame, residual: pd.Series, pseudo_count: float):
    """Per level of LEVELS: its name, width, the first row of each of its keys among the points with a residual, and
    each key's points, log offset and half of its 80% interval."""
    known = np.isfinite(residual.to_numpy(dtype=float))
    left = residual.to_numpy(dtype=float)[known]
    chosen = keys[known]
    for level, width in LEVELS.items():
        codes, first, inverse = np.unique(_joined(chosen, width).to_numpy(dtype=str), return_index=True,
                                          return_inverse=True)
        counts = np.bincount(inverse, minlength=codes.size).astype(float)
        sums = np.bincount(inverse, weights=left, minlength=codes.size)
        within = float(np.sum((left - (sums / counts)[inverse]) ** 2))
        spread = math.sqrt(within / (left.size - codes.size)) if left.size > codes.size else 0.0
        offsets = sums / (counts + pseudo_count)
        left = left - offsets[inverse]
        yield level, width, codes, chosen.iloc[first], counts, offsets, Z80 * spread / np.sqrt(counts + pseudo_count)


def _factor(log_offset: np.ndarray) -> np.ndarray:
    """exp(``log_offset``) to FACTOR_DIGITS significant digits."""
    return np.array([rounded(math.exp(float(value)), FACTOR_DIGITS) for value in np.atleast_1d(log_offset)])


def fit_offsets(keys: pd.DataFrame, residuals: Mapping[str, pd.Series], pseudo_count: float) -> pd.DataFrame:
    """One row per quantity, level and key of the points that have a residual: its points, factor exp(offset) and
    80% interval, rounded to FACTOR_DIGITS (``keys``: KEY_COLUMNS of the points; ``residuals``: per quantity,
    ln(measured / estimate) of the points, NaN where not predicted)."""
    parts = []
    for quantity, residual in residuals.items():
        for level, width, _, named, counts, offsets, half in _levels(keys, residual, pseudo_count):
            finer = {c: None for c in KEY_COLUMNS[width:]}
            parts.append(named.reset_index(drop=True).assign(
                quantity=quantity, level=level, **finer, points=counts.astype(int), factor=_factor(offsets),
                factor_p10=_factor(offsets - half), factor_p90=_factor(offsets + half)))
    columns = ["backend", "quantity", "level", *KEY_COLUMNS[1:], "points", "factor", "factor_p10", "factor_p90"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def fitted_offsets(keys: pd.DataFrame, residuals: Mapping[str, pd.Series], pseudo_count: float) -> Offsets:
    """The lookup fit_offsets' table gives, its factors rounded as the table prints them, built without the table."""
    found = {quantity: {width: dict(zip(codes, np.log(_factor(offsets))))
                        for _, width, codes, _, _, offsets, _ in _levels(keys, residual, pseudo_count)}
             for quantity, residual in residuals.items()}
    return _frozen(found)


def _frozen(found: dict) -> Offsets:
    return Offsets(MappingProxyType({q: MappingProxyType({w: MappingProxyType(k) for w, k in by.items()})
                                     for q, by in found.items()}))


def offsets_from(table: pd.DataFrame) -> Offsets:
    """The lookup of a table of fit_offsets (as built, or read back from its CSV): the log of each rounded factor."""
    found: dict[str, dict[int, dict[str, float]]] = {}
    for record in table.to_dict("records"):
        width = LEVELS[record["level"]]
        key = SEPARATOR.join(str(record[c]) for c in KEY_COLUMNS[:width])
        found.setdefault(record["quantity"], {}).setdefault(width, {})[key] = math.log(float(record["factor"]))
    return _frozen(found)
