"""Write the review report (kvwall.report): every figure, table, notebook and CANONICAL-NUMBERS in one HTML file."""

import sys
from pathlib import Path

from kvwall.render import write_text
from kvwall.report.page import build_report

sys.stderr = open(snakemake.log[0], "w")
write_text(Path(snakemake.output[0]), build_report(Path(".")))
