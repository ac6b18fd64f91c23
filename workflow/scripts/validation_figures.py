"""Draw every validation figure of kvwall.figures.serving from one validation, each as SVG, PDF and PNG."""

import sys
from importlib import import_module

from kvwall.figures.serving import SERVING_FIGURES
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.validation.run import validate_file

sys.stderr = open(snakemake.log[0], "w")
catalog = load_view(snakemake.input.view).catalog
rows, _, result = validate_file(snakemake.input.measurements, snakemake.input.validation, catalog, snakemake.params.stamps)
for figure, module in SERVING_FIGURES.items():
    drawn = import_module(f"kvwall.figures.serving.{module}").draw(result, rows, catalog)
    save(drawn, [snakemake.output[f"{figure}_{ext}"] for ext in ("svg", "pdf", "png")])
