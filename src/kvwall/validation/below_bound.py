"""Points measured below their bound: never dropped, each explained by a documented diagnosis (config/validation.yaml).

A measurement faster than the hardware's lower bound says the bound assumed something the engine did not do: more
sequences running at once than it ran (capacity), a KV format wider than it stored (kv-format), one token per step
where several were accepted (speculative-decoding), or a row whose own numbers disagree (contradicts-itself). Like
the reproduction audit's documented mismatches, every such point must match a documented entry, and every entry
must still match a point: an undocumented one, or a documented one that stopped happening, is an error.
"""

from __future__ import annotations

import pandas as pd

from kvwall.inputs.validation_map import ValidationMap


class UndocumentedBelowBound(ValueError):
    """Points below their bound with no diagnosis, or a diagnosis that matches no point any more."""


def _matches(points: pd.DataFrame, where) -> pd.Series:
    selected = pd.Series(True, index=points.index)
    for column, value in where.items():
        selected &= points[column].eq(value)
    return selected


def diagnose(points: pd.DataFrame, vmap: ValidationMap, strict: bool = True) -> pd.Series:
    """The diagnosis of each point below its TPOT bound (None elsewhere), from the first documented entry it matches.

    ``strict`` (the committed data): raises UndocumentedBelowBound naming the first undocumented point, or the first
    entry that matches none. Otherwise (a user's file) points without a diagnosis keep None.
    """
    below = points["tpot_realization"].gt(1.0)
    diagnosis = pd.Series(None, index=points.index, dtype=object)
    for index, entry in enumerate(vmap.below_bound):
        matched = below & _matches(points, entry.where) & diagnosis.isna()
        if strict and not matched.any():
            raise UndocumentedBelowBound(
                f"{vmap.file}: below_bound[{index}]: no point below its bound matches {dict(entry.where)} any more; "
                "remove the entry or say why it stopped happening"
            )
        diagnosis[matched] = entry.diagnosis
    undocumented = below & diagnosis.isna()
    if strict and undocumented.any():
        first = points[undocumented].iloc[0]
        raise UndocumentedBelowBound(
            f"{vmap.file}: below_bound: {int(undocumented.sum())} point(s) measured below their TPOT bound have no "
            f"diagnosis, first {first['id']} ({first['model']} on {first['device']}, {first['backend']}, "
            f"{first['weight_format']} weights, {first['mode']}): document why under below_bound"
        )
    return diagnosis
