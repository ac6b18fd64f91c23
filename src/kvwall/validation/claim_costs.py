"""Why narrower weights bought less than the step-time bound predicted: every pair of the format claim
(kvwall.validation.claim) priced at both formats with its engine's calibrated named costs (derived from reported data).

Per pair, each part of the calibrated decode step (kvwall.model.decode_costs with the engine's constants fitted on
every point, kvwall.validation.calibration; per output token) at the wider and the narrower format, the busiest EP
rank's cost split into its routed-expert reads and its extra dispatch; the calibrated predicted speedup, the step at
the wider format over the step at the narrower, in sample and held out (kvwall.validation.held_out_claim); and the
share s of the wider step in the parts that shrink with the weight bytes (the weights and the expert reads). Were only
those parts to shrink, by r, the ratio of the weight bytes read per step, the speedup would be Amdahl's

    ceiling = 1 / (1 - s + s / r)

the rest (KV, compute, collectives, dispatch, the fixed cost and other requests' prefill) staying as it was.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import decode_costs
from kvwall.model.engine_constants import EngineConstants
from kvwall.units import MS
from kvwall.validation.calibration import Calibration

#: The parts of a decode step: the named costs, the busiest EP rank's (imbalance) split into expert reads and dispatch.
PARTS = ("weights", "expert_reads", "kv", "compute", "collectives", "dispatch", "fixed", "prefill")
#: The parts that shrink with the weight bytes.
SHRINKING = ("weights", "expert_reads")
#: A group of pairs: engine, device, the two formats and the regime of the wider point; "all" pools a column.
GROUP = ("backend", "device", "weight_format_wide", "weight_format_narrow", "regime_wide")
#: The columns each pooled level sets to "all": engines and devices, then the formats too.
POOLED = ((), ("backend", "device"), ("backend", "device", "weight_format_wide", "weight_format_narrow"))


def amdahl_ceiling(share: np.ndarray | float, ratio: np.ndarray | float) -> np.ndarray | float:
    """1 / (1 - s + s / r): the speedup of a step whose share s shrinks r times while the rest stays."""
    return 1.0 / (1.0 - share + share / ratio)


def step_parts(points: pd.DataFrame, constants: EngineConstants, tokens: float) -> pd.DataFrame:
    """Per point, each part of its decode step per output token (ms): kvwall.model.decode_costs, the busiest rank's
    cost split into its expert reads, idle x X / (h beta), and the rest, its extra dispatch."""
    costs = decode_costs(points, constants)
    bandwidth = constants.hbm_fraction * points["hbm_bandwidth"].to_numpy(dtype=float)
    reads = points["pipeline_idle"].to_numpy(dtype=float) * (
        points["imbalance_read_per_device"].to_numpy(dtype=float) / bandwidth)
    parts = {**costs, "expert_reads": reads, "dispatch": costs["imbalance"] - reads}
    return pd.DataFrame({name: parts[name] / tokens / MS for name in PARTS}, index=points.index)


def claim_costs(pairs: pd.DataFrame, points: pd.DataFrame, calibrations: Mapping[str, Calibration],
                tokens: float, held_out_speedup: pd.Series | None = None) -> pd.DataFrame:
    """Every pair of kvwall.validation.claim.format_pairs whose engine has constants, with each part of both steps
    (``<part>_wide``, ``<part>_narrow``, ms per token), both estimates, the calibrated speedup and its held-out value
    (``held_out_speedup``, indexed as ``pairs``; NaN without it), the weight-bytes ratio r, each part's share of the
    wider step, the shrinking share s and the ceiling 1 / (1 - s + s / r)."""
    priced = pd.concat([step_parts(group, calibrations[engine].constants, tokens)
                        for engine, group in points.groupby("backend", sort=True) if engine in calibrations])
    priced.index = points.loc[priced.index, "id"]
    weight_bytes = points.set_index("id")["weight_read_per_device"]
    chosen = pairs[pairs["backend"].isin(list(calibrations))]
    wide = priced.loc[chosen["id_wide"]].set_axis(chosen.index)
    narrow = priced.loc[chosen["id_narrow"]].set_axis(chosen.index)
    out = pd.concat([chosen, wide.add_suffix("_wide"), narrow.add_suffix("_narrow")], axis=1)
    out["estimate_wide_ms"], out["estimate_narrow_ms"] = wide.sum(axis=1), narrow.sum(axis=1)
    out["calibrated_speedup"] = out["estimate_wide_ms"] / out["estimate_narrow_ms"]
    out["held_out_speedup"] = np.nan if held_out_speedup is None else held_out_speedup.loc[chosen.index].to_numpy()
    out["weight_ratio"] = (weight_bytes.loc[chosen["id_wide"]].to_numpy()
                           / weight_bytes.loc[chosen["id_narrow"]].to_numpy())
    for name in PARTS:
        out[f"share_{name}"] = wide[name] / out["estimate_wide_ms"]
    out["shrinking_share"] = out[[f"share_{name}" for name in SHRINKING]].sum(axis=1)
    out["ceiling"] = amdahl_ceiling(out["shrinking_share"], out["weight_ratio"])
    return out.reset_index(drop=True)


def claim_cost_summary(priced: pd.DataFrame) -> pd.DataFrame:
    """One row per group (GROUP) and per pooled level (POOLED): pairs; the median measured, bound-predicted,
    calibrated-predicted and held-out calibrated speedups, ceiling and weight-bytes ratio; each part's share of the
    summed wider steps."""
    rows = []
    for pooled in POOLED:
        frame = priced.assign(**{name: "all" for name in pooled})
        for key, group in frame.groupby(list(GROUP), sort=True):
            wider = float(group["estimate_wide_ms"].sum())
            shares = {f"share_{name}": float(group[f"{name}_wide"].sum()) / wider for name in PARTS}
            rows.append({**dict(zip(GROUP, key)), "pairs": int(len(group)),
                         **{f"median_{name}": float(group[name].median()) for name in
                            ("measured_speedup", "predicted_speedup", "calibrated_speedup", "held_out_speedup", "ceiling",
                             "weight_ratio")},
                         "shrinking_share": sum(shares[f"share_{name}"] for name in SHRINKING), **shares})
    return pd.DataFrame(rows)
