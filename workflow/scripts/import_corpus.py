"""Import every config of the corpus of published configs; write tables/derived/import_corpus."""

from pathlib import Path

from kvwall.inputs.loader import load_catalog
from kvwall.inputs.published_params import load_published_params
from kvwall.render import write_table
from kvwall.tables.import_corpus import import_corpus

catalog = load_catalog(snakemake.config["config_dir"])
configs = [Path(path) for path in snakemake.input.configs]
write_table(import_corpus(catalog, configs, load_published_params(snakemake.input.published)), snakemake.output,
            folder_class="derived")
