"""How well the calibrated estimate predicts measured points it did not see: derived from reported data.

Per engine (kvwall.validation.calibration), TPOT (kvwall.model.decode_costs) and TTFT
(kvwall.model.first_token_estimate) are predicted in every way of SCHEMES: at datasheet rates (kvwall.model.engine_constants,
uncalibrated), with constants fitted on every point (in sample), by grouped K-fold cross-validation (points that
differ only in concurrency, kvwall.validation.points.GROUP, stay in one fold; folds drawn with a fixed seed), the
same with the offsets of kvwall.validation.offsets (fitted, like the constants, on the other folds' points alone),
and leaving one model, one device or one engine version out; then what a planner meets on a model or device it has
never measured: leaving one model or one device out with the offsets of the other models' or devices' points (an
offset is keyed by the engine, mode and model first, so a held-out model keeps none of its own: only those of its
engine that do not name it would carry), and leaving one model family out (the model_type of the models' configs,
config/validation.yaml families: a model and its siblings held out together). Each is summarized per engine and mode by the absolute
percentage error |estimate / measured - 1|: its median and mean and the share of points within 10% and 20%, and by
the 10th and 90th percentiles of measured / estimate (BAND: the span of 80% of the points). An engine with too few
points for a fit (kvwall.validation.calibration.MIN_POINTS) has no constants (uncalibrated_engines names it): its
points are priced at datasheet rates alone. A held-out set whose engine has too few training points is not
predicted, and not counted; nor is a point whose engine version is not recorded, when versions are left out.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import decode_costs, decode_step, prefill_stretch
from kvwall.model.engine_constants import EngineConstants, datasheet_constants
from kvwall.model.first_token_estimate import first_token_estimate
from kvwall.units import MS
from kvwall.validation.calibration import MIN_POINTS, Calibration, CalibrationError, calibrate
from kvwall.validation.offsets import fit_offsets, fitted_offsets, point_keys, sequences_per_rank
from kvwall.validation.points import GROUP

#: Folds of the grouped cross-validation and the seed that draws them.
FOLDS, SEED = 5, 0
#: The ways a point is predicted, in the order they are listed.
SCHEMES = ("datasheet", "in sample", f"grouped {FOLDS}-fold", "leave one model out", "leave one device out",
           "leave one engine version out", f"grouped {FOLDS}-fold, with offsets", "leave one model out, with offsets",
           "leave one device out, with offsets", "leave one model family out")
#: The quantities predicted, each with its column in the frames of predictions and measured times.
QUANTITIES = {"TPOT": "tpot", "TTFT": "ttft"}
#: The quantiles of measured / estimate each summary gives: the band 80% of the points fall in.
BAND = (0.1, 0.9)


def _predict(points: pd.DataFrame, constants: EngineConstants, tokens: float) -> tuple[np.ndarray, np.ndarray]:
    """TPOT and TTFT (ms) of ``points`` with ``constants``."""
    return decode_step(points, constants) / tokens / MS, first_token_estimate(points, constants, tokens) / MS


def stretches(points: pd.DataFrame, constants: EngineConstants) -> pd.Series:
    """The prefill stretch of each point's decode step with ``constants`` (kvwall.model.decode_costs.prefill_stretch):
    what the offsets' prefill slopes are fitted against."""
    return pd.Series(prefill_stretch(decode_costs(points, constants)), index=points.index)


def _calibrate(points: pd.DataFrame, measured: pd.DataFrame, tokens: float, name: str) -> Calibration:
    chosen = measured.loc[points.index]
    return calibrate(points, chosen["tpot"].to_numpy() * MS, tokens, name, chosen["ttft"].to_numpy() * MS)


def uncalibrated_engines(points: pd.DataFrame) -> dict[str, str]:
    """Each engine of ``points`` (understood points) with too few of them for a fit, and why, in one line."""
    counts = points.groupby("backend", sort=True).size()
    return {engine: f"{engine}: {count} understood measured points, fewer than the {MIN_POINTS} a fit needs: no "
                    "constants, its points priced at datasheet rates alone"
            for engine, count in counts.items() if count < MIN_POINTS}


def engine_calibrations(points: pd.DataFrame, measured: pd.DataFrame, tokens: float) -> dict[str, Calibration]:
    """One calibration per engine on every understood point of it (``measured``: tpot and ttft in ms), but those
    uncalibrated_engines names."""
    skipped = uncalibrated_engines(points)
    return {engine: _calibrate(group, measured, tokens, engine)
            for engine, group in points.groupby("backend", sort=True) if engine not in skipped}


def grouped_folds(points: pd.DataFrame, columns: tuple[str, ...] = GROUP) -> pd.Series:
    """The fold of each point: its group's place (the group: ``columns``, by default the points that differ only in
    concurrency) in a seeded permutation of the sorted groups, modulo FOLDS."""
    first, *rest = (points[column].astype(str) for column in columns)
    keys = first.str.cat(rest, sep="|") if rest else first
    groups = np.sort(keys.unique())
    order = np.random.RandomState(SEED).permutation(groups.size)
    return keys.map(dict(zip(groups, order % FOLDS)))


