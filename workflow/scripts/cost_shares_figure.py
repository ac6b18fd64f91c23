"""Draw what the measured TPOT is made of (kvwall.figures.serving.cost_shares) from its table; save SVG, PDF, PNG.

Arguments: the SVG, PDF and PNG paths, the view (kvwall.inputs.views) and tables/derived/serving_cost_shares.csv.
"""

import sys

import pandas as pd

from kvwall.figures.serving.cost_shares import draw
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.job import finish

*outputs, view_path, shares = sys.argv[1:]
save(draw(pd.read_csv(shares), load_view(view_path).catalog), outputs)
finish()
