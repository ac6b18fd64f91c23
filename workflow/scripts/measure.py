"""`snakemake measure`: run the KV-slope benchmark (full sweep) and write its record under data/measured/."""

import sys

from kvwall.inputs.loader import load_catalog
from kvwall.measure.config import load_measure_config
from kvwall.measure.record import default_path, free_path, write_record
from kvwall.measure.run import measure
from kvwall.measure.summary import summary_lines

sys.stderr = open(snakemake.log[0], "w")
catalog = load_catalog(snakemake.config["config_dir"])
record = measure(load_measure_config(snakemake.input.measure_config, catalog), catalog)
path = write_record(record, free_path(default_path(record)))
summary = "\n".join([*summary_lines(record), f"record: {path}"])
print(summary, file=sys.stderr)
print(summary)
