"""An engine's constants (kvwall.model.engine_constants) fitted to its measured points: derived from reported data.

Least squares (scipy.optimize.least_squares, trust-region reflective) on the relative errors estimate / measured - 1
of every point's TPOT (kvwall.model.decode_costs), within bounds that keep each constant physical: a fixed step cost
of 0 to 50 ms, realized fractions of the datasheet bandwidth and peak of 1% to 1, a latency per collective message of
0 to 50 us, a cost per layer and one per sequence of each step of 0 to 1 ms, an extra time per weight byte of fp8
and of fp4 GEMMs of 0 to 4 times bf16's, and the columns per GPU at which a GEMM's weights stream at half their rate,
0 to 4,000. The fitted constants are rounded to
SIGNIFICANT_DIGITS before any use. The fixed cost before a first token (0 to 5 s) and the share of the prefill wave
a request waits for (0 to 1) are then fitted on the agg points' TTFT (kvwall.model.first_token_estimate at the
rounded rates), on ln(estimate / measured): a TTFT spans a tenth of a second to minutes and is off by factors, where
a relative error bounded at -1 below and not above would pull the estimate under the measurements. A value within
AT_BOUND of its range from a bound is that bound. The 95% intervals (1.96 standard errors from the Jacobian at the optimum, J^T J scaled by the residual
variance) are rounded to two digits. Every job runs OpenBLAS on one set of kernels and one thread (kvwall.numerics),
so the fit's bits do not follow the CPU either.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import CostInputs, cost_inputs, priced_costs, step_of
from kvwall.model.engine_constants import EngineConstants, rounded
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.units import MS, US

#: Lower and upper bounds of EngineConstants.STEP_NAMES (fixed step cost s, HBM fraction, FLOP fraction, latency s,
#: cost per layer s, cost per sequence s, fp8 and fp4 weights' extra time per byte, columns of a GEMM at half its
#: rate), and the starting point.
LOWER = (0.0, 0.01, 0.01, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
UPPER = (50 * MS, 1.0, 1.0, 50 * US, 1 * MS, 1 * MS, 4.0, 4.0, 4000.0)
START = (1 * MS, 0.7, 0.4, 5 * US, 10 * US, 10 * US, 0.3, 0.3, 64.0)
_SCALE = np.array([MS, 1.0, 1.0, US, US, US, 1.0, 1.0, 100.0])
#: Bounds and start of EngineConstants.FIRST_TOKEN_NAMES: the fixed cost before a first token (s) and the share of
#: the prefill wave a request waits for.
FIRST_TOKEN_BOUNDS = {"first_token_fixed": (0.0, 5.0), "wave_share": (0.0, 1.0)}
FIRST_TOKEN_START = {"first_token_fixed": 0.1, "wave_share": 0.5}
#: Fewest points an engine's fit needs (nine constants, a few points each).
MIN_POINTS = 20


class CalibrationError(ValueError):
    """A calibration group too small to fit."""


@dataclass(frozen=True)
class Calibration:
    """The rounded constants, their rounded 95% half-intervals (in EngineConstants.NAMES' order), and the points
    fitted on: every point for a decode step's, the agg points for a first token's."""

    constants: EngineConstants
    half_interval: tuple[float, ...]
    points: int
    first_token_points: int


#: A fitted value closer to a bound than this share of its range is that bound: the solver's last steps there are
#: noise (a constant of 4e-13 s where the bound is 0), which rounding alone would keep.
AT_BOUND = 1e-6


def settled(value: float, low: float, high: float) -> float:
    """``value`` snapped to ``low`` or ``high`` within AT_BOUND of its range, then rounded (SIGNIFICANT_DIGITS)."""
    reach = AT_BOUND * (high - low)
    return rounded(low if value - low < reach else high if high - value < reach else value)


def step_constants(values) -> EngineConstants:
    """The constants whose decode-step values are ``values``, in EngineConstants.STEP_NAMES' order (the others at
    their defaults)."""
    return EngineConstants(**dict(zip(EngineConstants.STEP_NAMES, values)))


@dataclass(frozen=True)
class ExtraCosts:
    """Costs a fit adds to the decode step's, one constant each: their ``names``, each constant's (lower bound, upper
    bound, start, scale), and ``price``: their seconds per step per GPU from the step's named costs
    (kvwall.model.decode_costs) and their constants by name."""

    names: tuple[str, ...]
    bounds: tuple[tuple[float, float, float, float], ...]
    price: Callable[[Mapping[str, np.ndarray], Mapping[str, float]], np.ndarray]


def fit_step(inputs: CostInputs, tpot: np.ndarray, tokens: float, held: tuple[str, ...] = (),
             extra: ExtraCosts | None = None) -> tuple[EngineConstants, dict[str, float], object]:
    """The decode step's constants but ``held`` (names of EngineConstants.STEP_NAMES, held at 0) and ``extra``'s,
    fitted by least squares on the relative TPOT errors of the points ``inputs`` holds (``tpot`` measured, s), each
    settled; with the solver's result, whose Jacobian gives their intervals."""
    free = [i for i, name in enumerate(EngineConstants.STEP_NAMES) if name not in held]
    names, added = (extra.names, extra.bounds) if extra is not None else ((), ())
    lower = [*(LOWER[i] for i in free), *(b[0] for b in added)]
    upper = [*(UPPER[i] for i in free), *(b[1] for b in added)]
    scale = np.array([*(_SCALE[i] for i in free), *(b[3] for b in added)])
    start = np.array([*(START[i] for i in free), *(b[2] for b in added)]) / scale

    def split(values) -> tuple[EngineConstants, dict[str, float]]:
        step = np.zeros(len(EngineConstants.STEP_NAMES))
        step[free] = values[:len(free)]
        return step_constants(step), dict(zip(names, values[len(free):]))

    def residuals(x: np.ndarray) -> np.ndarray:
        constants, values = split(x * scale)
        costs = priced_costs(inputs, constants)
        seconds = step_of(costs) if extra is None else step_of(costs) + extra.price(costs, values)
        return seconds / tokens / tpot - 1.0

    from scipy.optimize import least_squares  # here: the jobs that only price with fitted constants skip its import

    fit = least_squares(residuals, start, bounds=(np.array(lower) / scale, np.array(upper) / scale), method="trf")
    values = [settled(float(v), low, high) for v, low, high in zip(fit.x * scale, lower, upper)]
    step = dict.fromkeys(EngineConstants.STEP_NAMES, 0.0)
    step.update(zip((EngineConstants.STEP_NAMES[i] for i in free), values))
    return EngineConstants(**step), dict(zip(names, values[len(free):])), fit


