"""What each measured TPOT is made of: the share of every named cost of the calibrated decode step, per engine,
device and mode, and the remainder no cost explains (derived from reported data).

Per group, each cost's share is its sum over the group's understood points (kvwall.model.decode_costs with the
engine's constants fitted on every point, kvwall.validation.calibration; per output token) over the sum of their
measured TPOT, so the shares and the remainder add up to 1: a positive remainder is time the named costs leave
unexplained, a negative one time they price that the engine did not spend.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from kvwall.model.decode_costs import COSTS, decode_costs
from kvwall.units import MS
from kvwall.validation.calibration import Calibration

#: The columns that make a group.
GROUP = ("backend", "device", "mode")


def cost_shares(points: pd.DataFrame, tpot_ms: pd.Series, calibrations: Mapping[str, Calibration],
                tokens: float) -> pd.DataFrame:
    """One row per engine, device and mode: points, the summed measured TPOT's shares of each cost, the remainder."""
    per_point = pd.DataFrame(index=points.index, columns=list(COSTS), dtype=float)
    for engine, group in points.groupby("backend", sort=True):
        if engine not in calibrations:
            continue
        for name, seconds in decode_costs(group, calibrations[engine].constants).items():
            per_point.loc[group.index, name] = seconds / tokens / MS
    frame = pd.concat([points[list(GROUP)], per_point, tpot_ms.rename("tpot_ms")], axis=1).dropna(subset=list(COSTS))
    rows = []
    for key, group in frame.groupby(list(GROUP), sort=True):
        measured = float(group["tpot_ms"].sum())
        shares = {f"share_{name}": float(group[name].sum()) / measured for name in COSTS}
        rows.append({**dict(zip(GROUP, key)), "points": int(len(group)),
                     "median_tpot_ms": float(group["tpot_ms"].median()), **shares,
                     "remainder": 1.0 - sum(shares.values())})
    return pd.DataFrame(rows)
