"""Draw one figure of kvwall.figures and save it as SVG, PDF and PNG."""

import sys

from kvwall.figures import draw
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import save

sys.stderr = open(snakemake.log[0], "w")
save(draw(snakemake.params.figure, FigureInputs.load(snakemake.config)), snakemake.output)
