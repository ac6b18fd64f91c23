"""One measurement, one point: rows of the serving measurements that list one measurement more than once.

Two understood rows are one measurement when they share the device, engine, mode, lengths, weight format and requests
in flight, and their measured TPOT and TTFT to within a relative 1e-12 (SAME_VALUE: the shared file lists some
measurements under two ids, a dated campaign's and a configuration's, ``_cfg<K>``, and writes some of those twice
with a last digit that differs, as a float printed from two computations of one number does; two measurements never
agree to twelve digits). Of each such set one row is kept: the first whose id
names its layout (``_tp<N>_ep<M>_``, which kvwall.validation.layout holds to its columns), else the first in file
order. The others are refused, never dropped silently:
- at the kept row's layout, as one measurement listed twice (counted once, as the kept row);
- at another layout, as a layout the row does not record, since the kept row's id and columns agree on the layout
  that ran; and so is every row of its configuration (the rows whose ids differ only in their lengths
  ``_<isl>x<osl>`` and concurrency ``_c<N>``, at the same layout): one configuration runs one layout;
- a set whose rows disagree on the layout and whose ids name none: all of it, as the layout that ran is not recorded.
"""

from __future__ import annotations

import pandas as pd

from kvwall.validation.layout import LAYOUT, named_layout

#: What makes two rows one measurement, besides their measured TPOT and TTFT.
SAME_RUN = ("device", "backend", "mode", "isl", "osl", "weight_format", "in_flight")
#: Two measured times closer than this, relative to the larger, are one number printed twice.
SAME_VALUE = 1e-12
#: The engine layout two copies are compared at.
ENGINE = ("devices", *LAYOUT)

LISTED_TWICE = "one measurement listed twice: the TPOT and TTFT of another row at the same deployment, counted there"
ELSEWHERE = "a layout the row does not record: its TPOT and TTFT are another row's, whose id names another layout"
IN_CONFIGURATION = "a layout the row does not record: a row of its configuration is another row's, at another layout"
UNNAMED = "a layout the row does not record: its TPOT and TTFT are another row's at another layout, neither named"


def same_values(values: pd.Series) -> pd.Series:
    """Each value as the smallest of the values it is within SAME_VALUE of, step by step in sorted order: one number
    printed twice, its last digits apart, becomes one."""
    ordered = values.sort_values(kind="stable")
    starts = ordered.diff() > SAME_VALUE * ordered.abs()
    starts.iloc[:1] = True
    return ordered.where(starts).ffill().reindex(values.index)


def configuration(ids: pd.Series) -> pd.Series:
    """Each id without its lengths ``_<isl>x<osl>`` and concurrency ``_c<N>``: one configuration's rows share it."""
    return ids.str.replace(r"_\d+x\d+(?=_)", "", regex=True).str.replace(r"_c\d+(?=_)", "", regex=True)


def _in_sets(repeated: pd.DataFrame) -> pd.Series:
    """The refusal of each row of ``repeated`` (rows in sets of copies, in file order, their set in ``set``) but the
    one kept of each set."""
    named = named_layout(repeated["id"])[0].notna()
    layout = repeated.groupby(list(ENGINE), sort=False).ngroup()
    # the kept row: the first whose id names its layout, else the first
    kept = repeated.assign(unnamed=~named, order=range(len(repeated))).sort_values(["set", "unnamed", "order"])
    kept = kept.groupby("set", sort=False).head(1).set_index("set")
    kept_layout = repeated["set"].map(layout[kept["index"]].set_axis(kept.index))
    unnamed_set = repeated["set"].map(layout.groupby(repeated["set"]).nunique() > 1) & ~repeated["set"].map(
        named.groupby(repeated["set"]).any())
    reason = pd.Series(None, index=repeated.index, dtype=object)
    reason[layout == kept_layout] = LISTED_TWICE
    reason[layout != kept_layout] = ELSEWHERE
    reason[repeated.index.isin(kept["index"])] = None
    reason[unnamed_set] = UNNAMED
    return reason


def copies(points: pd.DataFrame, rows: pd.DataFrame) -> pd.Series:
    """The refusal of every point that repeats another's measurement (None elsewhere), among the points not already
    refused; ``points``: kvwall.validation.layout's engines beside the mapped model, device and weight format of
    ``rows``, which hold the measured silicon_tpot_ms and silicon_ttft_ms."""
    reason = pd.Series(None, index=points.index, dtype=object)
    open_points = points[points["reason"].isna()].assign(tpot=rows["silicon_tpot_ms"], ttft=rows["silicon_ttft_ms"])
    keyed = open_points.dropna(subset=[*SAME_RUN, "tpot", "ttft"])
    keyed = keyed.assign(tpot=same_values(keyed["tpot"]), ttft=same_values(keyed["ttft"]))
    repeated = keyed[keyed.duplicated([*SAME_RUN, "tpot", "ttft"], keep=False)]
    repeated = repeated.assign(set=repeated.groupby([*SAME_RUN, "tpot", "ttft"], sort=False).ngroup(),
                               index=repeated.index)
    reason.loc[repeated.index] = _in_sets(repeated)
    elsewhere = open_points.loc[reason.index[reason.eq(ELSEWHERE)].intersection(open_points.index)]
    configurations = configuration(open_points["id"]).to_frame("configuration").join(open_points[list(ENGINE)])
    moved = configurations.loc[elsewhere.index].drop_duplicates()
    in_moved = configurations.reset_index().merge(moved, on=list(configurations.columns))["index"]
    reason[in_moved[reason[in_moved].isna().to_numpy()]] = IN_CONFIGURATION
    return reason
