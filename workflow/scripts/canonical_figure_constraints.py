"""Draw Figure 3.1 from canonical-numbers.json and save it as SVG, PDF and PNG."""

import json
import sys

from kvwall.canonical.document import numbers_by_id
from kvwall.figures.style import save
from kvwall.figures.tier.four_constraints import draw
from kvwall.inputs.loader import load_catalog
from kvwall.tier.inputs import load_tiers

sys.stderr = open(snakemake.log[0], "w")
numbers = numbers_by_id(json.loads(open(snakemake.input.numbers, encoding="utf-8").read()))
tiers = load_tiers(snakemake.input.tiers, load_catalog(snakemake.config["config_dir"]))
save(draw(numbers, tiers), snakemake.output)
