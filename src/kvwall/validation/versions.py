"""How far one deployment's measured TPOT and TTFT move with the engine's version and the checkpoint: derived from
reported data.

As kvwall.validation.repeatability, a configuration is an agg deployment at one concurrency, and every ordered pair
of two measurements of one configuration gives a ratio of their measured TPOT and one of their TTFT. Here a
configuration's model is its shapes (every field of the catalogue's model but its names and sources: DeepSeek-V3
and DeepSeek-R1 are one), and the pairs are split by what differs between the two measurements: the engine version
(recorded for both and the same, recorded for both and not, or not recorded for one of them) and the checkpoint (one
model, or two models of the same shapes). A model never measured comes with a checkpoint and an engine version of
its own, which no constant fitted on the other models knows: how far two versions of one engine move one deployment
is a floor under that error that no cost of the decode step or of the first token takes out
(tables/derived/serving_transfer, serving_ttft_forms).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.validation.repeatability import CONFIGURATION, ratio_spread

#: The fields of a model that name it or its sources, not its shapes.
IDENTITY = ("id", "name", "hf_id", "provenance")
#: What two measurements' engine versions are, in the table's order.
VERSIONS = ("one version", "two versions", "not recorded")
#: What two measurements' models are, in the table's order.
CHECKPOINTS = ("one model", "two models of the same shapes")
#: The quantities compared, in the table's order, with the column of the measurements each is read from.
QUANTITIES = {"TPOT": "silicon_tpot_ms", "TTFT": "silicon_ttft_ms"}


def shapes_of(models: Mapping) -> dict[str, str]:
    """Each model's id -> the first id (in sorted order) of the models of its shapes (``models``: by id)."""
    first: dict[str, str] = {}
    found = {}
    for model_id in sorted(models):
        model = models[model_id]
        key = repr(tuple(getattr(model, f.name) for f in fields(model) if f.name not in IDENTITY))
        first[model_id] = found.setdefault(key, model_id)
    return first


def version_spread(points: pd.DataFrame, rows: pd.DataFrame, models: Mapping) -> pd.DataFrame:
    """Per quantity of QUANTITIES and kind of pair (VERSIONS x CHECKPOINTS, those that occur): the configurations
    with such a pair and the ratio_spread of its ordered pairs (kvwall.validation.repeatability); ``points``:
    understood points of ``rows`` (kvwall.validation.points), ``models``: the catalogue's."""
    agg = points[points["mode"] == "agg"]
    configuration = agg.assign(model=agg["model"].map(shapes_of(models)))
    codes = configuration.groupby(list(CONFIGURATION), sort=True).ngroup().to_numpy()
    measured = {quantity: rows.loc[agg.index, column].to_numpy(dtype=float) for quantity, column in QUANTITIES.items()}
    version = rows.loc[agg.index, "backend_version"].astype(object).to_numpy()
    model = agg["model"].to_numpy()
    kinds: dict[tuple[str, str], tuple[list[tuple[int, int]], set[int]]] = {}
    for code in np.unique(codes[np.bincount(codes)[codes] > 1]):
        at = np.flatnonzero(codes == code)
        for i in at:
            for j in at[at != i]:
                recorded = not (pd.isna(version[i]) or pd.isna(version[j]))
                versions = VERSIONS[0 if version[i] == version[j] else 1] if recorded else VERSIONS[2]
                pairs, codes_seen = kinds.setdefault((versions, CHECKPOINTS[model[i] != model[j]]), ([], set()))
                pairs.append((i, j))
                codes_seen.add(int(code))
    return pd.DataFrame([{"quantity": quantity, "versions": versions, "checkpoints": checkpoints,
                          "configurations": len(kinds[versions, checkpoints][1]),
                          **_pair_spread(values, kinds[versions, checkpoints][0])}
                         for quantity, values in measured.items()
                         for versions in VERSIONS for checkpoints in CHECKPOINTS if (versions, checkpoints) in kinds])


def _pair_spread(values: np.ndarray, pairs: list[tuple[int, int]]) -> dict[str, float]:
    """ratio_spread of ``values``' ratios over ``pairs`` (positions i, j: values[i] / values[j])."""
    first, second = np.array(pairs).T
    return ratio_spread(values[first] / values[second])
