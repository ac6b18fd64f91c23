"""Draw one validation figure of kvwall.figures.serving and save it as SVG, PDF and PNG."""

import sys
from importlib import import_module

from kvwall.figures.style import save
from kvwall.inputs.loader import load_catalog
from kvwall.validation.run import validate_file

sys.stderr = open(snakemake.log[0], "w")
catalog = load_catalog(snakemake.config["config_dir"])
rows, _, result = validate_file(snakemake.input.measurements, snakemake.input.validation, catalog, snakemake.params.stamps)
save(import_module(snakemake.params.module).draw(result, rows), snakemake.output)