def _interval(fit) -> np.ndarray:
    """1.96 standard errors of each fitted value: the residual variance times (J^T J)^-1 at the optimum."""
    variance = float(fit.fun @ fit.fun) / max(fit.fun.size - fit.x.size, 1)
    return 1.96 * np.sqrt(np.maximum(np.diag(np.linalg.pinv(fit.jac.T @ fit.jac) * variance), 0.0))


def first_token_terms(points: pd.DataFrame, constants: EngineConstants, tokens: float) -> tuple[np.ndarray, np.ndarray]:
    """Of each point's TTFT at ``constants`` (kvwall.model.first_token_estimate): what it is with no fixed cost and no
    share of the wave, and what a whole wave adds (s); the estimate is linear in both constants, so a fit prices the
    points once."""
    alone = first_token_estimate(points, replace(constants, first_token_fixed=0.0, wave_share=0.0), tokens)
    return alone, first_token_estimate(points, replace(constants, first_token_fixed=0.0, wave_share=1.0), tokens) - alone


def fit_first_token(alone: np.ndarray, wave: np.ndarray, ttft: np.ndarray,
                    share: float | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """The constants of EngineConstants.FIRST_TOKEN_NAMES fitted on ln(TTFT / ``ttft``), TTFT = t0 + ``alone`` + w
    ``wave`` against the measured ``ttft`` (s), w held at ``share`` where given: each settled, and its rounded
    half-interval (0 for a held one)."""
    names = [name for name in EngineConstants.FIRST_TOKEN_NAMES if share is None or name != "wave_share"]
    low, high = zip(*(FIRST_TOKEN_BOUNDS[name] for name in names))

    def residuals(x):
        w = x[1] if share is None else share
        return np.log((x[0] + alone + w * wave) / ttft)

    from scipy.optimize import least_squares  # here: the jobs that only price with fitted constants skip its import

    fit = least_squares(residuals, [FIRST_TOKEN_START[name] for name in names], bounds=(low, high), method="trf")
    values = {name: settled(float(v), *FIRST_TOKEN_BOUNDS[name]) for name, v in zip(names, fit.x)}
    halves = {name: rounded(float(h), 2) for name, h in zip(names, _interval(fit))}
    if share is not None:
        values["wave_share"], halves["wave_share"] = share, 0.0
    return values, halves


def _first_token(points: pd.DataFrame, ttft: np.ndarray, constants: EngineConstants,
                 tokens: float) -> tuple[dict[str, float], dict[str, float], int]:
    """The constants before a first token fitted on the agg points (fit_first_token), their half-intervals and the
    points fitted on; none fitted (t0 0, the whole wave) where there are fewer than MIN_POINTS."""
    agg = (points["mode"] == "agg").to_numpy()
    if agg.sum() < MIN_POINTS:
        unfitted = {"first_token_fixed": 0.0, "wave_share": 1.0}
        return unfitted, {name: 0.0 for name in unfitted}, int(agg.sum())
    values, halves = fit_first_token(*first_token_terms(points.loc[agg], constants, tokens), ttft[agg])
    return values, halves, int(agg.sum())


def calibrate(points: pd.DataFrame, tpot_s: np.ndarray, tokens: float, name: str,
              ttft_s: np.ndarray | None = None) -> Calibration:
    """Fit one engine's constants to ``points`` (kvwall.validation.points columns) and their measured TPOT (s), and
    with ``ttft_s`` its constants before a first token (s); CalibrationError, naming ``name``, where there are too
    few points."""
    if len(points) < MIN_POINTS:
        raise CalibrationError(f"{name}: {len(points)} measured points, fewer than the {MIN_POINTS} a fit needs")
    step, _, fit = fit_step(cost_inputs(points), np.asarray(tpot_s, dtype=float), tokens)
    half = tuple(rounded(float(h), 2) for h in _interval(fit) * _SCALE)
    if ttft_s is None:
        return Calibration(step, (*half, 0.0, 0.0), int(len(points)), 0)
    values, halves, counted = _first_token(points, np.asarray(ttft_s, dtype=float), step, tokens)
    first = tuple(halves[name] for name in EngineConstants.FIRST_TOKEN_NAMES)
    return Calibration(replace(step, **values), (*half, *first), int(len(points)), counted)
