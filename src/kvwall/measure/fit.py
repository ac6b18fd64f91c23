"""The two-term decode-step model t = a + b * KV_GiB, fitted by ordinary least squares (four-constraints sources).

a is the fixed cost of a step (launches, threads, the merge), b the KV slope in ms/GiB; 1/b is the bandwidth at
which the kernel streams KV. Confidence intervals are two-sided, from Student's t with n - 2 degrees of freedom.

The fit is the closed form of the normal equations on centred data, every sum taken by ``math.fsum`` (exactly
rounded, so independent of the order of the points): no BLAS or LAPACK call, whose kernels OpenBLAS picks by CPU,
touches a fitted number, and an artifact built from one is the same on every machine (docs/byte-stability.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import math

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
    xs, ys = np.asarray(x, dtype=float).tolist(), np.asarray(y, dtype=float).tolist()
    n = len(xs)
    if n < 3 or len(set(xs)) < 2:
        raise ValueError("a line fit needs at least three points at two or more x values")
    x_mean, y_mean = math.fsum(xs) / n, math.fsum(ys) / n
    dx, dy = [xi - x_mean for xi in xs], [yi - y_mean for yi in ys]
    sxx = math.fsum(d * d for d in dx)
    slope = math.fsum(a * b for a, b in zip(dx, dy)) / sxx
    intercept = y_mean - slope * x_mean
    residuals = [yi - (intercept + slope * xi) for xi, yi in zip(xs, ys)]
    residual_ss = math.fsum(r * r for r in residuals)
    variance = residual_ss / (n - 2)  # the residual variance, n - 2 degrees of freedom
    slope_stderr = math.sqrt(variance / sxx)
    intercept_stderr = math.sqrt(variance * (1.0 / n + x_mean * x_mean / sxx))
    half = float(stdtrit(n - 2, 0.5 + confidence / 2))  # Student's t quantile
    slope_half, intercept_half = half * slope_stderr, half * intercept_stderr
    return LineFit(
        intercept=intercept,
        slope=slope,
        intercept_ci=(intercept - intercept_half, intercept + intercept_half),
        slope_ci=(slope - slope_half, slope + slope_half),
        r_squared=1.0 - residual_ss / math.fsum(d * d for d in dy),
        n=n,
        confidence=confidence,
    )


def bandwidth_from_slope(slope_ms_per_gib: float) -> float:
    """The bandwidth a positive KV slope implies, in decimal GB/s: 1 GiB / b (16.34 ms/GiB -> 65.7 GB/s)."""
    if not slope_ms_per_gib > 0:
        raise ValueError(f"a slope of {slope_ms_per_gib} ms/GiB implies no bandwidth")
    return 1.0 / to_base(slope_ms_per_gib, "ms/GiB") / GB
