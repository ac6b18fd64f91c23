"""Build a family of table artifacts (kvwall.tables.families) from their view of the catalogue and write each as CSV,
Markdown and LaTeX.

Arguments: the 3N paths (each of the N artifacts' CSV, Markdown and LaTeX in turn), the view (kvwall.inputs.views),
then the N artifacts (each its path under tables/ without suffix).
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.render import write_table
from kvwall.tables import builder

arguments = sys.argv[1:]
count = (len(arguments) - 1) // 4
outputs, view_path, artifacts = arguments[:3 * count], arguments[3 * count], arguments[3 * count + 1:]
if len(arguments) != 4 * count + 1:
    raise SystemExit(f"write_tables.py: N artifacts need 3N output paths and a view, got {len(arguments)} arguments")
view = load_view(view_path)
for index, artifact in enumerate(artifacts):
    table = builder(artifact)(view.catalog, view.selections)
    write_table(table, outputs[3 * index:3 * index + 3], folder_class=artifact.split("/")[0])
finish()
