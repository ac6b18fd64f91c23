"""What the calibrated estimate's held-out TPOT error is made of (derived from reported data).

Each understood agg point's log residual r = ln(measured / estimate), the estimate predicted by grouped K-fold
cross-validation (kvwall.validation.estimate_error, the same folds), is corrected by a least-squares fit of r on the
other folds' points, on more and more of what the rows record (STEPS): first the deployment's shape, on which a term
of the decode step could depend (log2 of the sequences in flight, of TP, of isl and osl, and in flight x TP); then
offsets per engine and model, per engine and device, per precision, per layout and per lengths, which no datasheet
gives; last the campaign that measured the row (its measured_on date). After each step, the held-out error of the
corrected estimate: what a correction of that kind could buy at most in a log-linear fit. Where the shape buys little,
no missing term of the step explains the error; what the offsets buy is a lookup that would not carry over to a
model, a device or a campaign the measurements do not hold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvwall.validation.estimate_error import error_statistics, grouped_folds

#: The shape of a deployment as numbers, each a function of the points' frame.
SHAPE = {
    "log2 in flight": lambda f: np.log2(f["in_flight"]),
    "log2 TP": lambda f: np.log2(f["tp"]),
    "log2 isl": lambda f: np.log2(f["isl"]),
    "log2 osl": lambda f: np.log2(f["osl"]),
    "log2 in flight x log2 TP": lambda f: np.log2(f["in_flight"]) * np.log2(f["tp"]),
}
#: Each step: its name, and the categories whose offsets it adds to the shape (the steps before it included).
STEPS = (
    ("the estimate as predicted", None),
    ("shape: in flight, TP, isl, osl", ()),
    ("+ engine x model offsets", ("engine_model",)),
    ("+ engine x device offsets", ("engine_device",)),
    ("+ precision offsets", ("precision",)),
    ("+ layout offsets", ("layout",)),
    ("+ lengths offsets", ("lengths",)),
    ("+ measurement campaign offsets", ("campaign",)),
)


def _categories(points: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    recorded = rows.loc[points.index]
    layout = [points[c].astype(int).astype(str) for c in ("devices", "tp", "pp", "dp", "moe_ep")]
    return pd.DataFrame({
        "engine_model": points["backend"] + " " + points["model"],
        "engine_device": points["backend"] + " " + points["device"],
        "precision": recorded["precision"].fillna("").astype(str),
        "layout": layout[0].str.cat(layout[1:], sep=" "),
        "lengths": points["isl"].astype(int).astype(str) + "/" + points["osl"].astype(int).astype(str),
        "campaign": recorded["measured_on"].fillna("not recorded").astype(str),
    }, index=points.index)


#: The ridge of the least-squares fits: small against any category's point count, it fixes at zero the offset of a
#: category no training point has (and the others' sum, where categories span the intercept).
RIDGE = 1e-3


def _held_out_fit(design: np.ndarray, residual: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Each point's residual as fitted, by least squares with RIDGE, on the points of the other folds."""
    fitted = np.empty_like(residual)
    for fold in np.unique(folds):
        train, test = folds != fold, folds == fold
        a = design[train]
        weights = np.linalg.solve(a.T @ a + RIDGE * np.eye(a.shape[1]), a.T @ residual[train])
        fitted[test] = design[test] @ weights
    return fitted


def error_sources(points: pd.DataFrame, rows: pd.DataFrame, tpot_ms: pd.Series) -> pd.DataFrame:
    """One row per step of STEPS: the agg points held out and the error of their corrected TPOT estimate (median and
    mean of |estimate / measured - 1|, share within 10% and 20%). ``tpot_ms``: the grouped cross-validation's TPOT
    of ``points`` (the understood points of ``rows``)."""
    agg = points[(points["mode"] == "agg") & tpot_ms.notna()]
    measured = rows.loc[agg.index, "silicon_tpot_ms"].to_numpy(float)
    residual = np.log(measured / tpot_ms.loc[agg.index].to_numpy(float))
    folds = grouped_folds(agg).to_numpy()
    categories = _categories(agg, rows)
    columns = [np.ones(len(agg))] + [np.asarray(f(agg), dtype=float) for f in SHAPE.values()]
    out = []
    for step, added in STEPS:
        if added is None:
            corrected = residual
        else:
            for name in added:
                columns += list(pd.get_dummies(categories[name], dtype=float).to_numpy().T)
            corrected = residual - _held_out_fit(np.column_stack(columns), residual, folds)
        out.append({"step": step, **error_statistics(np.abs(np.exp(-corrected) - 1.0))})  # |estimate x exp(fit) / measured - 1|
    return pd.DataFrame(out)
