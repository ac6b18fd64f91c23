"""Which form of the agg TTFT the measurements follow: derived from reported data.

The benchmark's clients are a closed loop: each of the c in flight sends its next request when its last one ends. How
long a request waits for the prefills of the others depends on how their arrivals bunch, which no row records. Each
form of FORMS prices an agg TTFT as the fixed cost t0, the wait for a running slot (kvwall.model.first_token_estimate
.capacity_wait) and the prefills it waits for and its own, P being one prompt's prefill on the engine (its FLOPs per
GPU over the realized peak f P, at least the weights its tokens touch over the realized bandwidth, and the decode step
of each step its chunks ride where the engine runs them beside the batch's decodes, kvwall.model.prompt_steps) and b
the batch that runs:

    a whole wave          (1 + (b - 1) / 2) P          every request arrives with the others
    alone                 P                            no request ever waits for another's prefill
    random arrivals       P (1 + rho / (2 (1 - rho)))  arrivals spread at random over a cycle: a queue of one server
                                                       busy P a prompt (M/D/1), rho = c P / (osl x TPOT) of its time
                                                       (c requests every cycle of osl steps), at most RHO
    a share of the wave,  (1 + w (b - 1) / 2) P_A      as the estimate, P_A without the decode steps its chunks ride
    prompts apart
    a share of the wave,  (1 + w (b - 1) / 2) P_F      as the estimate, P_F without the floor of its weights' read
    FLOPs alone
    a share of the wave   (1 + w (b - 1) / 2) P        a share w of the others' wave, 0 to 1, fitted: the estimate's
    (the estimate)                                     (kvwall.model.first_token_estimate)

Per engine t0 (and w) are fitted as kvwall.validation.calibration fits them (fit_first_token), at the engine's
decode-step constants; in sample, and leaving one model out (every constant fitted on the engine's points of the other
models, as kvwall.validation.estimate_error leaves one out). The form with the lowest error leaving one model out is
the one a model never measured is best priced with.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import numpy as np
import pandas as pd

from kvwall.model.decode_costs import decode_step
from kvwall.model.engine_constants import EngineConstants
from kvwall.model.first_token_estimate import capacity_wait
from kvwall.validation.calibration import MIN_POINTS, calibrate, first_token_terms, fit_first_token
from kvwall.validation.estimate_error import error_statistics

#: The largest share of its time the random-arrivals form lets the prefill server be busy (its wait grows without
#: bound as the share nears 1).
RHO = 0.95
#: The estimate's form, the form that prices its prompts apart from the batch's decodes, and the one that prices a
#: prefill at its FLOPs alone.
ESTIMATE, APART = "a share of the wave (the estimate)", "a share of the wave, prompts apart from the decodes"
FLOPS_ALONE = "a share of the wave, prefills at their FLOPs alone"
#: The forms, in the table's order, each with the share of the wave it holds (None: fitted).
FORMS = {"a whole wave": 1.0, "alone": 0.0, "random arrivals": 0.0, APART: None, FLOPS_ALONE: None, ESTIMATE: None}


def form_terms(form: str, points: pd.DataFrame, constants: EngineConstants, tokens: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """The TTFT of ``form`` at ``constants`` with no fixed cost and no share of the wave, and what a whole wave adds
    (s), over the agg ``points`` (kvwall.validation.calibration.first_token_terms, the queue of random arrivals in
    place of the wave for that form, no decode step ridden for APART, no weights' floor for FLOPS_ALONE)."""
    if form == APART:
        points = points.assign(prompt_steps=0.0)
    if form == FLOPS_ALONE:
        points = points.assign(prefill_weight_read=0.0)
    alone, wave = first_token_terms(points, constants, tokens)
    if form != "random arrivals":
        return alone, wave
    prefill = alone - capacity_wait(points, constants, tokens)  # one prompt's, P
    cycle = points["osl"].to_numpy(dtype=float) * decode_step(points, constants) / tokens
    rho = np.minimum(points["in_flight"].to_numpy(dtype=float) * prefill / cycle, RHO)
    return alone + prefill * rho / (2.0 * (1.0 - rho)), np.zeros(len(points))


def _priced(form: str, seen: pd.DataFrame, seen_ttft: np.ndarray, unseen: pd.DataFrame, constants: EngineConstants,
            tokens: float) -> np.ndarray:
    """The TTFT (s) of ``unseen`` in ``form``, its constants fitted on ``seen`` and their measured ``seen_ttft``."""
    values, _ = fit_first_token(*form_terms(form, seen, constants, tokens), seen_ttft, FORMS[form])
    alone, wave = form_terms(form, unseen, constants, tokens)
    return values["first_token_fixed"] + alone + values["wave_share"] * wave


def ttft_forms(points: pd.DataFrame, tpot_s: np.ndarray, ttft_s: np.ndarray, tokens: float,
               left_out: Mapping[tuple[str, str], EngineConstants] = MappingProxyType({})) -> pd.DataFrame:
    """Per form of FORMS and scheme (in sample, leaving one model out): the error statistics of the agg TTFT
    (kvwall.validation.estimate_error.error_statistics) over the engines with enough agg points; ``points`` the
    understood points (kvwall.validation.points), ``tpot_s`` and ``ttft_s`` their measured times (s). ``left_out``:
    decode-step constants already fitted without one (engine, model) (kvwall.validation.transfer fills them), used
    instead of fitting them again."""
    errors: dict[tuple[str, str], list[np.ndarray]] = {}
    position = pd.Series(np.arange(len(points)), index=points.index)
    for engine, group in points.groupby("backend", sort=True):
        at = position.loc[group.index].to_numpy()
        tpot, ttft = tpot_s[at], ttft_s[at]
        agg = (group["mode"] == "agg").to_numpy()
        if agg.sum() < MIN_POINTS:
            continue
        constants = calibrate(group, tpot, tokens, engine).constants
        for form in FORMS:
            estimate = _priced(form, group[agg], ttft[agg], group[agg], constants, tokens)
            errors.setdefault((form, "in sample"), []).append(np.abs(estimate / ttft[agg] - 1.0))
        models = group["model"].to_numpy()
        for model in np.unique(models[agg]):
            train, test = models != model, (models == model) & agg
            if len(group[train]) < MIN_POINTS or (train & agg).sum() < MIN_POINTS:
                continue
            fitted = left_out.get((engine, model)) or calibrate(group[train], tpot[train], tokens, engine).constants
            for form in FORMS:
                estimate = _priced(form, group[train & agg], ttft[train & agg], group[test], fitted, tokens)
                errors.setdefault((form, "leave one model out"), []).append(np.abs(estimate / ttft[test] - 1.0))
    return pd.DataFrame([{"form": form, "scheme": scheme, **error_statistics(np.concatenate(errors[form, scheme]))}
                         for form in FORMS for scheme in ("in sample", "leave one model out")
                         if (form, scheme) in errors])
