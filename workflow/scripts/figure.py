"""Draw one figure of kvwall.figures from its view of the catalogue and save it as SVG, PDF and PNG.

Arguments: the SVG, PDF and PNG paths, the view (kvwall.inputs.views) and the figure's name.
"""

import sys

from kvwall.figures import draw
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.job import finish

*outputs, view_path, figure = sys.argv[1:]
save(draw(figure, FigureInputs.from_view(load_view(view_path))), outputs)
finish()
