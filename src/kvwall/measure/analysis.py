"""From raw timings to what a record states: the KV-slope fit per kernel, its distance from its bounds, validity.

A kernel cannot stream KV faster than the device copies memory: a bandwidth above the copy bandwidth (or the
device's specification) is a bug in the measurement, and marks the run invalid. So does a fit that KV bytes do not
explain (R^2 below validity.r_squared of config/measure.yaml), and a paged kernel that streams KV faster than the
contiguous one of the same library: gathering blocks through a table cannot beat reading them in order, and a kernel
whose time does not grow with the batch at a fixed context (its KV bytes do): something other than KV, launches or
idle multiprocessors, sets its pace, and its slope over the grid mixes contexts, not bytes. Where a kernel's products are
slower than the copy (kvwall.measure.compute_ceiling), its roofline bound is the lower of the two, and the record
says which one binds. Medians over repeats stand for each point, so a stray slow repeat does not move the fit.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from kvwall.measure.fit import bandwidth_from_slope, fit_line
from kvwall.units import GB, GFLOP_PER_S, GiB, MS


def bandwidth(nbytes: float, seconds: float) -> float:
    """Decimal GB/s."""
    return nbytes / seconds / GB


def copy_summary(times: Sequence[float], bytes_counted: int) -> dict:
    """Median copy time and the bandwidth it gives."""
    median = float(np.median(times))
    return {"median_s": median, "bandwidth_gb_per_s": bandwidth(bytes_counted, median)}


def ceiling_summary(times: Sequence[float], bytes_counted: int, flops_counted: float) -> dict:
    """Median time of the compute ceiling's products, the KV bandwidth they allow, and their FLOP rate."""
    summary = copy_summary(times, bytes_counted)
    return {**summary, "gflop_per_s": flops_counted / summary["median_s"] / GFLOP_PER_S}


def roofline_bound(top: Mapping, compute_bandwidth: float | None) -> dict:
    """At the largest point: min(copy bandwidth beside it, compute ceiling), which binds, and the point's fraction.

    With a ceiling, also the best a kernel can do that never overlaps loading a tile with multiplying it, as one
    numpy thread cannot: each byte costs 1 / copy + 1 / ceiling.
    """
    copy_bandwidth = top["copy_bandwidth_gb_per_s"]
    binding = "compute" if compute_bandwidth is not None and compute_bandwidth < copy_bandwidth else "copy"
    bound = compute_bandwidth if binding == "compute" else copy_bandwidth
    no_overlap = None if compute_bandwidth is None else 1.0 / (1.0 / copy_bandwidth + 1.0 / compute_bandwidth)
    return {"bandwidth_gb_per_s": bound, "binding": binding, "largest_point_fraction": top["bandwidth_gb_per_s"] / bound,
            "no_overlap_gb_per_s": no_overlap}


def point_summary(kv_bytes: int, times: Sequence[float], copy_times: Sequence[float], copy_bytes: int) -> dict:
    """One sweep point: median step time, the KV bandwidth it implies, and the copy bandwidth measured beside it."""
    median = float(np.median(times))
    return {
        "kv_gib": kv_bytes / GiB,
        "median_ms": median / MS,
        "bandwidth_gb_per_s": bandwidth(kv_bytes, median),
        "copy_bandwidth_gb_per_s": bandwidth(copy_bytes, float(np.median(copy_times))),
    }


def kernel_fit(points: Sequence[Mapping], confidence: float) -> dict:
    """t = a + b * KV_GiB over the points' medians; b's bandwidth 1 GiB / b."""
    fit = fit_line([p["kv_gib"] for p in points], [p["median_ms"] for p in points], confidence)
    return {
        "intercept_ms": fit.intercept,
        "intercept_ci_ms": list(fit.intercept_ci),
        "slope_ms_per_gib": fit.slope,
        "slope_ci_ms_per_gib": list(fit.slope_ci),
        "confidence": fit.confidence,
        "r_squared": fit.r_squared,
        "n": fit.n,
        "kv_bandwidth_gb_per_s": bandwidth_from_slope(fit.slope) if fit.slope > 0 else None,
    }


def largest_point(points: Sequence[Mapping]) -> Mapping:
    """The point with the most KV (the last of equals)."""
    return max(reversed(points), key=lambda p: p["kv_gib"])


def bound_check(fit: Mapping, points: Sequence[Mapping], copy_bandwidth: float, spec_bandwidth: float | None) -> list[str]:
    """The reasons a kernel's numbers cannot be right; empty when none."""
    flags = []
    fitted = fit["kv_bandwidth_gb_per_s"]
    if fitted is None:
        flags.append("slope is not positive: KV size does not explain step time")
    elif fitted > copy_bandwidth:
        flags.append(f"fitted KV bandwidth {fitted:.1f} GB/s exceeds the copy bandwidth {copy_bandwidth:.1f} GB/s")
    top = largest_point(points)
    if top["bandwidth_gb_per_s"] > top["copy_bandwidth_gb_per_s"]:
        flags.append(f"largest point streams {top['bandwidth_gb_per_s']:.1f} GB/s, above the copy bandwidth "
                     f"{top['copy_bandwidth_gb_per_s']:.1f} GB/s measured beside it")
    if spec_bandwidth is not None:
        fastest = max([p["bandwidth_gb_per_s"] for p in points] + [fitted or 0.0])
        if fastest > spec_bandwidth:
            flags.append(f"KV bandwidth {fastest:.1f} GB/s exceeds the device specification {spec_bandwidth:.1f} GB/s")
    return flags


def fit_check(fit: Mapping, min_r_squared: float) -> list[str]:
    """A fit too poor to quote a slope from; empty when R^2 reaches ``min_r_squared``."""
    if fit["r_squared"] >= min_r_squared:
        return []
    return [f"poor fit: R^2 {fit['r_squared']:.3f} is below {min_r_squared:g} (validity.r_squared of the measure "
            "settings), so step time is not explained by KV bytes and the slope means nothing"]


