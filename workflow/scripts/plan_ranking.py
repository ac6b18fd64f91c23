"""Rank the layouts of every measured group by measurement and by estimate; write tables/derived/plan_ranking and
its summary, with the measurements ranked against a second measurement of themselves and the shares' intervals.

Arguments: the ranking's CSV, Markdown and LaTeX paths, the summary's three, and the validation the validation job
saved (kvwall.validation.run).
"""

import sys

import pandas as pd

from kvwall.job import finish
from kvwall.plan.proof import (DRAWS, ESTIMATES, RESAMPLES, agreement_intervals, held_out_tpot, rankings, second_measurement,
                               summary)
from kvwall.render import write_table
from kvwall.tables.plan_ranking import ranking, ranking_summary
from kvwall.validation.repeatability import repeat_ratios
from kvwall.validation.run import load_validation

outputs, validated = sys.argv[1:7], sys.argv[7]
rows, vmap, result = load_validation(validated)
points = result.understood.assign(tpot_ms=rows["silicon_tpot_ms"],
                                  **held_out_tpot(result.understood, rows, vmap.tokens_per_step,
                                                  vmap.offset_pseudo_count))
ranked = rankings(points, ESTIMATES)
write_table(ranking(ranked), outputs[:3], folder_class="derived")
remeasured = second_measurement(points, repeat_ratios(result.understood, rows), DRAWS)
scores = pd.concat([summary(ranked, ESTIMATES), remeasured.summary], ignore_index=True)
scores = scores.merge(agreement_intervals(ranked, remeasured.agreement), on=["estimate", "limit"], how="left")
write_table(ranking_summary(scores, DRAWS, RESAMPLES), outputs[3:], folder_class="derived")
finish()
