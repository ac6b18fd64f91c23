"""Validation: measured serving points (reported) held against the bounds kvwall derives for their deployments.

``run.validate`` maps each row to a deployment (``layout``), derives its bounds and realizations (``points``),
explains every point below its bound (``below_bound``) and tests the paper's central claim on pairs of weight
formats (``claim``). Beside the bounds, the calibrated estimate: each engine's constants fitted to its points
(``calibration``), their error on points the fit did not see (``estimate_error``), what the measured TPOT is made
of (``cost_shares``) and the estimate where a user asks for it (``calibrated``), all derived from reported data and
never fed into a bound.
"""
