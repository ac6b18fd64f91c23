"""Write CANONICAL-NUMBERS.md, canonical-numbers.json and canonical-numbers.tex from the catalogue, tier scenarios, reported values and tables."""

import sys
from pathlib import Path

from kvwall.canonical.document import render_markdown, to_json
from kvwall.canonical.latex import render_latex
from kvwall.canonical.build import build_document, load_inputs, table_paths
from kvwall.render import write_text

sys.stderr = open(snakemake.log[0], "w")
document = build_document(load_inputs(snakemake.config["config_dir"], snakemake.input.tiers, table_paths(), snakemake.input.measured))
write_text(Path(snakemake.output.md), render_markdown(document))
write_text(Path(snakemake.output.json), to_json(document))
write_text(Path(snakemake.output.tex), render_latex(document))
