"""The numbers the ``kvwall`` command answers with, each with its unit, evidence class and the equation behind it.

Three questions: a model's footprint (SoK Eq. 1), its crossovers s*(b) and s_cap (SoK section 3.4, Table 4), and
the operating point of a model on a device at a batch and context (SoK sections 3.1-3.5, 5.1). Every value comes
from the model functions of kvwall; this module only names them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from kvwall.inputs.catalog import Assumptions
from kvwall.model.footprint import kv_bytes, kv_bytes_per_token, kv_bytes_per_token_beyond_window, traffic_compression
from kvwall.model.regimes import capacity_crossover, regime, speedup, traffic_crossover
from kvwall.model.roofline import (
    arithmetic_intensity,
    pinned_bandwidth,
    placement_bandwidth,
    resident_weight_bytes,
    ridge_point,
    step_flops,
    step_kv_bytes,
    step_time,
    step_weight_bytes,
    striped_bandwidth,
)
from kvwall.inputs.specs import Device, Model, Sourced
from kvwall.model.equations import (
    BEYOND_WINDOW_EQUATION,
    CAPACITY_EQUATION,
    SPEEDUP_EQUATION,
    TRAFFIC_EQUATION,
    crossover_equation,
    for_model,
    intensity_equation,
    kv_bytes_formula,
    kv_equation,
    step_kv_formula,
)
from kvwall.units import dimension_of, dtype_bytes

#: KV storage widths the operating point quotes a speedup for (SoK Table 5: INT4 and 2-bit rows).
COMPRESSED_KV_DTYPES = ("int4", "int2")


@dataclass(frozen=True)
class Quantity:
    """One number of an answer: value in base units, unit, evidence class, and the equation or source behind it."""

    value: float | None  # None where no value exists (a crossover of weights that do not fit); the basis says why
    unit: str
    evidence: str
    basis: str


def stated(value: float, unit: str, basis: str) -> Quantity:
    """A number the question or config/assumptions.yaml chooses: an assumption."""
    return Quantity(float(value), unit, "assumption", basis)


def derived(value, unit: str, basis: str) -> Quantity:
    """A number computed here by a named equation (None where there is none: the basis says why)."""
    return Quantity(None if value is None else float(value), unit, "derived", basis)


def given(sourced: Sourced) -> Quantity:
    """An input number as its spec file states it, with that file's evidence class and source."""
    return Quantity(sourced.value, dimension_of(sourced.unit), sourced.evidence, sourced.source)


def weights(model: Model, assumptions: Assumptions) -> Quantity:
    """Resident weight bytes P w_p, every MoE expert included (SoK section 1.2: 140 GB for Llama-3-70B); with a format
    per part, each part's share of P at its own width."""
    formats = assumptions.weight_formats
    count = f"P = {model.params_nominal / 1e9:g}e9 ({model.provenance['params_nominal'].evidence})"
    if formats.single is not None:
        basis = f"P w_p, {count}, w_p = {dtype_bytes(formats.single):g} B ({formats.single}, assumption)"
    else:
        basis = (f"sum over parts of P_part w_part, {count} split over the parts by the architecture "
                 f"(kvwall.model.params.weight_part_params), {formats} (the checkpoint's formats)")
    return derived(resident_weight_bytes(model, formats), "bytes", basis)


def crossover_quantity(value: float, basis: str) -> Quantity:
    """A capacity crossover; None where the weights alone exceed the memory (nothing fits, at any context)."""
    if value < 0:
        return derived(None, "tokens", f"{basis}; none: the weights alone exceed the memory")
    return derived(value, "tokens", basis)


def state(model: Model, assumptions: Assumptions) -> Quantity:
    """Constant state one sequence holds in linear-attention or state-space layers, whatever its context."""
    return derived(model.attention.state_bytes, "bytes",
                   f"state elements of every state layer x {assumptions.state_bytes_per_element:g} B "
                   f"({assumptions.state_dtype}, assumption state_dtype); included in the KV of batch x context")