def held_out(points: pd.DataFrame, measured: pd.DataFrame, tokens: float, label: pd.Series,
             fits: dict | None = None) -> pd.DataFrame:
    """TPOT and TTFT (ms) of each point from constants fitted on its engine's points of other labels; ``fits``, where
    given, receives those constants per (engine, label held out)."""
    out = pd.DataFrame(np.nan, index=points.index, columns=["tpot", "ttft"])
    for (engine, held), test in points.groupby(["backend", label], sort=True):
        train = points[(points["backend"] == engine) & (label != held)]
        try:
            fitted = _calibrate(train, measured, tokens, engine)
        except CalibrationError:
            continue
        if fits is not None:
            fits[(engine, held)] = fitted.constants
        tpot, ttft = _predict(test, fitted.constants, tokens)
        out.loc[test.index, "tpot"], out.loc[test.index, "ttft"] = tpot, ttft
    return out


def log_residuals(measured: pd.DataFrame, predicted: pd.DataFrame) -> dict[str, pd.Series]:
    """ln(measured / estimate) of each of QUANTITIES, NaN where either is not a positive time."""
    def log_ratio(column: str) -> pd.Series:
        ratio = measured[column].astype(float) / predicted[column].astype(float)
        return np.log(ratio.where(ratio > 0.0))
    return {quantity: log_ratio(column) for quantity, column in QUANTITIES.items()}


def with_offsets(points: pd.DataFrame, measured: pd.DataFrame, tokens: float, label: pd.Series,
                 held: pd.DataFrame, fits: dict, pseudo_count: float) -> pd.DataFrame:
    """TPOT and TTFT (ms) of each point held out by ``label``: ``held``, its prediction by the constants ``fits``
    holds per (engine, label held out), times the offsets (kvwall.validation.offsets) of the residuals of the
    engine's points of the other labels against the same constants, at the prefill stretches those constants give."""
    keys, sequences = point_keys(points), sequences_per_rank(points)
    out = pd.DataFrame(np.nan, index=points.index, columns=["tpot", "ttft"])
    for (engine, held_label), constants in sorted(fits.items()):
        engine_points = points["backend"] == engine
        train, test = points[engine_points & (label != held_label)], points[engine_points & (label == held_label)]
        tpot, ttft = _predict(train, constants, tokens)
        trained = pd.DataFrame({"tpot": tpot, "ttft": ttft}, index=train.index)
        lookup = fitted_offsets(keys.loc[train.index], log_residuals(measured.loc[train.index], trained),
                                sequences.loc[train.index], stretches(train, constants), pseudo_count)
        stretched = stretches(test, constants)
        for quantity, column in QUANTITIES.items():
            factor = np.exp(lookup.log_factors_of(quantity, keys.loc[test.index], sequences.loc[test.index], stretched))
            out.loc[test.index, column] = held.loc[test.index, column].to_numpy(dtype=float) * factor
    return out


