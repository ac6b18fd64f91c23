"""What the calibrated estimate misses on one engine, model, device, layout and weight format, looked up from the
measurements: derived from reported data.

The calibrated estimate fits a few constants per engine over every model, device and layout
(kvwall.validation.calibration); what an engine does differently on one of them stays in the residuals
r = ln(measured / estimate), and the table of its error sources (kvwall.validation.error_sources) shows that offsets
per engine and model, device and layout take most of it. The rest grows with the batch: the measured TPOT rises by
about the same time per sequence at every TP, where the fitted costs shrink with TP. And it follows the lengths: the
stalls other requests' prefills put into a decode step are priced with the engine's constants, but where an engine
schedules one model's prefills its own way (chunk sizes, a chunk beside the decode batch or in its place) the
measured TPOT follows the prefill's part of the step more or less steeply than the estimate, so a group at new
lengths is off by what its prefill stretches. Here all three are nested, coarse to fine (LEVELS): per engine, mode
and model, then per device under it, per layout (GPUs, TP, PP, attention DP, expert ranks) under that, per weight
format last. At each level, of what the coarser levels left of its points' residuals, a key's offset is a shrunk
mean, sum / (n + K) over its n points; then its slope a shrunk slope against x = log2 of the sequences in flight per
attention-DP rank about the key's mean x, sum(dx r) / (sum(dx^2) + K); then, of what that leaves, its prefill slope
the same against z = log2 of the estimate's prefill stretch, its decode step over the step without its prefill
cost (kvwall.model.decode_costs.prefill_stretch; 1 where no prefill stalls it, a disagg decode step): K points one
doubling from the mean with no slope, the pseudo-count K an assumption (config/validation.yaml
offset_pseudo_count). A key of n points keeps n / (n + K) of its mean; a key no point holds adds nothing. The 80%
intervals are those of a normal mean and slopes with that prior: +/- z(0.9) s / sqrt(n + K), s / sqrt(sum(dx^2) +
K) and s / sqrt(sum(dz^2) + K), s the level's pooled standard deviation within keys. An estimate's log factor at x
and z is the sum over the levels that hold its key of offset + slope (x - mean x) + prefill slope (z - mean z), x
and z kept within the key's measured ranges (a lookup does not extrapolate): where the measurements hold nothing of
the engine, mode and model, the plain calibrated estimate. A lookup, not a law: it does not carry over to a model
the measurements do not hold, and no bound reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.engine_constants import rounded

#: The key columns of a point, coarse to fine, and the width of each level's key (its columns and every coarser
#: level's).
KEY_COLUMNS = ("backend", "mode", "model", "device", "layout", "weight_format")
LEVELS = {"model": 3, "device": 4, "layout": 5, "weight format": 6}
#: z of the 90th percentile of a standard normal: an 80% interval spans +/- Z80 standard deviations.
Z80 = 1.2815515655446004
#: Significant digits a factor, a slope's factor per doubling and a key's mean sequences keep, as the constants the
#: estimate multiplies (kvwall.model.engine_constants).
DIGITS = 3
#: The name of what an estimate's offsets add to its named costs (negative where they take some away).
OFFSET_COST = "offsets"
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


def deployment_key(engine: str, mode: str, model, device, d) -> tuple[str, ...]:
    """The key (KEY_COLUMNS) of a deployment ``d`` (kvwall.inputs.deployment.Deployment) of ``model`` on ``device``
    as the measured points name theirs: without its weight format where the parts' formats differ, which no measured
    point records."""
    experts = d.expert_parallel if model.moe is not None else 1
    key = (engine, mode, model.id, device.id,
           layout_name(d.devices, d.tensor_parallel, d.pipeline_parallel, d.data_parallel, experts))
    return (*key, d.weight_format) if isinstance(d.weight_format, str) else key


def sequences_per_rank(points: pd.DataFrame) -> pd.Series:
    """The sequences in flight per attention-DP rank of understood points: what a slope is fitted against."""
    return points["running_batch"].astype(float) / points["dp"].astype(float)


def _joined(keys: pd.DataFrame, width: int) -> pd.Series:
    """Each row's first ``width`` key columns as one string."""
    first, *rest = (keys[c].astype(str) for c in KEY_COLUMNS[:width])
    return first.str.cat(rest, sep=SEPARATOR) if rest else first


