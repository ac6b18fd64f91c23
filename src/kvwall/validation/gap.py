"""What the gap between a bound and a measurement is made of: the two-term fit t = a + b KV per group of points.

A group is a set of measured points that differ only in concurrency (same model, system, engine, weight format, mode,
layout and lengths). Across it, TPOT is fitted against the KV bytes each GPU reads per step (the same fit as the
measured leg's, kvwall.measure.fit): 1/b is the engine's effective KV bandwidth, to set beside the datasheet's, and a
is its fixed cost per step, to set beside the time the GPU needs to read its weights once. Each of these numbers is
derived from reported measurements; the fit names its points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.measure.fit import fit_line
from kvwall.units import GB, MS

#: The columns that make points one group: everything but the concurrency.
GROUP = ("model", "device", "backend", "weight_format", "mode", "tp", "pp", "dp", "moe_tp", "moe_ep", "isl", "osl")
#: Fewest points, at distinct KV sizes, a group needs for a fit with an interval.
MIN_POINTS = 3


def group_fits(points: pd.DataFrame) -> pd.DataFrame:
    """One row per group with a fit: a (ms), b (ms per GB of KV per GPU), R^2, n, 1/b (GB/s), and their references.

    ``points`` holds the understood points with columns GROUP, ``kv_read_per_device`` (bytes per step),
    ``tpot_ms`` (measured), ``hbm_bandwidth`` (bytes/s) and ``weight_read_ms`` (one weight read per GPU).
    """
    rows = []
    for key, group in points.groupby(list(GROUP), sort=True, dropna=False):
        x = group["kv_read_per_device"].to_numpy() / GB
        if group.shape[0] < MIN_POINTS or np.unique(x).size < 2:
            continue
        fit = fit_line(x, group["tpot_ms"].to_numpy())
        slope_s_per_byte = fit.slope * MS / GB
        rows.append(
            {
                **dict(zip(GROUP, key)),
                "points": fit.n,
                "fixed_cost_ms": fit.intercept,
                "kv_slope_ms_per_gb": fit.slope,
                "r_squared": fit.r_squared,
                "effective_kv_bandwidth_gb_s": (1 / slope_s_per_byte / GB) if fit.slope > 0 else np.nan,
                "datasheet_bandwidth_gb_s": group["hbm_bandwidth"].iloc[0] / GB,
                "weight_read_ms": group["weight_read_ms"].iloc[0],
            }
        )
    fits = pd.DataFrame(rows)
    if not fits.empty:
        fits["bandwidth_realized"] = fits["effective_kv_bandwidth_gb_s"] / fits["datasheet_bandwidth_gb_s"]
        fits["fixed_cost_over_weight_read"] = fits["fixed_cost_ms"] / fits["weight_read_ms"]
    return fits
