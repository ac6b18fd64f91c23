"""Hold every reported serving measurement against its derived bounds; write the validation tables."""

import sys

from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.views import load_view
from kvwall.render import write_table
from kvwall.tables import validation as tables
from kvwall.validation.estimate_error import assess
from kvwall.validation.run import validate_file

sys.stderr = open(snakemake.log[0], "w")
catalog = load_view(snakemake.input.view).catalog
rows, vmap, result = validate_file(snakemake.input.measurements, snakemake.input.validation, catalog, snakemake.params.stamps)
write_table(tables.measurements(rows), snakemake.output.measurements, folder_class="reported")
write_table(tables.bounds(result.points), snakemake.output.bounds, folder_class="derived")
write_table(tables.realization(result.points), snakemake.output.realization, folder_class="derived")
write_table(tables.gap_fits(result.fits), snakemake.output.fits, folder_class="derived")
write_table(tables.format_claim(result.pairs), snakemake.output.claim, folder_class="derived")
calibrations, _, summary = assess(result.understood, rows, vmap.tokens_per_step, load_serving_inputs(catalog).collective_latency)
write_table(tables.engine_constants(calibrations), snakemake.output.constants, folder_class="derived")
write_table(tables.estimate_error(summary), snakemake.output.error, folder_class="derived")
