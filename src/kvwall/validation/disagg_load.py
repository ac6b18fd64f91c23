"""What a disaggregated request's measured TTFT follows, or does not: derived from reported data.

The estimate prices a disagg TTFT as the fixed cost and one prompt alone on a replica of the prefill workers
(kvwall.model.first_token_estimate). Two things it leaves out could make a request wait longer, and both are sized
here from the rows themselves, per disagg point:

- the prefill pool's queue. The benchmark's clients are a closed loop: the deployment's c requests in flight (the
  decode engine's, kvwall.validation.layout, times its decode workers) each come back after their TTFT and osl - 1
  decode steps, so requests reach the prefill pool at lambda = c / (TTFT + (osl - 1) TPOT) a second, both measured.
  Each brings one prompt's prefill FLOPs (kvwall.model.workloads.prefill_flops), and the pool's GPUs (a worker's
  prefill_* layout times prefill_num_workers) run them at most at their dense peak: the pool is busy at least
  rho = lambda x FLOPs / (GPUs x peak) of the time. A queue that made a request wait long would need rho near 1;
  at the engine's realized fraction f of the peak the pool is busy rho / f.
- the KV transfer to the decode worker: the prompt's KV (kvwall.model.footprint.kv_bytes, at the format the engine
  stores) over one GPU's scale-out link (its network; the scale-up link where the device states none), the
  slowest way it could go, so at most this.

Per engine and over all: the points, the medians of the measured TTFT, of one prompt alone on a prefill replica at
the dense peak, of their ratio, of rho and of the transfer over the measured TTFT, the largest rho, and Spearman's
rank correlation between rho and the ratio (a queue would make the ratio grow with rho).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.inputs.deployment import ServingInputs
from kvwall.model.footprint import kv_bytes
from kvwall.model.workloads import prefill_flops
from kvwall.units import MS, dtype_bytes
from kvwall.validation.layout import prefill_engines

#: The label of the row over every engine.
ALL = "all"


def _transfer_rate(device, serving: ServingInputs) -> float:
    """One GPU's slowest link to another worker: its scale-out rate, else its scale-up rate one way."""
    link = serving.link_of(device)
    return link.fabric.scale_out if link.fabric is not None and link.fabric.scale_out else link.bandwidth


def disagg_load(points: pd.DataFrame, rows: pd.DataFrame, models: Mapping, devices: Mapping, serving: ServingInputs,
                kv_format: str) -> pd.DataFrame:
    """The module's table over the disagg points of ``points`` (understood points of ``rows``,
    kvwall.validation.points); ``models`` and ``devices`` the catalogue's, ``serving`` its serving inputs (the
    devices' links), ``kv_format`` the counted KV format."""
    disagg = points[points["mode"] == "disagg"]
    if disagg.empty:
        return pd.DataFrame()
    raw = rows.loc[disagg.index]
    pool = prefill_engines(raw, disagg["model"].map(lambda m: models[m].moe is not None))["devices"]
    pool = pool * pd.to_numeric(raw["prefill_num_workers"], errors="coerce")
    in_flight = disagg["in_flight"] * pd.to_numeric(raw["decode_num_workers"], errors="coerce")
    ttft, tpot = raw["silicon_ttft_ms"].to_numpy(dtype=float) * MS, raw["silicon_tpot_ms"].to_numpy(dtype=float) * MS
    rate = in_flight.to_numpy(dtype=float) / (ttft + (disagg["osl"].to_numpy(dtype=float) - 1.0) * tpot)
    isl, peak = disagg["isl"].to_numpy(dtype=float), disagg["peak_flops"].to_numpy(dtype=float)
    flops = np.array([float(prefill_flops(models[m], n)) for m, n in zip(disagg["model"], isl)])
    stored = np.array([float(kv_bytes(models[m], n, dtype_bytes(kv_format))) for m, n in zip(disagg["model"], isl)])
    link = disagg["device"].map(lambda d: _transfer_rate(devices[d], serving)).to_numpy(dtype=float)
    frame = pd.DataFrame({
        "backend": disagg["backend"].to_numpy(), "ttft": ttft,
        "alone": disagg["replica_prefill_flops"].to_numpy(dtype=float) / peak,
        "busy": rate * flops / (pool.to_numpy(dtype=float) * peak),
        "transfer": stored * disagg["stored_kv_ratio"].to_numpy(dtype=float) / link})
    return pd.DataFrame([_row(engine, group) for engine, group in
                         [*frame.groupby("backend", sort=True), (ALL, frame)]])


def _row(engine: str, group: pd.DataFrame) -> dict:
    ratio = group["ttft"] / group["alone"]
    return {"backend": engine, "points": int(len(group)), "ttft_ms": float(group["ttft"].median() / MS),
            "alone_ms": float(group["alone"].median() / MS), "ttft_over_alone": float(ratio.median()),
            "busy": float(group["busy"].median()), "busy_max": float(group["busy"].max()),
            "transfer_share": float((group["transfer"] / group["ttft"]).median()),
            "busy_rank_correlation": float(group["busy"].corr(ratio, method="spearman"))}
