"""Hold every reported serving measurement against its derived bounds; write the validation tables."""

import sys

from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.loader import load_catalog
from kvwall.inputs.serving import read_serving_measurements
from kvwall.inputs.validation_map import load_validation_map
from kvwall.render import write_table
from kvwall.tables import validation as tables
from kvwall.validation.run import validate

sys.stderr = open(snakemake.log[0], "w")
catalog = load_catalog(snakemake.config["config_dir"])
rows = read_serving_measurements(snakemake.input.measurements, snakemake.params.stamps)
result = validate(rows, catalog, load_validation_map(snakemake.input.validation, catalog), load_serving_inputs(catalog))
write_table(tables.measurements(rows), snakemake.output.measurements, folder_class="reported")
write_table(tables.bounds(result.points), snakemake.output.bounds, folder_class="derived")
write_table(tables.realization(result.points), snakemake.output.realization, folder_class="derived")
write_table(tables.gap_fits(result.fits), snakemake.output.fits, folder_class="derived")
write_table(tables.format_claim(result.pairs), snakemake.output.claim, folder_class="derived")
