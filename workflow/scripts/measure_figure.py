"""Draw figures/measured_kv_slope.{svg,pdf,png}: committed records' fits beside the reported GB10 fits.

Arguments: the SVG, PDF and PNG paths, the view (kvwall.inputs.views), config/measure.yaml, then the records
(data/measured/*.json).
"""

import sys

from kvwall.figures.measured_kv_slope import kv_slope_figure
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.measure.config import load_measure_config
from kvwall.measure.record import read_records

outputs, (view_path, measure_config), records = sys.argv[1:4], sys.argv[4:6], sys.argv[6:]
view = load_view(view_path)
settings = load_measure_config(measure_config, view.catalog)
save(kv_slope_figure(read_records(records), view.reported, settings.reported_platform, settings.reported_fits), outputs)
finish()
