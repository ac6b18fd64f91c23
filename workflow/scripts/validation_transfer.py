"""Which operation's efficiency carries over to a model the fit never saw, and which form of the agg TTFT: write
tables/derived/serving_transfer and serving_transfer_models (kvwall.validation.transfer) and serving_ttft_forms
(kvwall.validation.ttft_forms).

Arguments: the three tables' CSV, Markdown and LaTeX paths, then the view (kvwall.inputs.views) and the validation the
validation job saved (kvwall.validation.run).
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.render import write_table
from kvwall.tables import validation as tables
from kvwall.units import MS
from kvwall.validation.run import load_validation
from kvwall.validation.transfer import transfer
from kvwall.validation.ttft_forms import ttft_forms

*outputs, view_path, validated = sys.argv[1:]
catalog = load_view(view_path).catalog
rows, vmap, result = load_validation(validated)
understood = result.understood
tpot, ttft = (rows.loc[understood.index, column].to_numpy(dtype=float) * MS for column in ("silicon_tpot_ms", "silicon_ttft_ms"))
left_out = {}  # the estimate's constants fitted without each model, which the TTFT forms price with again
terms, models = transfer(understood, tpot, catalog.models, vmap.tokens_per_step, left_out)
write_table(tables.transfer(terms), outputs[:3], folder_class="derived")
write_table(tables.transfer_models(models), outputs[3:6], folder_class="derived")
write_table(tables.ttft_forms(ttft_forms(understood, tpot, ttft, vmap.tokens_per_step, left_out)), outputs[6:],
            folder_class="derived")
finish()
