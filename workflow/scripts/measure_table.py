"""Render every committed measurement record into tables/measured/kv_slope_fits.{csv,md,tex}."""

import sys

from kvwall.measure.record import read_records
from kvwall.tables.kv_slope_fits import kv_slope_table
from kvwall.render import write_table

sys.stderr = open(snakemake.log[0], "w")
write_table(kv_slope_table(read_records(snakemake.params.records)), snakemake.output, folder_class="measured")
