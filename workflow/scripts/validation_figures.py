"""Draw every validation figure of kvwall.figures.serving from one validation, each as SVG, PDF and PNG.

Arguments: the figures' SVG, PDF and PNG paths (three per figure, each named figures/<figure>.<ext>), then the view
(kvwall.inputs.views) and the validation the validation job saved (kvwall.validation.run).
"""

import sys
from importlib import import_module
from pathlib import Path

from kvwall.figures.serving import SERVING_FIGURES
from kvwall.figures.style import save
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.validation.run import load_validation

*outputs, view_path, validated = sys.argv[1:]
catalog = load_view(view_path).catalog
rows, _, result = load_validation(validated)
for start in range(0, len(outputs), 3):
    paths = outputs[start:start + 3]
    module = SERVING_FIGURES[Path(paths[0]).stem]
    save(import_module(f"kvwall.figures.serving.{module}").draw(result, rows, catalog), paths)
finish()
