"""Write CANONICAL-NUMBERS.md, canonical-numbers.json and canonical-numbers.tex from the catalogue, tier scenarios,
reported values and tables.

Arguments: the Markdown, JSON and LaTeX paths, the view (kvwall.inputs.views), config/tiers.yaml, then the committed
measurement tables (Markdown).
"""

import sys
from pathlib import Path

from kvwall.canonical.build import build_document, load_inputs, table_paths
from kvwall.canonical.document import render_markdown, to_json
from kvwall.canonical.latex import render_latex
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.render import write_text

markdown, json_path, latex, view_path, tiers, *measured = sys.argv[1:]
document = build_document(load_inputs(load_view(view_path), tiers, table_paths(), measured))
write_text(Path(markdown), render_markdown(document))
write_text(Path(json_path), to_json(document))
write_text(Path(latex), render_latex(document))
finish()
