"""The few constants of an engine that a decode step and a first token are estimated with (kvwall.model.decode_costs,
kvwall.model.first_token_estimate): fitted to reported measurements (kvwall.validation.calibration), or the
datasheet's own (no fixed cost, every byte and FLOP at its datasheet rate), never used by a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvwall.units import MS, US

#: Significant digits a fitted constant keeps: a fit's last bits follow the CPU's BLAS kernels, its rounding does not.
SIGNIFICANT_DIGITS = 3


@dataclass(frozen=True)
class EngineConstants:
    """Fixed cost per decode step (s), realized fractions of the datasheet HBM bandwidth and dense peak (<= 1), the
    latency of one collective message (s), the fixed cost before a first token (s), a decode step's cost per layer
    a GPU runs (s, its kernel launches) and per sequence of an attention-DP rank (s, its scheduling and sampling),
    the share of the other running requests' prefill wave a request waits for (0 to 1; 1: they all arrive
    together, kvwall.model.first_token_estimate), the extra time per weight byte of fp8 and of fp4 GEMMs over
    bf16's (x: their weights read at 1 / (1 + x) of the rate; their scales and dequantization), and the columns
    n_N of a GEMM per GPU at which its weights stream at half their rate (N columns: at 1 / (1 + n_N / N); a narrow
    GEMM leaves multiprocessors idle)."""

    fixed_step: float
    hbm_fraction: float
    flop_fraction: float
    collective_latency: float
    first_token_fixed: float = 0.0
    layer_step: float = 0.0
    sequence_step: float = 0.0
    wave_share: float = 1.0
    fp8_weight_extra: float = 0.0
    fp4_weight_extra: float = 0.0
    half_rate_columns: float = 0.0

    #: The constants of a decode step, in the order kvwall.validation.calibration fits them, then those of a first
    #: token.
    STEP_NAMES = ("fixed_step", "hbm_fraction", "flop_fraction", "collective_latency", "layer_step", "sequence_step",
                  "fp8_weight_extra", "fp4_weight_extra", "half_rate_columns")
    FIRST_TOKEN_NAMES = ("first_token_fixed", "wave_share")
    NAMES = (*STEP_NAMES, *FIRST_TOKEN_NAMES)

    def values(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in self.NAMES)


#: Each constant's unit as tables/derived/serving_engine_constants prints it and the scale it is divided by.
PRINTED_UNITS = {"fixed_step": ("ms", MS), "hbm_fraction": ("ratio", 1.0), "flop_fraction": ("ratio", 1.0),
                 "collective_latency": ("us", US), "layer_step": ("us", US), "sequence_step": ("us", US),
                 "first_token_fixed": ("ms", MS), "wave_share": ("ratio", 1.0), "fp8_weight_extra": ("ratio", 1.0),
                 "fp4_weight_extra": ("ratio", 1.0), "half_rate_columns": ("columns", 1.0)}


def datasheet_constants(collective_latency: float) -> EngineConstants:
    """The datasheet estimate: no fixed costs, full bandwidth and peak, the stated latency per message, a request
    waiting for the whole wave of prefills."""
    return EngineConstants(0.0, 1.0, 1.0, collective_latency)


def rounded(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` to ``digits`` significant digits (0 stays 0)."""
    if value == 0.0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))
