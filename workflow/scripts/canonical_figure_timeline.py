"""Draw the sustainability-against-hiding timelines of the tier scenario config/tiers.yaml names, as SVG, PDF and PNG.

Arguments: the SVG, PDF and PNG paths, the view (kvwall.inputs.views) and config/tiers.yaml.
"""

import sys

from kvwall.figures.style import save
from kvwall.figures.tier.timeline import draw
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.tier.inputs import load_tiers

*outputs, view_path, tiers_path = sys.argv[1:]
save(draw(load_tiers(tiers_path, load_view(view_path).catalog)), outputs)
finish()
