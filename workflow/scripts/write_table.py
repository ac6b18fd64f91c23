"""Build one table artifact from its view of the catalogue and write it as CSV, Markdown and LaTeX.

Arguments: the CSV, Markdown and LaTeX paths, the view (kvwall.inputs.views) and the artifact (its path under tables/
without suffix).
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.render import write_table
from kvwall.tables import builder

*outputs, view_path, artifact = sys.argv[1:]
view = load_view(view_path)
write_table(builder(artifact)(view.catalog, view.selections), outputs, folder_class=artifact.split("/")[0])
