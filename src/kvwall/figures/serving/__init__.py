"""The validation figures: measured serving points (reported) beside the bounds kvwall derives for them.

Each module of SERVING_FIGURES draws one figure from a kvwall.validation.run.Validation, the rows it was made from
and the catalogue (the names of its models and devices: a figure shows names, never ids); cost_shares draws
COST_SHARES_FIGURE from the rows of tables/derived/serving_cost_shares and the catalogue, so that its job reads the
table instead of fitting the engines' constants again.
"""

#: Figure file stem -> module of this package that draws it.
SERVING_FIGURES = {
    "serving_tpot_against_bound": "tpot_against_bound",
    "serving_realization": "realization",
    "serving_format_claim": "format_claim",
}
#: The figure of what the measured TPOT is made of (kvwall.figures.serving.cost_shares).
COST_SHARES_FIGURE = "serving_cost_shares"

#: How each engine (the measurements' backend) is named in a figure.
ENGINE_NAMES = {"sglang": "SGLang", "trtllm": "TensorRT-LLM", "vllm": "vLLM"}


def engine_name(backend: str) -> str:
    """An engine's name; an engine not listed keeps its id."""
    return ENGINE_NAMES.get(backend, backend)


def tick_name(name: str) -> str:
    """A device's name as a tick label: a qualifier in brackets on a line of its own ('GB200\\n(per GPU)')."""
    return name.replace(" (", "\n(", 1)