def held_out_with_offsets(points: pd.DataFrame, measured: pd.DataFrame, tokens: float, label: pd.Series,
                          pseudo_count: float, fits: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """TPOT and TTFT (ms) of each point held out by ``label`` (held_out), and the same times the offsets of the
    other labels' points (with_offsets); ``fits``, where given, receives the constants per (engine, label held out)."""
    fits = {} if fits is None else fits
    plain = held_out(points, measured, tokens, label, fits)
    return plain, with_offsets(points, measured, tokens, label, plain, fits, pseudo_count)


def predictions(points: pd.DataFrame, measured: pd.DataFrame, tokens: float, latency: float,
                calibrations: dict[str, Calibration], versions: pd.Series, pseudo_count: float,
                families: pd.Series, fold_fits: dict | None = None) -> dict[str, pd.DataFrame]:
    """Per scheme (SCHEMES), the TPOT and TTFT (ms) it predicts for each understood point (``measured``: the
    reported tpot and ttft in ms; ``versions``: each point's engine version; ``pseudo_count``: the offsets'
    shrinkage, kvwall.validation.offsets; ``families``: each point's model family); ``fold_fits``, where given,
    receives the grouped cross-validation's constants per (engine, fold held out)."""
    datasheet = pd.DataFrame(np.column_stack(_predict(points, datasheet_constants(latency), tokens)),
                             index=points.index, columns=["tpot", "ttft"])
    in_sample = pd.DataFrame(np.nan, index=points.index, columns=["tpot", "ttft"])
    for engine, group in points.groupby("backend", sort=True):
        if engine in calibrations:
            tpot, ttft = _predict(group, calibrations[engine].constants, tokens)
            in_sample.loc[group.index, "tpot"], in_sample.loc[group.index, "ttft"] = tpot, ttft
    grouped, offset = held_out_with_offsets(points, measured, tokens, grouped_folds(points), pseudo_count, fold_fits)
    model, model_offset = held_out_with_offsets(points, measured, tokens, points["model"], pseudo_count)
    device, device_offset = held_out_with_offsets(points, measured, tokens, points["device"], pseudo_count)
    return {
        SCHEMES[0]: datasheet,
        SCHEMES[1]: in_sample,
        SCHEMES[2]: grouped,
        SCHEMES[3]: model,
        SCHEMES[4]: device,
        SCHEMES[5]: held_out(points, measured, tokens, versions.astype(str)),
        SCHEMES[6]: offset,
        SCHEMES[7]: model_offset,
        SCHEMES[8]: device_offset,
        SCHEMES[9]: held_out(points, measured, tokens, families.astype(str)),
    }


def error_statistics(error: pd.Series | np.ndarray) -> dict[str, float]:
    """Points, median and mean of the absolute percentage errors ``error``, and the shares within 10% and 20%."""
    error = np.asarray(error, dtype=float)
    return {"points": int(error.size), "median_error": float(np.median(error)), "mean_error": float(error.mean()),
            "within_10": float((error <= 0.10).mean()), "within_20": float((error <= 0.20).mean())}


def _summary(error: pd.Series, ratio: pd.Series) -> dict[str, float]:
    low, high = np.quantile(ratio.to_numpy(dtype=float), BAND)
    return {**error_statistics(error), "measured_over_estimate_p10": float(low), "measured_over_estimate_p90": float(high)}


def error_summary(points: pd.DataFrame, measured: pd.DataFrame, predicted: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per scheme, quantity (TPOT, TTFT), engine (and 'all') and mode: the error of its predicted points and
    the BAND quantiles of their measured / estimate."""
    rows = []
    for scheme in SCHEMES:
        for quantity, column in QUANTITIES.items():
            estimate = predicted[scheme][column]
            frame = pd.DataFrame({"backend": points["backend"], "mode": points["mode"],
                                  "error": (estimate / measured[column] - 1.0).abs(),
                                  "ratio": measured[column] / estimate}).dropna()
            for engine in (*sorted(frame["backend"].unique()), "all"):
                chosen = frame if engine == "all" else frame[frame["backend"] == engine]
                for mode, part in chosen.groupby("mode", sort=True):
                    rows.append({"scheme": scheme, "quantity": quantity, "backend": engine, "mode": mode,
                                 **_summary(part["error"], part["ratio"])})
    return pd.DataFrame(rows)


def in_sample_offsets(points: pd.DataFrame, measured: pd.DataFrame, in_sample: pd.DataFrame,
                      calibrations: dict[str, Calibration], pseudo_count: float) -> pd.DataFrame:
    """The table of offsets (kvwall.validation.offsets.fit_offsets) of every point's residual against its engine's
    constants fitted on every point (``in_sample``: their TPOT and TTFT, ms), at the stretches they give; none for
    an engine without constants."""
    points = points[points["backend"].isin(list(calibrations))]
    stretched = pd.concat([stretches(group, calibrations[engine].constants)
                           for engine, group in points.groupby("backend", sort=True)]).loc[points.index]
    return fit_offsets(point_keys(points), log_residuals(measured.loc[points.index], in_sample.loc[points.index]),
                       sequences_per_rank(points), stretched, pseudo_count)


def measured_times(points: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """The reported TPOT and TTFT (ms) of ``points``, as the fits read them (columns tpot, ttft)."""
    return pd.DataFrame({"tpot": rows.loc[points.index, "silicon_tpot_ms"], "ttft": rows.loc[points.index, "silicon_ttft_ms"]})


def model_families(points: pd.DataFrame, families: Mapping[str, str]) -> pd.Series:
    """Each point's model family (``families``: model id -> family, config/validation.yaml); a model it does not
    name is its own family."""
    return points["model"].map(lambda model: families.get(model, model))


def assess(understood: pd.DataFrame, rows: pd.DataFrame, tokens: float, latency: float, pseudo_count: float,
           families: Mapping[str, str], fold_fits: dict | None = None
           ) -> tuple[dict[str, Calibration], dict[str, pd.DataFrame], pd.DataFrame]:
    """The engines' calibrations, every scheme's predictions and their error summary for the understood points of
    ``rows`` (their reported silicon_tpot_ms and silicon_ttft_ms); ``pseudo_count`` and ``fold_fits`` as
    predictions takes them, ``families`` as model_families."""
    measured = measured_times(understood, rows)
    calibrations = engine_calibrations(understood, measured, tokens)
    versions = rows.loc[understood.index, "backend_version"] if "backend_version" in rows else pd.Series("", index=understood.index)
    predicted = predictions(understood, measured, tokens, latency, calibrations, versions, pseudo_count,
                            model_families(understood, families), fold_fits)
    return calibrations, predicted, error_summary(understood, measured, predicted)
