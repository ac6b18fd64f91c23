"""Derive kvwall plan's frontier for the best-measured models (kvwall.plan.frontiers); write
tables/derived/plan_frontier and draw it beside the measured points.

Arguments: the table's CSV, Markdown and LaTeX paths, the figure's SVG, PDF and PNG paths, the view
(kvwall.inputs.views) and the validation the validation job saved (kvwall.validation.run); the engines' calibrations
are read from the validation tables beside the view's config/ (kvwall.plan.calibrated), which the rule lists.
"""

import sys

from kvwall.figures.plan_frontier import draw
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.plan.calibrated import plan_calibrations
from kvwall.plan.frontiers import LENGTHS, frontier_panels
from kvwall.render import write_table
from kvwall.tables.plan_frontier import plan_frontier
from kvwall.validation.run import load_validation

tables, figures, (view_path, validated) = sys.argv[1:4], sys.argv[4:7], sys.argv[7:9]
catalog = load_view(view_path).catalog
rows, vmap, result = load_validation(validated)
fits = plan_calibrations(catalog, result.understood["backend"].unique())
panels = frontier_panels(result.understood.assign(tpot_ms=rows["silicon_tpot_ms"]), catalog, vmap, fits)
write_table(plan_frontier(panels, catalog, LENGTHS), tables, folder_class="derived")
save(draw(panels, catalog), figures)
finish()
