"""The decode engine of a measured serving point: its layout over GPUs and the sequences in flight on it.

Rules, as the measurements' columns define them (data/reported/README.md):
- an ``agg`` row is one engine that prefills and decodes; its layout is ``tp_size, pp_size, attention_dp_size,
  moe_tp_size, moe_ep_size`` and ``batch_size`` is the requests in flight on one attention-data-parallel rank, so
  the engine holds ``batch_size x DP`` (the row id's concurrency ``_c<N>_`` is that product in every row with DP > 1);
- a ``disagg`` row's TPOT is the decode side's: the layout is ``decode_*``; ``decode_batch_size`` is the sequences of
  one attention-data-parallel rank of one decode worker, so an engine holds ``decode_batch_size x DP``; where it is
  blank, the concurrency in the row id (``_c<N>_``) is shared evenly over ``decode_num_workers x DP`` ranks (rounded
  down, so that the bound stays a bound);
- an ``agg`` row whose id's concurrency is not ``batch_size x DP`` (``batch_size`` x TP with DP blank, in 20 rows) ran
  a layout the row does not record, and is refused; so is an ``agg`` row whose id names its engine's GPUs and EP
  (``_tp<N>_ep<M>_``, N = TP x PP x DP wherever the columns agree with it) other than its columns do (193 rows of one
  campaign, whose columns give the engine N x M GPUs: 40 repeat another row's TPOT and TTFT at the id's layout);
- a blank pipeline or attention-data-parallel size is 1, a blank expert size the rest of the engine's GPUs;
- the GPUs of an engine are TP x PP x DP (attention data parallelism replicates attention over DP groups of TP
  GPUs), and for a mixture-of-experts model the expert layout must cover the same GPUs: MoE-TP x EP = TP x PP x DP.
A row whose layout does not divide (a size of 0, an expert layout over other GPUs than the engine's) is refused with
its reason, never guessed. A ``disagg`` row's prompts run on its prefill workers, whose layout is ``prefill_*`` by the
same rules (prefill_engines): a request's prefill runs on one of their replicas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LAYOUT = ("tp", "pp", "dp", "moe_tp", "moe_ep")
_COLUMNS = {"tp": "tp_size", "pp": "pp_size", "dp": "attention_dp_size", "moe_tp": "moe_tp_size", "moe_ep": "moe_ep_size"}


def named_layout(ids: pd.Series) -> pd.DataFrame:
    """The GPUs and EP an id names (``_tp<N>_ep<M>_``, ``_tp<N>_0_ep<M>_0_`` under attention DP), NaN where none."""
    return ids.str.extract(r"_tp(\d+)(?:_0)?_ep(\d+)(?:_0)?_").apply(pd.to_numeric, errors="coerce")


def _numbers(rows: pd.DataFrame, column: str) -> pd.Series:
    """A column as numbers, NaN where blank (a column blank in every row is read as objects)."""
    return pd.to_numeric(rows[column], errors="coerce") if column in rows else pd.Series(np.nan, index=rows.index)


def _side_columns(rows: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return pd.DataFrame({name: _numbers(rows, prefix + column) for name, column in _COLUMNS.items()}, index=rows.index)


def _engine_sizes(layout: pd.DataFrame, is_moe: pd.Series) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """The sizes of LAYOUT of each row's engine (blanks filled as the module's rules say), its GPUs, and a refusal
    reason where its layout is not given or does not divide."""
    reason = pd.Series(None, index=layout.index, dtype=object)
    reason[layout["tp"].isna()] = "the layout is not given (tensor-parallel size blank)"
    zero = layout[list(LAYOUT)].eq(0).any(axis=1) & reason.isna()
    reason[zero] = "a layout that does not divide: a parallel size of 0"
    sizes = layout[["tp", "pp", "dp"]].fillna(1).clip(lower=1).astype(int)
    devices = sizes["tp"] * sizes["pp"] * sizes["dp"]
    # A blank expert size is the rest of the engine's GPUs: MoE-TP = GPUs / EP, EP = GPUs / MoE-TP.
    moe_ep = layout["moe_ep"].fillna(devices // layout["moe_tp"].fillna(devices).clip(lower=1))
    sizes["moe_ep"] = moe_ep.clip(lower=1).astype(int)
    sizes["moe_tp"] = layout["moe_tp"].fillna(devices // sizes["moe_ep"]).clip(lower=1).astype(int)
    experts_elsewhere = is_moe & (sizes["moe_tp"] * sizes["moe_ep"] != devices) & reason.isna()
    reason[experts_elsewhere] = (
        "a layout that does not divide: MoE-TP x EP = "
        + (sizes["moe_tp"] * sizes["moe_ep"]).astype(str)
        + " GPUs, the engine has TP x PP x DP = "
        + devices.astype(str)
    )[experts_elsewhere]
    sizes.loc[~is_moe, ["moe_tp", "moe_ep"]] = 1
    return sizes, devices, reason


def decode_engines(rows: pd.DataFrame, is_moe: pd.Series) -> pd.DataFrame:
    """Per row: side, devices, tp, pp, dp, moe_tp, moe_ep, sequences in flight per engine, and a refusal reason.

    ``is_moe`` tells, per row, whether the model has routed experts (its expert layout is then checked).
    """
    disagg = rows["mode"].eq("disagg")
    layout = _side_columns(rows, "").where(~disagg, _side_columns(rows, "decode_"), axis=0)
    sizes, devices, reason = _engine_sizes(layout, is_moe)

    concurrency_in_id = pd.to_numeric(rows["id"].str.extract(r"_c(\d+)_", expand=False), errors="coerce")
    ranks = _numbers(rows, "decode_num_workers") * sizes["dp"]
    per_rank = _numbers(rows, "decode_batch_size").fillna(np.floor(concurrency_in_id / ranks))
    in_flight = (_numbers(rows, "batch_size") * sizes["dp"]).where(~disagg, per_rank * sizes["dp"])
    unknown = in_flight.isna() & reason.isna()
    reason[unknown & disagg] = "the sequences per decode engine are not given (decode_batch_size and decode_num_workers blank)"
    reason[unknown & ~disagg] = "the concurrency is not given (batch_size blank)"
    unrecorded = ~disagg & concurrency_in_id.notna() & in_flight.notna() & (in_flight != concurrency_in_id) & reason.isna()
    reason[unrecorded] = "a layout the row does not record: its id's concurrency is not batch_size x attention DP"
    named = named_layout(rows["id"])
    contradicted = ~disagg & named[0].notna() & reason.isna() & (
        (named[0] != devices) | (layout["moe_ep"].notna() & (named[1] != layout["moe_ep"])))
    reason[contradicted] = "a layout the row does not record: its id's _tp<N>_ep<M>_ names other GPUs or EP"
    too_few = in_flight.lt(1) & reason.isna()
    reason[too_few] = "fewer requests in flight than decode ranks: no sequence per rank"
    return pd.DataFrame(
        {"side": np.where(disagg, "decode", "agg"), "devices": devices, **{k: sizes[k] for k in LAYOUT}, "in_flight": in_flight, "reason": reason},
        index=rows.index,
    )


def prefill_engines(rows: pd.DataFrame, is_moe: pd.Series) -> pd.DataFrame:
    """Per disagg row, its prefill workers' engine: devices, tp, pp, dp, moe_tp, moe_ep (prefill_* by the module's
    rules) and a refusal reason; agg rows, whose engine prefills, get none (NaN sizes, no reason)."""
    disagg = rows["mode"].eq("disagg")
    sizes, devices, reason = _engine_sizes(_side_columns(rows, "prefill_")[disagg], is_moe[disagg])
    reason = reason.where(reason.isna(), "the prefill workers' layout: " + reason.fillna(""))
    return pd.DataFrame({"devices": devices, **{k: sizes[k] for k in LAYOUT}, "reason": reason},
                        index=rows.index[disagg]).reindex(rows.index)

