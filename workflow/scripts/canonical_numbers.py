"""Write CANONICAL-NUMBERS.md and canonical-numbers.json from the catalogue, tier scenarios, reported values and tables."""

import sys
from pathlib import Path

from kvwall.canonical.document import render_markdown, to_json
from kvwall.canonical.build import build_document, load_inputs, table_paths
from kvwall.render import write_text

sys.stderr = open(snakemake.log[0], "w")
document = build_document(load_inputs(snakemake.config["config_dir"], snakemake.input.tiers, table_paths(), snakemake.input.measured))
write_text(Path(snakemake.output.md), render_markdown(document))
write_text(Path(snakemake.output.json), to_json(document))