@dataclass(frozen=True)
class Term:
    """One key's part of the log factor: its offset; its slope per doubling of the sequences per rank, the key's mean
    log2 sequences and the range its points span; its prefill slope per doubling of the prefill stretch, the key's
    mean log2 stretch and the range its points span."""

    offset: float
    slope: float
    centre: float
    low: float
    high: float
    prefill_slope: float
    prefill_centre: float
    prefill_low: float
    prefill_high: float

    def at(self, log2_sequences, log2_stretch):
        """This key's log factor at ``log2_sequences`` and ``log2_stretch`` (numbers or arrays), each held within the
        key's range."""
        return (self.offset + self.slope * (np.clip(log2_sequences, self.low, self.high) - self.centre)
                + self.prefill_slope * (np.clip(log2_stretch, self.prefill_low, self.prefill_high) - self.prefill_centre))


@dataclass(frozen=True)
class Offsets:
    """Per quantity and level width (LEVELS), each key's Term (its first ``width`` KEY_COLUMNS, joined)."""

    terms: Mapping[str, Mapping[int, Mapping[str, Term]]]

    def _terms(self, quantity: str, key: tuple[str, ...]) -> dict[str, Term]:
        by_width = self.terms.get(quantity, {})
        return {level: by_width[width][joined] for level, width in LEVELS.items()
                if width <= len(key) and (joined := SEPARATOR.join(key[:width])) in by_width.get(width, {})}

    def holds(self, quantity: str, key: tuple[str, ...]) -> bool:
        """Whether the coarsest level holds ``key`` (its engine, mode and model): where it does not, no level does."""
        return bool(self._terms(quantity, key[:min(LEVELS.values())]))

    def levels_of(self, quantity: str, key: tuple[str, ...], sequences: float, stretch: float) -> dict[str, float]:
        """The factor of each level that holds ``key`` (KEY_COLUMNS' values, a shorter tuple where the finer ones are
        not known) at ``sequences`` per rank and a prefill ``stretch``, coarse to fine."""
        return {level: math.exp(float(term.at(math.log2(sequences), math.log2(stretch))))
                for level, term in self._terms(quantity, key).items()}

    def factor(self, quantity: str, key: tuple[str, ...], sequences, stretch) -> np.ndarray | float:
        """The product of ``key``'s factors at every level that holds it (1 where none does) at ``sequences`` per
        rank and a prefill ``stretch`` (numbers or arrays of one shape)."""
        x, z = np.log2(np.asarray(sequences, dtype=float)), np.log2(np.asarray(stretch, dtype=float))
        total = sum((term.at(x, z) for term in self._terms(quantity, key).values()), np.zeros(np.broadcast(x, z).shape))
        return float(np.exp(total)) if np.ndim(total) == 0 else np.exp(total)

    def finest_levels(self, quantity: str, keys: pd.DataFrame) -> pd.Series:
        """The finest level (LEVELS' name) that holds each row of ``keys`` (KEY_COLUMNS), None where none does."""
        by_width = self.terms.get(quantity, {})
        found = pd.Series(None, index=keys.index, dtype=object)
        for level, width in LEVELS.items():
            found[_joined(keys, width).isin(by_width.get(width, {}).keys()).to_numpy()] = level
        return found

    def log_factors_of(self, quantity: str, keys: pd.DataFrame, sequences: pd.Series, stretch: pd.Series) -> np.ndarray:
        """The log factor of every row of ``keys`` (KEY_COLUMNS) at its ``sequences`` per rank and prefill
        ``stretch``."""
        by_width = self.terms.get(quantity, {})
        x, z = np.log2(sequences.to_numpy(dtype=float)), np.log2(stretch.to_numpy(dtype=float))
        total = np.zeros(len(keys))
        for width in LEVELS.values():
            found = _joined(keys, width).map(by_width.get(width, {}))
            held = found.notna().to_numpy()
            terms = found[held]
            arrays = {name: np.array([getattr(t, name) for t in terms], dtype=float) for name in TERM_FIELDS}
            total[held] += (arrays["offset"]
                            + arrays["slope"] * (np.clip(x[held], arrays["low"], arrays["high"]) - arrays["centre"])
                            + arrays["prefill_slope"] * (np.clip(z[held], arrays["prefill_low"], arrays["prefill_high"])
                                                         - arrays["prefill_centre"]))
        return total


