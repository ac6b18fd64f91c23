"""Run one audit notebook: execute it with papermill, then drop what changes from run to run with nbstripout, both in
this one interpreter, which first imports jsonschema without the format libraries an extra may install
(kvwall.inputs.schema_library): papermill and nbstripout read notebooks through nbformat, whose jsonschema would
otherwise compile those libraries' grammars on import, seconds a job.

Arguments: the executed notebook, the notebook, the metadata keys nbstripout drops besides its own (one argument,
space-separated), then papermill's options (-k KERNEL, -p NAME VALUE, ...).
"""

import sys

import kvwall.inputs.schema_library  # noqa: F401  (first, before papermill and nbstripout import jsonschema)
import nbstripout
from papermill.cli import papermill
from kvwall.job import finish

executed, notebook, volatile, *options = sys.argv[1:]
# The executed notebook is written once, when every cell has run (or one failed), not again before and after each cell.
papermill.main(args=[notebook, executed, *options, "--no-progress-bar", "--no-request-save-on-cell-execute"],
               prog_name="papermill", standalone_mode=False)
sys.argv = ["nbstripout", "--keep-output", "--keep-count", "--extra-keys", volatile, executed]
nbstripout.main()
finish()
