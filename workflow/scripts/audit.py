"""Audit every printed number of the paper against the derived tables; fail on an undocumented mismatch.

Arguments: the CSV, Markdown and LaTeX paths of the audit, the view (kvwall.inputs.views) and the printed numbers
(config/paper/printed.yaml).
"""

import sys

from kvwall.audit import AuditedTable, audit, audit_table, read_artifact
from kvwall.inputs.loader import read_yaml, validate
from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.render import write_table
from kvwall.tables import builder

*outputs, view_path, printed_path = sys.argv[1:]
view = load_view(view_path)
printed = read_yaml(printed_path)
validate(printed, "printed", printed_path)


def load(artifact: str) -> AuditedTable:
    return read_artifact(artifact, {c.name: c for c in builder(artifact)(view.catalog, view.selections).columns})


write_table(audit_table(audit(printed, load)), outputs, folder_class="audit")
finish()
