"""Draw kvwall plan's frontier beside the measured points of the best-measured models (kvwall.plan.frontiers).

Arguments: the SVG, PDF and PNG paths, the view (kvwall.inputs.views) and the validation the validation job saved
(kvwall.validation.run).
"""

import sys

from kvwall.figures.plan_frontier import draw
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.plan.frontiers import frontier_panels
from kvwall.validation.run import load_validation

outputs, (view_path, validated) = sys.argv[1:4], sys.argv[4:6]
catalog = load_view(view_path).catalog
rows, vmap, result = load_validation(validated)
save(draw(frontier_panels(result.understood.assign(tpot_ms=rows["silicon_tpot_ms"]), catalog, vmap), catalog), outputs)
