"""Hold every reported serving measurement against its derived bounds; write the validation tables.

Arguments: the tables' CSV, Markdown and LaTeX paths (three per table, each named tables/<class>/<table>.<ext>),
then the view (kvwall.inputs.views) and the validation the validation job saved (kvwall.validation.run).
"""

import sys
from pathlib import Path

from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.render import write_table
from kvwall.tables import validation as tables
from kvwall.validation.claim_costs import claim_cost_summary, claim_costs
from kvwall.validation.cost_shares import cost_shares
from kvwall.validation.disagg_load import disagg_load
from kvwall.validation.error_sources import error_sources
from kvwall.validation.estimate_error import FOLDS, assess, in_sample_offsets, measured_times, uncalibrated_engines
from kvwall.validation.held_out_claim import held_out_speedups
from kvwall.validation.repeatability import repeatability
from kvwall.validation.run import load_validation
from kvwall.validation.versions import version_spread

*outputs, view_path, validated = sys.argv[1:]
catalog = load_view(view_path).catalog
rows, vmap, result = load_validation(validated)
serving = load_serving_inputs(catalog)
for reason in uncalibrated_engines(result.understood).values():
    print(f"kvwall: warning: {reason}", file=sys.stderr)
fold_fits = {}  # the grouped cross-validation's constants, which the held-out claim prices with again
calibrations, predicted, summary = assess(result.understood, rows, vmap.tokens_per_step,
                                          serving.collective_latency, vmap.offset_pseudo_count,
                                          vmap.families, fold_fits)
held_out = held_out_speedups(result.pairs, result.understood, measured_times(result.understood, rows), vmap.tokens_per_step,
                             fold_fits)
built = {
    "reported/serving_measurements": tables.measurements(rows),
    "derived/serving_bounds": tables.bounds(result.points),
    "derived/serving_realization": tables.realization(result.points),
    "derived/serving_format_claim": tables.format_claim(result.pairs),
    "derived/serving_engine_constants": tables.engine_constants(calibrations),
    "derived/serving_estimate_error": tables.estimate_error(summary),
    "derived/serving_estimate_offsets": tables.estimate_offsets(
        in_sample_offsets(result.understood, measured_times(result.understood, rows), predicted["in sample"],
                          calibrations, vmap.offset_pseudo_count), vmap.offset_pseudo_count),
    "derived/serving_error_sources": tables.error_sources(
        error_sources(result.understood, rows, predicted[f"grouped {FOLDS}-fold"]["tpot"])),
    "derived/serving_repeatability": tables.repeatability(repeatability(result.understood, rows)),
    "derived/serving_version_spread": tables.version_spread(version_spread(result.understood, rows, catalog.models)),
    "derived/serving_disagg_load": tables.disagg_load(
        disagg_load(result.understood, rows, catalog.models, catalog.devices, serving, vmap.kv_format)),
    "derived/serving_cost_shares": tables.cost_shares(
        cost_shares(result.understood, rows.loc[result.understood.index, "silicon_tpot_ms"], calibrations,
                    vmap.tokens_per_step)),
    "derived/serving_format_claim_costs": tables.format_claim_costs(
        claim_cost_summary(claim_costs(result.pairs, result.understood, calibrations, vmap.tokens_per_step,
                                       held_out["held_out_speedup"]))),
}
for start in range(0, len(outputs), 3):
    paths = outputs[start:start + 3]
    artifact = Path(paths[0]).relative_to("tables").with_suffix("").as_posix()
    write_table(built[artifact], paths, folder_class=artifact.split("/")[0])
finish()
