"""Render every committed measurement record into tables/measured/kv_slope_fits.{csv,md,tex}.

Arguments: the CSV, Markdown and LaTeX paths, then the records (data/measured/*.json).
"""

import sys

from kvwall.job import finish
from kvwall.measure.record import read_records
from kvwall.render import write_table
from kvwall.tables.kv_slope_fits import kv_slope_table

outputs, records = sys.argv[1:4], sys.argv[4:]
write_table(kv_slope_table(read_records(records)), outputs, folder_class="measured")
finish()
