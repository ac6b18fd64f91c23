"""Every table artifact of the pipeline, by path under tables/ (without suffix), and the function that builds it.

Each builder takes the catalogue and the resolved workflow selections and returns a kvwall.render.Table. The folder
is the evidence class of the table's value columns; tables/paper/ holds side-by-side views as the paper prints them.
The registry names each builder's module without importing it, so that a job imports only the table it writes and
the workflow can list, per table, the code that job reads.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from kvwall.inputs.catalog import Catalog
    from kvwall.render import Table

    Builder = Callable[[Catalog, dict], Table]

#: artifact -> (module of kvwall.tables, function in it)
ARTIFACTS: dict[str, tuple[str, str]] = {
    "spec/table1_architectures": ("architecture", "architectures"),
    "derived/table1_kv_per_token": ("architecture", "kv_per_token"),
    "paper/table1": ("architecture", "paper_view"),
    "derived/sliding_window_footprint": ("sliding_window", "sliding_window_footprint"),
    "derived/model_catalogue": ("model_catalogue", "model_catalogue"),
    "assumption/table2_taxonomy": ("taxonomy", "domains"),
    "spec/table3_hardware": ("hardware", "specs"),
    "spec/device_catalogue": ("device_catalogue", "device_catalogue"),
    "derived/table3_ridge": ("hardware", "ridge"),
    "paper/table3": ("hardware", "paper_view"),
    "derived/placement_ceilings": ("hardware", "placement_ceilings"),
    "derived/table4_traffic_crossover": ("crossovers", "traffic_crossover"),
    "derived/capacity_crossover": ("crossovers", "capacity_crossover"),
    "derived/table5_roofline_bounds": ("bounds", "roofline_bounds"),
    "derived/table6_workloads": ("workload_regimes", "workloads"),
    "derived/table7_speedups": ("comparison", "speedups"),
    "assumption/table7_operating_points": ("comparison", "operating_points"),
    "reported/table7_quality": ("comparison", "quality"),
    "paper/table7": ("comparison", "paper_view"),
    "derived/table8_accounting": ("accounting", "accounting"),
    "derived/table8_parameter_check": ("accounting", "parameter_check"),
    "derived/footprint_examples": ("in_text", "footprint_examples"),
    "derived/intensity_limits": ("in_text", "intensity_limits"),
    "derived/placement_gaps": ("in_text", "placement_gaps"),
    "derived/prefix_sharing_w3": ("in_text", "prefix_sharing"),
    "derived/reuse_w4": ("in_text", "reuse"),
    "derived/combinations": ("in_text", "combinations"),
    "derived/deployments": ("deployments", "deployments"),
}


#: Tables of the whole catalogue (every model or device, not the paper's selections alone): their jobs read the
#: catalogue's "catalogue" view, every other table the "paper" view (kvwall.inputs.views).
WHOLE_CATALOGUE = frozenset({"derived/model_catalogue", "spec/device_catalogue", "derived/deployments"})


def view_of(artifact: str) -> str:
    """The name of the view of the catalogue the job building ``artifact`` reads."""
    return "catalogue" if artifact in WHOLE_CATALOGUE else "paper"


#: Tables other rules write (the validation, the measured records, the audit): artifact -> (module, function).
WRITTEN_BY_OTHER_RULES: dict[str, tuple[str, str]] = {
    "reported/serving_measurements": ("kvwall.tables.validation", "measurements"),
    "derived/serving_bounds": ("kvwall.tables.validation", "bounds"),
    "derived/serving_realization": ("kvwall.tables.validation", "realization"),
    "derived/serving_format_claim": ("kvwall.tables.validation", "format_claim"),
    "derived/serving_engine_constants": ("kvwall.tables.validation", "engine_constants"),
    "derived/serving_estimate_error": ("kvwall.tables.validation", "estimate_error"),
    "derived/serving_estimate_offsets": ("kvwall.tables.validation", "estimate_offsets"),
    "derived/serving_error_sources": ("kvwall.tables.validation", "error_sources"),
    "derived/serving_repeatability": ("kvwall.tables.validation", "repeatability"),
    "measured/kv_slope_fits": ("kvwall.tables.kv_slope_fits", "kv_slope_table"),
    "audit/reproduction": ("kvwall.audit", "audit_table"),
    "derived/import_corpus": ("kvwall.tables.import_corpus", "import_corpus"),
    "derived/serving_cost_shares": ("kvwall.tables.validation", "cost_shares"),
    "derived/serving_format_claim_costs": ("kvwall.tables.validation", "format_claim_costs"),
    "derived/plan_ranking": ("kvwall.tables.plan_ranking", "ranking"),
    "derived/plan_ranking_summary": ("kvwall.tables.plan_ranking", "ranking_summary"),
    "derived/plan_workloads": ("kvwall.tables.plan_workloads", "plan_workloads"),
    "derived/plan_frontier": ("kvwall.tables.plan_frontier", "plan_frontier"),
}


def key_of(artifact: str) -> tuple[str, ...] | None:
    """The key columns the builder of ``artifact`` declares (kvwall.render.keyed), read without building the table;
    None for an artifact no builder writes."""
    if artifact in ARTIFACTS:
        module, function = f"kvwall.tables.{ARTIFACTS[artifact][0]}", ARTIFACTS[artifact][1]
    elif artifact in WRITTEN_BY_OTHER_RULES:
        module, function = WRITTEN_BY_OTHER_RULES[artifact]
    else:
        return None
    return getattr(import_module(module), function).key


def module_of(artifact: str) -> str:
    """The dotted name of the module that builds ``artifact``."""
    return f"kvwall.tables.{ARTIFACTS[artifact][0]}"


def families() -> dict[str, tuple[str, ...]]:
    """The table artifacts grouped by the module that builds them (its short name, e.g. ``hardware``), in registry
    order: one job writes a family, since whatever reruns one of its tables (the module's code, the view it reads)
    reruns the others too. A family reads one view."""
    grouped: dict[str, list[str]] = {}
    for artifact, (module, _function) in ARTIFACTS.items():
        grouped.setdefault(module, []).append(artifact)
    for module, artifacts in grouped.items():
        views = {view_of(artifact) for artifact in artifacts}
        if len(views) > 1:
            raise ValueError(f"kvwall.tables.{module} builds tables of the views {sorted(views)}: one job reads one view")
    return {module: tuple(artifacts) for module, artifacts in grouped.items()}


def builder(artifact: str) -> Builder:
    """The function that builds ``artifact``; its module is imported only now."""
    module, function = ARTIFACTS[artifact]
    return getattr(import_module(f"kvwall.tables.{module}"), function)
