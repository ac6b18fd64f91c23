"""Draw figures/measured_kv_slope.{svg,pdf,png}: committed records' fits beside the reported GB10 fits."""

import sys

from kvwall.figures.style import save
from kvwall.inputs.loader import load_catalog
from kvwall.measure.config import load_measure_config
from kvwall.figures.measured_kv_slope import kv_slope_figure
from kvwall.measure.record import read_records
from kvwall.inputs.reported import load_reported

sys.stderr = open(snakemake.log[0], "w")
catalog = load_catalog(snakemake.config["config_dir"])
settings = load_measure_config(snakemake.input.measure_config, catalog)
reported = load_reported(catalog.files["reported"])
figure = kv_slope_figure(read_records(snakemake.params.records), reported, settings.reported_platform, settings.reported_fits)
save(figure, snakemake.output)
