"""Draw Figure 3.1 from canonical-numbers.json and save it as SVG, PDF and PNG.

Arguments: the SVG, PDF and PNG paths, the view (kvwall.inputs.views), canonical-numbers.json and config/tiers.yaml.
"""

import json
import sys
from pathlib import Path

from kvwall.canonical.document import numbers_by_id
from kvwall.figures.style import save
from kvwall.figures.tier.four_constraints import draw
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.tier.inputs import load_tiers

*outputs, view_path, numbers_path, tiers_path = sys.argv[1:]
numbers = numbers_by_id(json.loads(Path(numbers_path).read_text(encoding="utf-8")))
save(draw(numbers, load_tiers(tiers_path, load_view(view_path).catalog)), outputs)
finish()
