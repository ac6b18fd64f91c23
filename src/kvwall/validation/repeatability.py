"""How far two measurements of one deployment differ: the serving measurements' own repeatability (derived from
reported data).

A configuration is an agg deployment at one concurrency: the columns of kvwall.validation.points.GROUP and the
sequences in flight. Where the shared measurements hold a configuration more than once, every ordered pair of two
of its measurements gives a ratio of their measured TPOT, one over the other (a row that lists another's measurement
again is refused before, kvwall.validation.copies: each pair is of two measurements). The ratios are what measuring
a deployment again can do to its TPOT: kvwall.plan.proof re-measures with them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.validation.points import GROUP

#: The columns that make one configuration: a group of points and its concurrency.
CONFIGURATION = (*GROUP, "in_flight")


def _agg_configurations(points: pd.DataFrame, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each agg point's configuration (a code, in sorted order) and its measured TPOT."""
    agg = points[points["mode"] == "agg"]
    codes = agg.groupby(list(CONFIGURATION), sort=True).ngroup().to_numpy()
    return codes, rows.loc[agg.index, "silicon_tpot_ms"].to_numpy(dtype=float)


def _ratios(codes: np.ndarray, tpot: np.ndarray) -> np.ndarray:
    ratios = []
    for code in np.unique(codes[np.bincount(codes)[codes] > 1]):
        measured = tpot[codes == code]
        ratios.extend(measured[i] / measured[j] for i in range(measured.size) for j in range(measured.size) if i != j)
    return np.array(ratios, dtype=float)


def repeat_ratios(points: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """The measured TPOT of one measurement over another's, for every ordered pair of two measurements of one
    configuration, in the order of the configurations and of the points; ``points``: understood points of
    ``rows`` (kvwall.validation.points)."""
    return _ratios(*_agg_configurations(points, rows))


def ratio_spread(ratios: np.ndarray) -> dict[str, float]:
    """Of TPOT ratios of pairs of measurements: the pairs, the median |ratio - 1|, the shares within 10% and 20%, and
    the 10th and 90th percentiles."""
    distance = np.abs(ratios - 1.0)
    return {"pairs": int(ratios.size), "median_distance": float(np.median(distance)),
            "within_10": float(np.mean(distance <= 0.1)), "within_20": float(np.mean(distance <= 0.2)),
            "low": float(np.quantile(ratios, 0.1)), "high": float(np.quantile(ratios, 0.9))}


def repeatability(points: pd.DataFrame, rows: pd.DataFrame) -> dict[str, float]:
    """The mode (agg), the agg configurations measured more than once, their rows, and the ratio_spread of the ordered
    pairs of two of their measurements."""
    codes, tpot = _agg_configurations(points, rows)
    repeated = np.bincount(codes)[codes] > 1
    return {"mode": "agg", "configurations": int(np.unique(codes[repeated]).size), "rows": int(repeated.sum()),
            **ratio_spread(_ratios(codes, tpot))}
