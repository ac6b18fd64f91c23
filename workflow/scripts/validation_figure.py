"""Draw one validation figure of kvwall.figures.serving and save it as SVG, PDF and PNG."""

import sys
from importlib import import_module

from kvwall.figures.style import save
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.loader import load_catalog
from kvwall.inputs.serving import read_serving_measurements
from kvwall.inputs.validation_map import load_validation_map
from kvwall.validation.run import validate

sys.stderr = open(snakemake.log[0], "w")
catalog = load_catalog(snakemake.config["config_dir"])
rows = read_serving_measurements(snakemake.input.measurements, snakemake.params.stamps)
result = validate(rows, catalog, load_validation_map(snakemake.input.validation, catalog), load_serving_inputs(catalog))
save(import_module(snakemake.params.module).draw(result, rows), snakemake.output)