@dataclass(frozen=True)
class Footprint:
    """KV bytes of one storage format: per token (SoK Eq. 1) and for b sequences of s tokens."""

    kv_dtype: str
    kv_bytes_per_element: Quantity
    kv_bytes_per_token: Quantity
    kv_bytes: Quantity


def footprint(model: Model, context: float, batch: int, kv_dtype: str, basis: str) -> Footprint:
    """KV footprint of ``batch`` sequences of ``context`` tokens stored as ``kv_dtype``; ``basis`` says who chose it."""
    width = dtype_bytes(kv_dtype)
    return Footprint(
        kv_dtype=kv_dtype,
        kv_bytes_per_element=stated(width, "bytes", basis),
        kv_bytes_per_token=derived(kv_bytes_per_token(model, width), "bytes/token", kv_equation(model)),
        kv_bytes=derived(kv_bytes(model, context, width, batch), "bytes", kv_bytes_formula(model)),
    )


@dataclass(frozen=True)
class Crossovers:
    """s*(b) of a model at one batch, and s_cap(b) on each device (negative: the weights alone do not fit)."""

    batch: Quantity
    traffic_crossover: Quantity
    capacity_crossover: dict[str, Quantity]


def crossovers(model: Model, devices: list[Device], batch: int, assumptions: Assumptions) -> Crossovers:
    """Traffic and capacity crossovers at ``batch`` in the baseline weight and KV precision (SoK section 3.4)."""
    w_kv, formats = assumptions.kv_bytes_per_element, assumptions.weight_formats
    resident = resident_weight_bytes(model, formats)
    step_weights = step_weight_bytes(model, formats, batch)
    return Crossovers(
        batch=stated(batch, "count", "the batch asked for"),
        traffic_crossover=derived(traffic_crossover(model, step_weights, w_kv, batch), "tokens",
                                  crossover_equation(model, TRAFFIC_EQUATION)),
        capacity_crossover={
            d.id: crossover_quantity(float(capacity_crossover(model, d.hbm_capacity, resident, w_kv, batch)),
                                     crossover_equation(model, CAPACITY_EQUATION))
            for d in devices
        },
    )


