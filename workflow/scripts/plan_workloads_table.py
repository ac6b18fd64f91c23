"""Plan W1 and W2 on every catalogue device (kvwall.plan.workload_frontiers); write tables/derived/plan_workloads.

Arguments: the table's CSV, Markdown and LaTeX paths and the view (kvwall.inputs.views).
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.plan.workload_frontiers import MIN_DEVICES, WORKLOADS, workload_frontiers
from kvwall.render import write_table
from kvwall.tables.plan_workloads import plan_workloads

*tables, view_path = sys.argv[1:]
catalog = load_view(view_path).catalog
write_table(plan_workloads(workload_frontiers(catalog, catalog.devices), catalog, WORKLOADS, MIN_DEVICES), tables,
            folder_class="derived")
finish()
