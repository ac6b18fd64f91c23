"""Rank the layouts of every measured group by measurement and by estimate; write tables/derived/plan_ranking and
its summary.

Arguments: the ranking's CSV, Markdown and LaTeX paths, the summary's three, the view (kvwall.inputs.views), the
serving measurements, the validation map and the folder of check stamps.
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.plan.proof import ESTIMATES, held_out_tpot, rankings, summary
from kvwall.render import write_table
from kvwall.tables.plan_ranking import ranking, ranking_summary
from kvwall.validation.run import validate_file

outputs, (view_path, measurements, validation_map, stamps) = sys.argv[1:7], sys.argv[7:11]
catalog = load_view(view_path).catalog
rows, vmap, result = validate_file(measurements, validation_map, catalog, stamps)
points = result.understood.assign(tpot_ms=rows["silicon_tpot_ms"],
                                  tpot_calibrated_ms=held_out_tpot(result.understood, rows, vmap.tokens_per_step))
ranked = rankings(points, ESTIMATES)
write_table(ranking(ranked), outputs[:3], folder_class="derived")
write_table(ranking_summary(summary(ranked, ESTIMATES)), outputs[3:], folder_class="derived")
