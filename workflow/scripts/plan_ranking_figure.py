"""Draw whether the estimate ranks the measured layouts as the measurements do (kvwall.figures.plan_ranking) from
tables/derived/plan_ranking.csv; save SVG, PDF and PNG.

Arguments: the SVG, PDF and PNG paths and the table's CSV.
"""

import sys

import pandas as pd

from kvwall.figures.plan_ranking import draw
from kvwall.figures.style import save

*outputs, ranking = sys.argv[1:]
save(draw(pd.read_csv(ranking)), outputs)
