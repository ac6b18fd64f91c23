"""The two-term decode-step model t = a + b * KV_GiB, fitted by ordinary least squares (four-constraints sources).

a is the fixed cost of a step (launches, threads, the merge), b the KV slope in ms/GiB; 1/b is the bandwidth at
which the kernel streams KV. Confidence intervals are two-sided, from Student's t with n - 2 degrees of freedom.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import stdtrit

from kvwall.units import GB, to_base


@dataclass(frozen=True)
class LineFit:
    """t = intercept + slope * x with standard errors, a confidence interval on each, R^2 and the point count."""

    intercept: float
    slope: float
    intercept_ci: tuple[float, float]
    slope_ci: tuple[float, float]
    r_squared: float
    n: int
    confidence: float


def fit_line(x: ArrayLike, y: ArrayLike, confidence: float = 0.95) -> LineFit:
    """Least-squares line through (x, y); needs three points or more for an interval."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3 or np.ptp(x) == 0:
        raise ValueError("a line fit needs at least three points at two or more x values")
    (slope, intercept), covariance = np.polyfit(x, y, 1, cov=True)  # scaled by the residual variance, n - 2 dof
    slope_stderr, intercept_stderr = np.sqrt(np.diag(covariance))
    half = stdtrit(x.size - 2, 0.5 + confidence / 2)  # Student's t quantile
    slope_half, intercept_half = half * slope_stderr, half * intercept_stderr
    residual = y - (intercept + slope * x)
    return LineFit(
        intercept=float(intercept),
        slope=float(slope),
        intercept_ci=(float(intercept - intercept_half), float(intercept + intercept_half)),
        slope_ci=(float(slope - slope_half), float(slope + slope_half)),
        r_squared=float(1.0 - residual @ residual / np.sum((y - y.mean()) ** 2)),
        n=int(x.size),
        confidence=confidence,
    )


def bandwidth_from_slope(slope_ms_per_gib: float) -> float:
    """The bandwidth a positive KV slope implies, in decimal GB/s: 1 GiB / b (16.34 ms/GiB -> 65.7 GB/s)."""
    if not slope_ms_per_gib > 0:
        raise ValueError(f"a slope of {slope_ms_per_gib} ms/GiB implies no bandwidth")
    return 1.0 / to_base(slope_ms_per_gib, "ms/GiB") / GB
