"""Draw kvwall plan's frontier for W1 and W2 on the paper's devices (Table 3; kvwall.plan.workload_frontiers); save
SVG, PDF and PNG.

Arguments: the figure's SVG, PDF and PNG paths and the view (kvwall.inputs.views).
"""

import sys

from kvwall.figures.plan_workloads import draw
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.plan.workload_frontiers import WORKLOADS, workload_frontiers

*figures, view_path = sys.argv[1:]
view = load_view(view_path)
save(draw(workload_frontiers(view.catalog, view.selections["table3_devices"]), view.catalog, WORKLOADS), figures)
finish()
