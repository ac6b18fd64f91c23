"""The paper's central claim on independent data: "the algorithm didn't change, the regime did" (SoK section 4).

Where the measurements hold the same model, system, engine, layout, lengths and concurrency at two weight formats,
the measured speedup of the narrower format (TPOT of the wider over TPOT of the narrower) is set beside the speedup
the deployment's step-time bound predicts (the ratio of the two bounds, 1 where compute binds), with the regime of
each point. Both speedups are derived: one from two reported measurements, the other from specs and assumptions.
"""

from __future__ import annotations

import pandas as pd

#: What two points must share to be the same operating point at two formats.
OPERATING_POINT = ("model", "device", "backend", "mode", "tp", "pp", "dp", "moe_tp", "moe_ep", "isl", "osl", "in_flight")


def format_pairs(points: pd.DataFrame, bytes_per_param: dict[str, float]) -> pd.DataFrame:
    """Every pair of understood points that differ only in weight format, the wider format first.

    ``points`` has OPERATING_POINT, ``weight_format``, ``tpot_ms``, ``tpot_bound_ms`` and ``regime``;
    ``bytes_per_param`` orders the formats by width.
    """
    columns = [*OPERATING_POINT, "id", "weight_format", "tpot_ms", "tpot_bound_ms", "regime"]
    pairs = points[columns].merge(points[columns], on=list(OPERATING_POINT), suffixes=("_wide", "_narrow"))
    width = pairs["weight_format_wide"].map(bytes_per_param), pairs["weight_format_narrow"].map(bytes_per_param)
    pairs = pairs[width[0] > width[1]].copy()
    pairs["measured_speedup"] = pairs["tpot_ms_wide"] / pairs["tpot_ms_narrow"]
    pairs["predicted_speedup"] = pairs["tpot_bound_ms_wide"] / pairs["tpot_bound_ms_narrow"]
    pairs["speedup_realized"] = pairs["measured_speedup"] / pairs["predicted_speedup"]
    return pairs.sort_values(["model", "device", "backend", "isl", "osl", "in_flight", "id_wide", "id_narrow"]).reset_index(drop=True)