#: The fields of a Term.
TERM_FIELDS = ("offset", "slope", "centre", "low", "high", "prefill_slope", "prefill_centre", "prefill_low",
               "prefill_high")


@dataclass(frozen=True)
class _Covariate:
    """A slope's covariate per key of a level: its mean, least and most over the key's points, the shrunk slope and
    the half of its 80% interval."""

    centres: np.ndarray
    low: np.ndarray
    high: np.ndarray
    slopes: np.ndarray
    half: np.ndarray


@dataclass(frozen=True)
class _Level:
    """One level fitted: its name and key width, its keys, the first point of each, and per key its points, offset
    and the half of its 80% interval, and its slopes against log2 sequences and log2 prefill stretch."""

    name: str
    width: int
    codes: np.ndarray
    named: pd.DataFrame
    counts: np.ndarray
    offsets: np.ndarray
    offset_half: np.ndarray
    sequences: _Covariate
    stretch: _Covariate

    def rounded(self) -> dict[str, np.ndarray]:
        """The key's values as the table prints them: factors exp(offset) and exp(slope), sequences and stretches 2^x."""
        exp = {"factor": self.offsets, "factor_p10": self.offsets - self.offset_half,
               "factor_p90": self.offsets + self.offset_half}
        exp2 = {}
        for prefix, centre, covariate in (("", "sequences", self.sequences), ("prefill_", "prefill_stretch", self.stretch)):
            exp.update({f"{prefix}slope": covariate.slopes, f"{prefix}slope_p10": covariate.slopes - covariate.half,
                        f"{prefix}slope_p90": covariate.slopes + covariate.half})
            exp2.update({centre: covariate.centres, f"{centre}_low": covariate.low, f"{centre}_high": covariate.high})
        with np.errstate(over="ignore"):  # an interval with next to no prior and no spread of sequences: unbounded
            return {**{name: _rounded(np.exp(v)) for name, v in exp.items()},
                    **{name: _rounded(np.exp2(v)) for name, v in exp2.items()}}


