"""The format claim's calibrated speedups held out: each pair (kvwall.validation.claim) priced with constants its two
points were not fitted on (derived from reported data).

The folds are those of the grouped cross-validation (kvwall.validation.estimate_error.grouped_folds): the two points
of a pair differ in weight format, so they are two groups, in one fold or in two. A pair is priced with its engine's
constants fitted on every fold but the one or two that hold its points: where both lie in one fold, the very
constants that predict that fold's points held out; where they lie in two, constants fitted on the other three folds.
The held-out speedup is the decode step (kvwall.model.decode_costs) at the wider format over the step at the
narrower, both with those constants. A pair whose engine has too few training points is not priced (NaN).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import decode_step
from kvwall.model.engine_constants import EngineConstants
from kvwall.units import MS
from kvwall.validation.calibration import CalibrationError, calibrate
from kvwall.validation.estimate_error import grouped_folds


def pair_folds(pairs: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """The grouped fold of each pair's wider and narrower point (columns fold_wide, fold_narrow)."""
    fold_of = pd.Series(grouped_folds(points).to_numpy(), index=points["id"].to_numpy())
    return pd.DataFrame({"fold_wide": fold_of.loc[pairs["id_wide"]].to_numpy(),
                         "fold_narrow": fold_of.loc[pairs["id_narrow"]].to_numpy()}, index=pairs.index)


def left_out_constants(points: pd.DataFrame, measured: pd.DataFrame, tokens: float, engine: str,
                       folds: pd.Series, left_out: frozenset) -> EngineConstants | None:
    """``engine``'s constants fitted on its points outside the folds ``left_out`` (``measured``: tpot and ttft, ms);
    None where too few remain."""
    train = points[(points["backend"] == engine) & ~folds.isin(left_out)]
    chosen = measured.loc[train.index]
    try:
        return calibrate(train, chosen["tpot"].to_numpy() * MS, tokens, engine, chosen["ttft"].to_numpy() * MS).constants
    except CalibrationError:
        return None


def held_out_speedups(pairs: pd.DataFrame, points: pd.DataFrame, measured: pd.DataFrame, tokens: float,
                      fold_fits: Mapping[tuple[str, int], EngineConstants] = MappingProxyType({})) -> pd.DataFrame:
    """Per pair: its points' folds, how many folds were left out (1 or 2) and the held-out calibrated speedup.
    ``fold_fits``: constants already fitted without one fold, per (engine, fold) (kvwall.validation.estimate_error.
    predictions fills them), used where a pair's two points lie in that fold instead of fitting them again."""
    folds = grouped_folds(points)
    out = pair_folds(pairs, points)
    out["folds_left_out"] = (out["fold_wide"] != out["fold_narrow"]).astype(int) + 1
    out["held_out_speedup"] = np.nan
    by_id = points.set_index("id")
    keys = [(engine, frozenset((int(a), int(b)))) for engine, a, b in
            zip(pairs["backend"], out["fold_wide"], out["fold_narrow"])]
    for engine, left_out in sorted(set(keys), key=lambda k: (k[0], sorted(k[1]))):
        known = fold_fits.get((engine, next(iter(left_out)))) if len(left_out) == 1 else None
        constants = known or left_out_constants(points, measured, tokens, engine, folds, left_out)
        if constants is None:
            continue
        chosen = pairs.index[[key == (engine, left_out) for key in keys]]
        wide = decode_step(by_id.loc[pairs.loc[chosen, "id_wide"]], constants)
        narrow = decode_step(by_id.loc[pairs.loc[chosen, "id_narrow"]], constants)
        out.loc[chosen, "held_out_speedup"] = wide / narrow
    return out
