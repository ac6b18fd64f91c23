"""Build one table artifact from the catalogue and write it as CSV, Markdown and LaTeX."""

from kvwall.inputs.loader import load_catalog, load_workflow_config
from kvwall.render import write_table
from kvwall.tables import builder

artifact = f"{snakemake.wildcards.evidence}/{snakemake.wildcards.name}"
catalog = load_catalog(snakemake.config["config_dir"])
table = builder(artifact)(catalog, load_workflow_config(snakemake.config, catalog))
write_table(table, snakemake.output, folder_class=snakemake.wildcards.evidence)
