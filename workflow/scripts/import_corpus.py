"""Import every config of the corpus of published configs; write tables/derived/import_corpus.

Arguments: the CSV, Markdown and LaTeX paths, the view (kvwall.inputs.views), config/published_params.yaml, then the
corpus's config files.
"""

import sys
from pathlib import Path

from kvwall.inputs.published_params import load_published_params
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.render import write_table
from kvwall.tables.import_corpus import import_corpus

outputs, (view_path, published), configs = sys.argv[1:4], sys.argv[4:6], sys.argv[6:]
table = import_corpus(load_view(view_path).catalog, [Path(path) for path in configs], load_published_params(published))
write_table(table, outputs, folder_class="derived")
finish()
