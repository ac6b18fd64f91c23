"""Draw whether the estimate ranks the measured layouts as the measurements do (kvwall.figures.plan_ranking) from
tables/derived/plan_ranking.csv and its summary; save SVG, PDF and PNG.

Arguments: the SVG, PDF and PNG paths, the table's CSV and the summary's.
"""

import sys

import pandas as pd

from kvwall.figures.plan_ranking import draw
from kvwall.figures.style import save
from kvwall.job import finish

*outputs, ranking, summary = sys.argv[1:]
save(draw(pd.read_csv(ranking), pd.read_csv(summary)), outputs)
finish()
