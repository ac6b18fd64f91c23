"""Plan W1 and W2 on every catalogue device (kvwall.plan.workload_frontiers); write tables/derived/plan_workloads and
draw figures/plan_workloads from the same frontiers.

Arguments: the table's CSV, Markdown and LaTeX paths, the figure's SVG, PDF and PNG paths, and the view
(kvwall.inputs.views).
"""

import sys

from kvwall.figures.plan_workloads import draw
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.plan.workload_frontiers import MIN_DEVICES, WORKLOADS, workload_frontiers
from kvwall.render import write_table
from kvwall.tables.plan_workloads import plan_workloads

tables, figures, view_path = sys.argv[1:4], sys.argv[4:7], sys.argv[7]
view = load_view(view_path)
lines = workload_frontiers(view.catalog, view.catalog.devices)
write_table(plan_workloads(lines, view.catalog, WORKLOADS, MIN_DEVICES), tables, folder_class="derived")
save(draw(lines, view.catalog, WORKLOADS), figures)
