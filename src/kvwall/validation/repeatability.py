"""How far two measurements of one deployment differ: the serving measurements' own repeatability (derived from
reported data).

A configuration is an agg deployment at one concurrency: the columns of kvwall.validation.points.GROUP and the
sequences in flight. Where the shared measurements hold a configuration more than once, every ordered pair of two
of its measurements gives a ratio of their measured TPOT, one over the other; a pair with the same TPOT and the same
TTFT to the last digit is one measurement listed twice (the file holds such rows under two ids), not a second
measurement, and gives none. The ratios are what measuring a deployment again can do to its TPOT:
kvwall.plan.proof re-measures with them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.validation.points import GROUP

#: The columns that make one configuration: a group of points and its concurrency.
CONFIGURATION = (*GROUP, "in_flight")


def _agg_configurations(points: pd.DataFrame, rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each agg point's configuration (a code, in sorted order) and its measured (TPOT, TTFT)."""
    agg = points[points["mode"] == "agg"]
    measured = rows.loc[agg.index, ["silicon_tpot_ms", "silicon_ttft_ms"]].to_numpy(dtype=float)
    return agg.groupby(list(CONFIGURATION), sort=True).ngroup().to_numpy(), measured


def _ratios(codes: np.ndarray, measured: np.ndarray) -> np.ndarray:
    ratios = []
    for code in np.unique(codes[np.bincount(codes)[codes] > 1]):
        tpot_ttft = measured[codes == code]
        for i, j in ((i, j) for i in range(len(tpot_ttft)) for j in range(len(tpot_ttft)) if i != j):
            if not np.array_equal(tpot_ttft[i], tpot_ttft[j]):
                ratios.append(tpot_ttft[i, 0] / tpot_ttft[j, 0])
    return np.array(ratios, dtype=float)


def repeat_ratios(points: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """The measured TPOT of one measurement over another's, for every ordered pair of two different measurements of
    one configuration, in the order of the configurations and of the points; ``points``: understood points of
    ``rows`` (kvwall.validation.points)."""
    return _ratios(*_agg_configurations(points, rows))


def repeatability(points: pd.DataFrame, rows: pd.DataFrame) -> dict[str, float]:
    """The mode (agg), the agg configurations measured more than once, their rows, the rows that repeat another row's
    TPOT and TTFT exactly, the ordered pairs of different measurements, and of their TPOT ratios: the median
    |ratio - 1|, the shares within 10% and 20%, and the 10th and 90th percentiles."""
    codes, measured = _agg_configurations(points, rows)
    repeated = np.bincount(codes)[codes] > 1
    listed_twice = pd.DataFrame(measured).assign(code=codes).duplicated().to_numpy()
    ratios = _ratios(codes, measured)
    distance = np.abs(ratios - 1.0)
    return {"mode": "agg", "configurations": int(np.unique(codes[repeated]).size), "rows": int(repeated.sum()),
            "listed_twice": int(listed_twice.sum()), "pairs": int(ratios.size),
            "median_distance": float(np.median(distance)), "within_10": float(np.mean(distance <= 0.1)),
            "within_20": float(np.mean(distance <= 0.2)), "low": float(np.quantile(ratios, 0.1)),
            "high": float(np.quantile(ratios, 0.9))}
