"""Audit every printed number of the paper against the derived tables; fail on an undocumented mismatch."""

from kvwall.audit import AuditedTable, audit, audit_table, read_artifact
from kvwall.inputs.loader import load_catalog, load_workflow_config, read_yaml, validate
from kvwall.render import write_table
from kvwall.tables import builder

catalog = load_catalog(snakemake.config["config_dir"])
selections = load_workflow_config(snakemake.config, catalog)
printed = read_yaml(snakemake.input.printed)
validate(printed, "printed", snakemake.input.printed)


def load(artifact: str) -> AuditedTable:
    return read_artifact(artifact, {c.name: c for c in builder(artifact)(catalog, selections).columns})


write_table(audit_table(audit(printed, load)), snakemake.output, folder_class="audit")