@dataclass(frozen=True)
class OperatingPoint:
    """A model on a device at batch b and context s: its bytes, crossovers, regime, roofline and speedups.

    The regime follows SoK sections 3.5 and 5.1: capacity-bound when one sequence of s tokens does not fit beside
    the weights (s > s_cap at b = 1, or the weights alone exceed HBM), else weight-bound below s*(b) and kv-bound
    above. A batch that outgrows one device is realized by sharding (SoK Table 5 caption); ``devices_needed`` says
    over how many.
    """

    model: Model
    device: Device
    placement: str
    regime: str
    context: Quantity
    batch: Quantity
    weight_bytes: Quantity
    step_weight_bytes: Quantity
    kv_bytes_per_token: Quantity
    kv_bytes_per_token_beyond_window: Quantity | None
    step_kv_bytes: Quantity
    memory_needed: Quantity
    hbm_capacity: Quantity
    devices_needed: Quantity
    traffic_crossover: Quantity
    capacity_crossover: Quantity
    batch_capacity_crossover: Quantity
    arithmetic_intensity: Quantity
    ridge_point: Quantity
    striped_bandwidth: Quantity
    pinned_bandwidth: Quantity
    bandwidth: Quantity
    step_time: Quantity
    speedup_int4: Quantity | None  # None where the cache is already as narrow
    speedup_int2: Quantity | None

    def numbers(self) -> dict[str, Quantity]:
        """Every number of the answer, by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Quantity)}


def operating_point(
    model: Model, device: Device, batch: int, context: float, assumptions: Assumptions, placement: str, context_basis: str
) -> OperatingPoint:
    """Evaluate the decode-step model at one operating point (SoK sections 3.1-3.5)."""
    w_p, w_kv = assumptions.weight_formats, assumptions.kv_bytes_per_element
    per_token = kv_bytes_per_token(model, w_kv)
    resident = resident_weight_bytes(model, w_p)
    step_weights = float(step_weight_bytes(model, w_p, batch))
    step_kv = float(step_kv_bytes(model, context, batch, w_kv))
    step_kv_terms = step_kv_formula(model)
    s_star = float(traffic_crossover(model, step_weights, w_kv, batch))
    s_cap = float(capacity_crossover(model, device.hbm_capacity, resident, w_kv))
    beta = placement_bandwidth(device, placement)
    precision = assumptions.compute_precision
    flops = float(step_flops(model, context, batch))
    speedups = {
        dtype: derived(speedup(step_weights, step_kv, traffic_compression(assumptions.kv_bits, 8 * dtype_bytes(dtype))),
                       "ratio", f"{SPEEDUP_EQUATION}, bytes only, c = w / w_q for {dtype}")
        if dtype_bytes(dtype) < w_kv else None
        for dtype in COMPRESSED_KV_DTYPES
    }
    return OperatingPoint(
        model=model,
        device=device,
        placement=placement,
        regime=str(regime(context, s_star, s_cap)),
        context=stated(context, "tokens", context_basis),
        batch=stated(batch, "count", "the batch asked for"),
        weight_bytes=weights(model, assumptions),
        step_weight_bytes=derived(step_weights, "bytes", "SoK section 3.1: weights read once per step (MoE: experts touched)"),
        kv_bytes_per_token=derived(per_token, "bytes/token",
                                   f"{kv_equation(model)}; w_kv = {w_kv:g} B ({assumptions.kv_dtype}, assumption)"),
        kv_bytes_per_token_beyond_window=derived(kv_bytes_per_token_beyond_window(model, w_kv), "bytes/token",
                                                 BEYOND_WINDOW_EQUATION) if model.attention.has_window else None,
        step_kv_bytes=derived(step_kv, "bytes", for_model(model, f"SoK section 3.1: {step_kv_terms}")),
        memory_needed=derived(resident + step_kv, "bytes", for_model(model, f"P w_p + {step_kv_terms}")),
        hbm_capacity=given(device.provenance["hbm_capacity"]),
        devices_needed=derived(math.ceil((resident + step_kv) / device.hbm_capacity), "count",
                               "memory needed / HBM, weights and KV sharded evenly"),
        traffic_crossover=derived(s_star, "tokens", crossover_equation(model, TRAFFIC_EQUATION)),
        capacity_crossover=crossover_quantity(s_cap, crossover_equation(model, f"{CAPACITY_EQUATION} at b = 1")),
        batch_capacity_crossover=crossover_quantity(float(capacity_crossover(model, device.hbm_capacity, resident, w_kv, batch)),
                                                    crossover_equation(model, CAPACITY_EQUATION)),
        arithmetic_intensity=derived(arithmetic_intensity(model, context, batch, w_p, w_kv), "FLOP/byte",
                                     intensity_equation(model)),
        ridge_point=derived(ridge_point(device, precision), "FLOP/byte", f"SoK Table 3: I* = dense {precision} FLOP/s / HBM bandwidth"),
        striped_bandwidth=derived(striped_bandwidth(device), "bytes/s", "SoK section 3.3: pages striped over every partition"),
        pinned_bandwidth=derived(pinned_bandwidth(device), "bytes/s", "SoK section 3.3: pages pinned to one partition"),
        bandwidth=derived(beta, "bytes/s", f"SoK section 3.3: {placement} placement"),
        step_time=derived(step_time(flops, step_weights + step_kv, device.dense_flops[precision], beta), "s",
                          "SoK section 3.3: T_step = max(B / beta, F / F_peak)"),
        speedup_int4=speedups["int4"],
        speedup_int2=speedups["int2"],
    )
