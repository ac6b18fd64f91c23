"""An engine's constants (kvwall.model.engine_constants) fitted to its measured points: derived from reported data.

Least squares (scipy.optimize.least_squares, trust-region reflective) on the relative errors estimate / measured - 1
of every point's TPOT (kvwall.model.decode_costs), within bounds that keep each constant physical: a fixed step cost of 0 to 50 ms, realized fractions of the datasheet
bandwidth and peak of 1% to 1, a latency per collective message of 0 to 50 us. The fitted constants are rounded to
SIGNIFICANT_DIGITS before any use (TTFT, kvwall.model.first_token_estimate, reads the same constants and is not
fitted), and their 95% intervals (1.96 standard errors from the Jacobian at the optimum,
J^T J scaled by the residual variance) to two: a fit's last bits follow the CPU's BLAS, its rounded values do not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from kvwall.model.decode_costs import decode_step
from kvwall.model.engine_constants import EngineConstants, rounded
from kvwall.units import MS, US

#: Lower and upper bounds of (fixed step cost s, HBM fraction, FLOP fraction, latency s), and the starting point.
LOWER = (0.0, 0.01, 0.01, 0.0)
UPPER = (50 * MS, 1.0, 1.0, 50 * US)
START = (1 * MS, 0.7, 0.4, 5 * US)
_SCALE = np.array([MS, 1.0, 1.0, US])
#: Fewest points an engine's fit needs (four constants, a few points each).
MIN_POINTS = 20


class CalibrationError(ValueError):
    """A calibration group too small to fit."""


@dataclass(frozen=True)
class Calibration:
    """The rounded constants, their rounded 95% half-intervals, and the points fitted on."""

    constants: EngineConstants
    half_interval: tuple[float, ...]
    points: int


def _residuals(x: np.ndarray, points: pd.DataFrame, tpot: np.ndarray, tokens: float) -> np.ndarray:
    return decode_step(points, EngineConstants(*(x * _SCALE))) / tokens / tpot - 1.0


def calibrate(points: pd.DataFrame, tpot_s: np.ndarray, tokens: float, name: str) -> Calibration:
    """Fit one engine's constants to ``points`` (kvwall.validation.points columns) and their measured TPOT (s);
    CalibrationError, naming ``name``, where there are too few points."""
    if len(points) < MIN_POINTS:
        raise CalibrationError(f"{name}: {len(points)} measured points, fewer than the {MIN_POINTS} a fit needs")
    tpot = np.asarray(tpot_s, dtype=float)
    fit = least_squares(_residuals, np.array(START) / _SCALE, bounds=(np.array(LOWER) / _SCALE, np.array(UPPER) / _SCALE),
                        args=(points, tpot, tokens), method="trf")
    dof = max(fit.fun.size - fit.x.size, 1)
    variance = float(fit.fun @ fit.fun) / dof
    covariance = np.linalg.pinv(fit.jac.T @ fit.jac) * variance
    half = 1.96 * np.sqrt(np.maximum(np.diag(covariance), 0.0)) * _SCALE
    constants = EngineConstants(*(rounded(float(v)) for v in fit.x * _SCALE))
    return Calibration(constants, tuple(rounded(float(h), 2) for h in half), int(len(points)))
