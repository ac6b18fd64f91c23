"""Draw the sustainability-against-hiding timelines of the tier scenario config/tiers.yaml names, as SVG, PDF and PNG."""

import sys

from kvwall.figures.style import save
from kvwall.figures.tier.timeline import draw
from kvwall.inputs.loader import load_catalog
from kvwall.tier.inputs import load_tiers

sys.stderr = open(snakemake.log[0], "w")
save(draw(load_tiers(snakemake.input.tiers, load_catalog(snakemake.config["config_dir"]))), snakemake.output)
