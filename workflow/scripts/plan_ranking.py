"""Rank the layouts of every measured group by measurement and by estimate; write tables/derived/plan_ranking and
its summary.

Arguments: the ranking's CSV, Markdown and LaTeX paths, the summary's three, and the validation the validation job
saved (kvwall.validation.run).
"""

import sys

from kvwall.plan.proof import ESTIMATES, held_out_tpot, rankings, summary
from kvwall.render import write_table
from kvwall.tables.plan_ranking import ranking, ranking_summary
from kvwall.validation.run import load_validation

outputs, validated = sys.argv[1:7], sys.argv[7]
rows, vmap, result = load_validation(validated)
points = result.understood.assign(tpot_ms=rows["silicon_tpot_ms"],
                                  tpot_calibrated_ms=held_out_tpot(result.understood, rows, vmap.tokens_per_step))
ranked = rankings(points, ESTIMATES)
write_table(ranking(ranked), outputs[:3], folder_class="derived")
write_table(ranking_summary(summary(ranked, ESTIMATES)), outputs[3:], folder_class="derived")
