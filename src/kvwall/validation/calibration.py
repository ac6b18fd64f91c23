"""An engine's constants (kvwall.model.engine_constants) fitted to its measured points: derived from reported data.

Least squares (scipy.optimize.least_squares, trust-region reflective) on the relative errors estimate / measured - 1
of every point's TPOT (kvwall.model.decode_costs), within bounds that keep each constant physical: a fixed step cost
of 0 to 50 ms, realized fractions of the datasheet bandwidth and peak of 1% to 1, a latency per collective message of
0 to 50 us, a cost per layer and one per sequence of each step of 0 to 1 ms. The fitted constants are rounded to SIGNIFICANT_DIGITS before any use. The fixed cost before a first
token (0 to 5 s) is then fitted alone, the same way, on the relative TTFT errors of the agg points
(kvwall.model.first_token_estimate at the rounded rates); a value within AT_BOUND of its range from a bound is that
bound. The 95% intervals (1.96 standard errors from the Jacobian at the optimum, J^T J scaled by the residual
variance) are rounded to two digits. Every job runs OpenBLAS on one set of kernels and one thread (kvwall.numerics),
so the fit's bits do not follow the CPU either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import CostInputs, cost_inputs, priced_costs, step_of
from kvwall.model.engine_constants import EngineConstants, rounded
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.units import MS, US

#: Lower and upper bounds of EngineConstants.STEP_NAMES (fixed step cost s, HBM fraction, FLOP fraction, latency s,
#: cost per layer s, cost per sequence s), and the starting point.
LOWER = (0.0, 0.01, 0.01, 0.0, 0.0, 0.0)
UPPER = (50 * MS, 1.0, 1.0, 50 * US, 1 * MS, 1 * MS)
START = (1 * MS, 0.7, 0.4, 5 * US, 10 * US, 10 * US)
_SCALE = np.array([MS, 1.0, 1.0, US, US, US])
#: Bounds and start of the fixed cost before a first token (s).
FIRST_TOKEN_BOUNDS, FIRST_TOKEN_START = (0.0, 5.0), 0.1
#: Fewest points an engine's fit needs (six constants, a few points each).
MIN_POINTS = 20


class CalibrationError(ValueError):
    """A calibration group too small to fit."""


@dataclass(frozen=True)
class Calibration:
    """The rounded constants, their rounded 95% half-intervals, and the points fitted on."""

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


def step_constants(values, first_token_fixed: float = 0.0) -> EngineConstants:
    """The constants whose decode-step values are ``values``, in EngineConstants.STEP_NAMES' order."""
    return EngineConstants(**dict(zip(EngineConstants.STEP_NAMES, values)), first_token_fixed=first_token_fixed)


def _residuals(x: np.ndarray, inputs: CostInputs, tpot: np.ndarray, tokens: float) -> np.ndarray:
    return step_of(priced_costs(inputs, step_constants(x * _SCALE))) / tokens / tpot - 1.0


def _interval(fit) -> np.ndarray:
    """1.96 standard errors of each fitted value: the residual variance times (J^T J)^-1 at the optimum."""
    variance = float(fit.fun @ fit.fun) / max(fit.fun.size - fit.x.size, 1)
    return 1.96 * np.sqrt(np.maximum(np.diag(np.linalg.pinv(fit.jac.T @ fit.jac) * variance), 0.0))


def _first_token_fixed(points: pd.DataFrame, ttft: np.ndarray, constants: EngineConstants,
                       tokens: float) -> tuple[float, float, int]:
    """The fitted fixed cost before a first token (s), its half-interval (s) and the agg points it was fitted on."""
    agg = (points["mode"] == "agg").to_numpy()
    if agg.sum() < MIN_POINTS:
        return 0.0, 0.0, int(agg.sum())
    chosen, measured = points.loc[agg], ttft[agg]
    # the estimate is the fixed cost plus prefills that do not depend on it: priced once, the fit adds its value
    prefill = first_token_estimate(chosen, constants, tokens)

    def residuals(x):
        return (x[0] + prefill) / measured - 1.0

    from scipy.optimize import least_squares  # here: the jobs that only price with fitted constants skip its import

    fit = least_squares(residuals, [FIRST_TOKEN_START], bounds=FIRST_TOKEN_BOUNDS, method="trf")
    return settled(float(fit.x[0]), *FIRST_TOKEN_BOUNDS), rounded(float(_interval(fit)[0]), 2), int(agg.sum())


def calibrate(points: pd.DataFrame, tpot_s: np.ndarray, tokens: float, name: str,
              ttft_s: np.ndarray | None = None) -> Calibration:
    """Fit one engine's constants to ``points`` (kvwall.validation.points columns) and their measured TPOT (s), and
    with ``ttft_s`` its fixed cost before a first token (s); CalibrationError, naming ``name``, where there are too few points."""
    if len(points) < MIN_POINTS:
        raise CalibrationError(f"{name}: {len(points)} measured points, fewer than the {MIN_POINTS} a fit needs")
    tpot = np.asarray(tpot_s, dtype=float)
    from scipy.optimize import least_squares  # as in _first_token_fixed

    fit = least_squares(_residuals, np.array(START) / _SCALE, bounds=(np.array(LOWER) / _SCALE, np.array(UPPER) / _SCALE),
                        args=(cost_inputs(points), tpot, tokens), method="trf")
    half = tuple(rounded(float(h), 2) for h in _interval(fit) * _SCALE)
    step = [settled(float(v), low, high) for v, low, high in zip(fit.x * _SCALE, LOWER, UPPER)]
    if ttft_s is None:
        return Calibration(step_constants(step), (*half, 0.0), int(len(points)), 0)
    fixed, fixed_half, counted = _first_token_fixed(points, np.asarray(ttft_s, dtype=float), step_constants(step),
                                                    tokens)
    return Calibration(step_constants(step, fixed), (*half, fixed_half), int(len(points)), counted)