def batch_growth(points: Sequence[Mapping]) -> float | None:
    """How the step grows with the batch at a fixed context, as a share of proportional growth, at the median context.

    At each context run at two batches or more, (t(b_max) / t(b_min) - 1) / (b_max / b_min - 1): 1 where the step is
    all KV (its bytes grow as the batch), 0 where the batch does not matter. None where no context has two batches,
    or the points do not say their batch and context.
    """
    if not all("batch" in point and "context" in point for point in points):
        return None
    by_context: dict[int, list[Mapping]] = {}
    for point in points:
        by_context.setdefault(point["context"], []).append(point)
    growths = []
    for runs in by_context.values():
        smallest, largest = min(runs, key=lambda p: p["batch"]), max(runs, key=lambda p: p["batch"])
        if largest["batch"] > smallest["batch"]:
            growths.append((largest["median_ms"] / smallest["median_ms"] - 1) / (largest["batch"] / smallest["batch"] - 1))
    return float(np.median(growths)) if growths else None


def growth_check(points: Sequence[Mapping], min_growth: float) -> list[str]:
    """A kernel whose step does not grow with the batch at a fixed context; empty at ``min_growth`` or more."""
    growth = batch_growth(points)
    if growth is None or growth >= min_growth:
        return []
    return [f"time does not grow with the batch: at a fixed context the step grows {growth:.1%} as fast as its KV bytes "
            f"(median over contexts), below {min_growth:g} (validity.batch_growth of the measure settings); the kernel is "
            "paced by something other than the KV it reads (launches, or multiprocessors left idle at small batch)"]


def repeat_spread(points: Sequence[Mapping]) -> float:
    """The typical spread of a kernel's repeats: the median over its points of (slowest - fastest) / median time."""
    spreads = sorted((max(p["times_s"]) - min(p["times_s"])) / float(np.median(p["times_s"])) for p in points)
    return float(np.median(spreads))


def spread_check(points: Sequence[Mapping], max_spread: float) -> list[str]:
    """Repeats too far apart to fit a slope to (another process took the cores between them); empty within
    ``max_spread``."""
    spread = repeat_spread(points)
    if spread <= max_spread:
        return []
    return [f"repeats disagree: at a typical point the slowest is {100 * spread:.0f}% of the median slower than the "
            f"fastest, above {100 * max_spread:g}% (validity.spread of the measure settings); the machine was not quiet"]


def ordering_check(kernels: Mapping[str, Mapping]) -> dict[str, list[str]]:
    """Per paged kernel, the reason its slope is implausible: below the contiguous slope of the same library, with
    the two confidence intervals apart (a block-table gather reads the same bytes as a contiguous read, and more)."""
    contiguous = {k["library"]: (name, k) for name, k in kernels.items() if k["layout"] == "contiguous"}
    flags: dict[str, list[str]] = {}
    for name, kernel in kernels.items():
        if not kernel["layout"].startswith("paged") or kernel["library"] not in contiguous:
            continue
        reference_name, reference = contiguous[kernel["library"]]
        paged_high = kernel["fit"]["slope_ci_ms_per_gib"][1]
        contiguous_low = reference["fit"]["slope_ci_ms_per_gib"][0]
        if paged_high < contiguous_low:
            flags[name] = [f"implausible kernel ordering: the paged slope {kernel['fit']['slope_ms_per_gib']:.2f} ms/GiB "
                           f"(CI up to {paged_high:.2f}) is below {reference_name}'s {reference['fit']['slope_ms_per_gib']:.2f} "
                           f"ms/GiB (CI from {contiguous_low:.2f}): paged KV cannot stream faster than contiguous KV"]
    return flags


def target_check(fit: Mapping, points: Sequence[Mapping], targets: Mapping[str, float]) -> dict:
    """How far the kernel is from each target (benchmark output, never an assertion)."""
    top = largest_point(points)
    reached = {
        "copy_fraction_at_largest_point": top["bandwidth_gb_per_s"] / top["copy_bandwidth_gb_per_s"],
        "r_squared": fit["r_squared"],
    }
    return {name: {"target": goal, "value": reached[name], "met": bool(reached[name] >= goal)} for name, goal in targets.items()}


def kernel_summary(points: Sequence[Mapping], copy_bandwidth: float, spec_bandwidth: float | None,
                   confidence: float, targets: Mapping[str, float], compute_bandwidth: float | None = None, *,
                   min_r_squared: float, max_spread: float = math.inf, min_growth: float = 0.0) -> dict:
    """Fit, distance from the copy and roofline bounds, target check and validity of one kernel on one device."""
    fit = kernel_fit(points, confidence)
    top = largest_point(points)
    flags = (bound_check(fit, points, copy_bandwidth, spec_bandwidth) + fit_check(fit, min_r_squared)
             + spread_check(points, max_spread) + growth_check(points, min_growth))
    return {
        "fit": fit,
        "copy_fraction": None if fit["kv_bandwidth_gb_per_s"] is None else fit["kv_bandwidth_gb_per_s"] / copy_bandwidth,
        "largest_point": {"kv_gib": top["kv_gib"], "bandwidth_gb_per_s": top["bandwidth_gb_per_s"],
                          "copy_fraction": top["bandwidth_gb_per_s"] / top["copy_bandwidth_gb_per_s"]},
        "roofline": roofline_bound(top, compute_bandwidth),
        "repeat_spread": repeat_spread(points),
        "batch_growth": batch_growth(points),
        "targets": target_check(fit, points, targets),
        "flags": flags,
        "valid": not flags,
    }
