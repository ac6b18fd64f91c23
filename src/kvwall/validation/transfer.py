"""Which operation's efficiency carries over to a model no fit saw, and which does not: derived from reported data.

The offsets (kvwall.validation.offsets) learn per engine, model, device and layout how well an engine runs one
model's shapes; for a model left out of every fit none of that is known. Here the agg TPOT is predicted leaving one
model out (each engine's constants fitted on its points of the other models, as kvwall.validation.calibration fits
them: least squares on the relative TPOT errors, within bounds that keep each constant physical) with the estimate's
own costs (kvwall.model.decode_costs), without its cost per layer, per sequence, per weight byte of fp8 and fp4
GEMMs, of narrow GEMMs, or all of them (held at 0), and with each candidate cost of TERMS added, one more constant
per engine. A cost whose efficiency transfers lowers that error; one that a model's own shapes set, learnt on the
other models, does not. TERMS, each a cost per GPU per step (s):

    latent     x_A x the KV cost, latent caches only  latent (MLA) attention at 1 / (1 + x_A) of the KV rate, 0 to 20
    moe        x_M x the weight cost, MoE models only MoE weights at 1 / (1 + x_M) of the weight rate, 0 to 20
    attention  x_P x the KV cost / blocks             decode attention's parallelism: its kernels split the work into
                                                      blocks of one sequence and one KV head (blocks: sequences per
                                                      attention-DP rank x KV heads per GPU, 1 for a latent cache),
                                                      and too few blocks leave the GPU's multiprocessors idle: the KV
                                                      read at 1 / (1 + x_P / blocks) of its rate, x_P 0 to 1,000

Per model, its median error with a fixed cost per step alone (BASELINE) and with the estimate's costs, and with the
latter the median and the 10th to 90th percentiles of measured / estimate. A model whose median is far from 1 is
run at an efficiency its shapes or its measurements' campaign set and the other models' do not tell (an offset of its
own would take it out); its band is what varies within the model, by device, layout and format, that no constant per
model would take out.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import CostInputs, cost_inputs, priced_costs, step_of
from kvwall.model.engine_constants import EngineConstants
from kvwall.model.sharding import kv_heads_per_device
from kvwall.validation.calibration import MIN_POINTS, ExtraCosts, fit_step
from kvwall.validation.estimate_error import BAND, error_statistics

#: Per term: its lower and upper bound, start and scale.
TERMS = {"latent": (0.0, 20.0, 0.5, 1.0), "moe": (0.0, 20.0, 0.5, 1.0), "attention": (0.0, 1000.0, 8.0, 1.0)}
#: The estimate's costs: its constants, and the terms added to it.
ESTIMATE = "the estimate's costs"
#: The fit with a fixed cost per step alone (the per-layer, per-sequence, weight formats' and narrow GEMMs' constants
#: held at 0).
BASELINE = "without the costs per layer, per sequence, weight format and GEMM width"
#: The constants of the weight formats' costs.
FORMATS = ("fp8_weight_extra", "fp4_weight_extra")
#: The fits tried, each with the words its row names it by, in the table's order: the constants of
#: EngineConstants.STEP_NAMES held at 0, and the terms added.
TERM_SETS = {ESTIMATE: ((), ()), "without the cost per layer": (("layer_step",), ()),
             "without the cost per sequence": (("sequence_step",), ()),
             "without the weight formats' costs": (FORMATS, ()),
             "without the cost of narrow GEMMs": (("half_rate_columns",), ()),
             BASELINE: (("layer_step", "sequence_step", *FORMATS, "half_rate_columns"), ()),
             "latent attention's efficiency": ((), ("latent",)), "MoE weights' efficiency": ((), ("moe",)),
             "attention's parallelism": ((), ("attention",))}
#: What each model's cache is called in the per-model table, by its attention's type.
CACHE_KINDS = {"FullAttention": "GQA", "SlidingWindowAttention": "window", "LatentAttention": "latent",
               "LayerStack": "layer stack"}


def term_inputs(points: pd.DataFrame, models: Mapping) -> pd.DataFrame:
    """Per point (kvwall.validation.points' columns): whether its cache is latent and its model MoE, and its decode
    attention's blocks (sequences per attention-DP rank x KV heads per GPU, kvwall.model.sharding.kv_heads_per_device;
    one head for a latent cache) (``models``: the catalogue's, by id)."""
    model = points["model"].map(models)
    heads = [kv_heads_per_device(m, int(tp)) or 1 for m, tp in zip(model, points["tp"])]
    return pd.DataFrame({
        "latent": model.map(lambda m: type(m.attention).__name__ == "LatentAttention").to_numpy(dtype=float),
        "moe": model.map(lambda m: m.moe is not None).to_numpy(dtype=float),
        "attention_blocks": points["sequences_per_rank"].to_numpy(dtype=float) * np.asarray(heads, dtype=float)},
        index=points.index)


def term_arrays(inputs: pd.DataFrame) -> dict[str, np.ndarray]:
    """term_inputs' columns as arrays, read once for every pricing of the same points."""
    return {name: inputs[name].to_numpy() for name in inputs.columns}


def term_costs(costs: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
               values: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Seconds per step per GPU of each term of ``values`` (name -> its constant), beside the named ``costs`` of the
    same points (kvwall.model.decode_costs) and their term_arrays ``inputs``."""
    priced = {"latent": lambda x: x * costs["kv"] * inputs["latent"],
              "moe": lambda x: x * costs["weights"] * inputs["moe"],
              "attention": lambda x: x * costs["kv"] / inputs["attention_blocks"]}
    return {name: priced[name](value) for name, value in values.items()}


def step_with_terms(points: CostInputs, inputs: Mapping[str, np.ndarray], constants: EngineConstants,
                    values: Mapping[str, float]) -> np.ndarray:
    """The decode step per GPU (s) of the points ``points`` holds (kvwall.model.decode_costs.cost_inputs): the
    named costs' sum plus each term's cost."""
    costs = priced_costs(points, constants)
    return step_of(costs) + sum(term_costs(costs, inputs, values).values(), np.zeros(len(points.idle)))


def fit_terms(points: CostInputs, inputs: Mapping[str, np.ndarray], tpot_s: np.ndarray, tokens: float,
              terms: tuple[str, ...], held: tuple[str, ...] = ()) -> tuple[EngineConstants, dict[str, float]] | None:
    """One engine's constants but ``held`` (names of EngineConstants.STEP_NAMES, held at 0) and each of ``terms``'
    fitted on ``points`` and their measured TPOT (s), as kvwall.validation.calibration fits its own (fit_step); None
    where there are fewer than MIN_POINTS."""
    if len(points.idle) < MIN_POINTS:
        return None
    extra = ExtraCosts(terms, tuple(TERMS[t] for t in terms),
                       lambda costs, values: sum(term_costs(costs, inputs, values).values(), np.zeros(len(points.idle))))
    constants, values, _ = fit_step(points, np.asarray(tpot_s, dtype=float), tokens, held, extra if terms else None)
    return constants, values


def leave_one_model_out(points: pd.DataFrame, inputs: pd.DataFrame, tpot_s: np.ndarray, tokens: float,
                        terms: tuple[str, ...], held: tuple[str, ...] = (),
                        fits: dict[tuple[str, str], EngineConstants] | None = None) -> np.ndarray:
    """The TPOT (s) of each agg point with its engine's constants (but ``held``) and ``terms`` fitted on the
    engine's points (agg and disagg, as kvwall.validation.calibration fits) of the other models (NaN where too few
    are left, and for a disagg point); ``fits``, where given, gets the constants fitted without each (engine,
    model)."""
    predicted = np.full(len(points), np.nan)
    position = pd.Series(np.arange(len(points)), index=points.index)
    priced, arrays = cost_inputs(points), term_arrays(inputs)
    for (engine, model), test in points[points["mode"] == "agg"].groupby(["backend", "model"], sort=True):
        train = (points["backend"] == engine).to_numpy() & (points["model"] != model).to_numpy()
        fitted = fit_terms(priced.take(train), {name: a[train] for name, a in arrays.items()}, tpot_s[train], tokens,
                           terms, held)
        if fitted is not None:
            if fits is not None:
                fits[engine, model] = fitted[0]
            at = position.loc[test.index].to_numpy()
            predicted[at] = step_with_terms(priced.take(at), {name: a[at] for name, a in arrays.items()}, *fitted) / tokens
    return predicted


def transfer(points: pd.DataFrame, tpot_s: np.ndarray, models: Mapping, tokens: float,
             estimate_fits: dict[tuple[str, str], EngineConstants] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Over the agg points of ``points`` and their measured TPOT (s): per fit of TERM_SETS, the leave-one-model-out
    error (kvwall.validation.estimate_error.error_statistics); per model, its cache kind, MLP (dense or MoE), points,
    its median error with BASELINE and with ESTIMATE, and with ESTIMATE the median and BAND quantiles of measured /
    estimate. ``estimate_fits``, where given, gets ESTIMATE's constants fitted without each (engine, model)."""
    agg = (points["mode"] == "agg").to_numpy()
    inputs, every = term_inputs(points, models), np.asarray(tpot_s, dtype=float)
    predicted = {name: leave_one_model_out(points, inputs, every, tokens, terms, held,
                                           estimate_fits if name == ESTIMATE else None)[agg]
                 for name, (held, terms) in TERM_SETS.items()}
    chosen, measured = points[agg], every[agg]
    rows = []
    for name in TERM_SETS:
        error = np.abs(predicted[name] / measured - 1.0)
        rows.append({"terms": name, **error_statistics(error[np.isfinite(error)])})
    by_model = []
    for model, at in chosen.groupby("model", sort=True).indices.items():
        ratio, baseline = measured[at] / predicted[ESTIMATE][at], predicted[BASELINE][at] / measured[at]
        ratio, baseline = ratio[np.isfinite(ratio)], baseline[np.isfinite(baseline)]
        if ratio.size == 0:
            continue
        low, high = np.quantile(ratio, BAND)
        by_model.append({"model": model, "cache": CACHE_KINDS[type(models[model].attention).__name__],
                         "mlp": "dense" if models[model].moe is None else "MoE", "points": int(ratio.size),
                         "median_error_baseline": float(np.median(np.abs(baseline - 1.0))),
                         "median_error": float(np.median(np.abs(ratio - 1.0) / ratio)),
                         "measured_over_estimate": float(np.median(ratio)),
                         "measured_over_estimate_p10": float(low), "measured_over_estimate_p90": float(high)})
    return pd.DataFrame(rows), pd.DataFrame(by_model)
