"""The validation figures: measured serving points (reported) beside the bounds kvwall derives for them.

Each module draws one figure from a kvwall.validation.run.Validation and the rows it was made from.
"""

#: Figure file stem -> module of this package that draws it.
SERVING_FIGURES = {
    "serving_tpot_against_bound": "tpot_against_bound",
    "serving_realization": "realization",
    "serving_gap_fits": "gap",
    "serving_format_claim": "format_claim",
}