def _spans(inverse: np.ndarray, values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per key (``inverse``: each point's key), the mean, least and most of ``values``."""
    low, high = np.full(counts.size, np.inf), np.full(counts.size, -np.inf)
    np.minimum.at(low, inverse, values)
    np.maximum.at(high, inverse, values)
    return np.bincount(inverse, weights=values, minlength=counts.size) / counts, low, high


def _levels(keys: pd.DataFrame, residual: pd.Series, sequences: pd.Series, stretch: pd.Series, pseudo_count: float):
    """Each level of LEVELS fitted, coarse to fine, on what the coarser ones left of the finite residuals."""
    known = np.isfinite(residual.to_numpy(dtype=float))
    left = residual.to_numpy(dtype=float)[known]
    covariates = (np.log2(sequences.to_numpy(dtype=float)[known]), np.log2(stretch.to_numpy(dtype=float)[known]))
    chosen = keys[known]
    for level, width in LEVELS.items():
        codes, first, inverse = np.unique(_joined(chosen, width).to_numpy(dtype=str), return_index=True,
                                          return_inverse=True)
        counts = np.bincount(inverse, minlength=codes.size).astype(float)
        spans = [_spans(inverse, values, counts) for values in covariates]
        deviations = [values - centres[inverse] for values, (centres, _, _) in zip(covariates, spans)]
        squares = [np.bincount(inverse, weights=d * d, minlength=codes.size) for d in deviations]
        # the pooled spread within keys once each key's mean and slopes are taken out (least squares, unshrunk)
        within = left - (np.bincount(inverse, weights=left, minlength=codes.size) / counts)[inverse]
        for d, square in zip(deviations, squares):
            fitted = np.bincount(inverse, weights=d * within, minlength=codes.size)
            within = within - np.divide(fitted, square, out=np.zeros(codes.size), where=square > 0)[inverse] * d
        dof = left.size - codes.size - sum(int(np.count_nonzero(square > 0)) for square in squares)
        spread = math.sqrt(float(np.sum(within * within)) / dof) if dof > 0 else 0.0
        offsets = np.bincount(inverse, weights=left, minlength=codes.size) / (counts + pseudo_count)
        left = left - offsets[inverse]
        fitted = []
        for d, square, (centres, low, high) in zip(deviations, squares, spans):
            slopes = np.bincount(inverse, weights=d * left, minlength=codes.size) / (square + pseudo_count)
            left = left - slopes[inverse] * d
            fitted.append(_Covariate(centres, low, high, slopes, Z80 * spread / np.sqrt(square + pseudo_count)))
        yield _Level(level, width, codes, chosen.iloc[first], counts, offsets,
                     Z80 * spread / np.sqrt(counts + pseudo_count), *fitted)


def _rounded(values: np.ndarray) -> np.ndarray:
    """``values`` to DIGITS significant digits."""
    return np.array([rounded(float(value), DIGITS) for value in np.atleast_1d(values)])


#: The values of a row of fit_offsets' table, after its key.
TABLE_VALUES = ("points", "factor", "factor_p10", "factor_p90", "slope", "slope_p10", "slope_p90", "sequences",
                "sequences_low", "sequences_high", "prefill_slope", "prefill_slope_p10", "prefill_slope_p90",
                "prefill_stretch", "prefill_stretch_low", "prefill_stretch_high")


def fit_offsets(keys: pd.DataFrame, residuals: Mapping[str, pd.Series], sequences: pd.Series, stretch: pd.Series,
                pseudo_count: float) -> pd.DataFrame:
    """One row per quantity, level and key of the points that have a finite residual: its points, factor exp(offset)
    with its 80% interval, slope factor exp(slope) per doubling of the sequences per rank with its interval, the
    sequences per rank at its mean and at its points' least and most, and the same of its prefill slope and prefill
    stretch, rounded to DIGITS (``keys``: KEY_COLUMNS of the points; ``residuals``: per quantity, ln(measured /
    estimate); ``sequences``: per rank, and ``stretch``: the estimate's prefill stretch, of each point)."""
    parts = []
    for quantity, residual in residuals.items():
        for level in _levels(keys, residual, sequences, stretch, pseudo_count):
            parts.append(level.named.reset_index(drop=True).assign(
                quantity=quantity, level=level.name, **{c: None for c in KEY_COLUMNS[level.width:]},
                points=level.counts.astype(int), **level.rounded()))
    columns = ["backend", "quantity", "level", *KEY_COLUMNS[1:], *TABLE_VALUES]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def _term(factor: float, slope: float, sequences: float, low: float, high: float, prefill_slope: float,
          stretch: float, stretch_low: float, stretch_high: float) -> Term:
    """A key's Term from its rounded values as the table prints them."""
    return Term(math.log(factor), math.log(slope), math.log2(sequences), math.log2(low), math.log2(high),
                math.log(prefill_slope), math.log2(stretch), math.log2(stretch_low), math.log2(stretch_high))


#: The table's values a Term is read back from, in _term's order.
TERM_VALUES = ("factor", "slope", "sequences", "sequences_low", "sequences_high", "prefill_slope", "prefill_stretch",
               "prefill_stretch_low", "prefill_stretch_high")


def fitted_offsets(keys: pd.DataFrame, residuals: Mapping[str, pd.Series], sequences: pd.Series, stretch: pd.Series,
                   pseudo_count: float) -> Offsets:
    """The lookup fit_offsets' table gives, its values rounded as the table prints them, built without the table."""
    found = {}
    for quantity, residual in residuals.items():
        for level in _levels(keys, residual, sequences, stretch, pseudo_count):
            values = level.rounded()
            found.setdefault(quantity, {})[level.width] = {
                code: _term(*(values[name][i] for name in TERM_VALUES)) for i, code in enumerate(level.codes)}
    return _frozen(found)


def _frozen(found: dict) -> Offsets:
    return Offsets(MappingProxyType({q: MappingProxyType({w: MappingProxyType(k) for w, k in by.items()})
                                     for q, by in found.items()}))


def offsets_from(table: pd.DataFrame) -> Offsets:
    """The lookup of a table of fit_offsets (as built, or read back from its CSV)."""
    found: dict[str, dict[int, dict[str, Term]]] = {}
    for record in table.to_dict("records"):
        width = LEVELS[record["level"]]
        key = SEPARATOR.join(str(record[c]) for c in KEY_COLUMNS[:width])
        found.setdefault(record["quantity"], {}).setdefault(width, {})[key] = _term(
            *(float(record[name]) for name in TERM_VALUES))
    return _frozen(found)
