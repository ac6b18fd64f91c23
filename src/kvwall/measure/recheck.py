"""A record's raw timings judged by today's validity checks (kvwall.measure.analysis): a record written before a
check existed is judged as a run today would be, from the points it kept, without measuring again."""

from __future__ import annotations

from typing import Mapping

from kvwall.measure.analysis import kernel_summary, ordering_check
from kvwall.measure.config import MeasureConfig


def recheck(record: Mapping, config: MeasureConfig) -> dict[str, dict[str, list[str]]]:
    """Per device and kernel of ``record``, the reasons its points fail the checks of ``config`` (empty: valid)."""
    judged = {}
    for device, entry in record["devices"].items():
        spec = entry["spec"]["hbm_bandwidth_gb_per_s"] if entry.get("spec") else None
        ceiling = entry.get("compute_ceiling")
        summaries = {}
        for name, kernel in entry["kernels"].items():
            bounded = ceiling is not None and name in ceiling["applies_to"]
            summaries[name] = {"layout": kernel["layout"], "library": kernel["library"], **kernel_summary(
                kernel["points"], entry["copy"]["bandwidth_gb_per_s"], spec, record["config"]["confidence"],
                config.targets, ceiling["bandwidth_gb_per_s"] if bounded else None, min_r_squared=config.min_r_squared,
                max_spread=config.max_spread, min_growth=config.min_batch_growth)}
        ordering = ordering_check(summaries)
        judged[device] = {name: summary["flags"] + ordering.get(name, []) for name, summary in summaries.items()}
    return judged
