"""Build a family of table artifacts (kvwall.tables.families) from their view of the catalogue and write each as CSV,
Markdown and LaTeX.

Arguments: the view (kvwall.inputs.views), the N artifacts (each its path under tables/ without suffix), then the 3N
paths, each artifact's CSV, Markdown and LaTeX in turn.
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.render import write_table
from kvwall.tables import builder

view_path, *arguments = sys.argv[1:]
count = len(arguments) // 4
artifacts, outputs = arguments[:count], arguments[count:]
if len(outputs) != 3 * count:
    raise SystemExit(f"write_tables.py: {count} artifacts need {3 * count} output paths, got {len(outputs)}")
view = load_view(view_path)
for index, artifact in enumerate(artifacts):
    table = builder(artifact)(view.catalog, view.selections)
    write_table(table, outputs[3 * index:3 * index + 3], folder_class=artifact.split("/")[0])
