# Load and validate every input before any rule runs: bad input stops here, with file, key and reason,
# and nothing under tables/ or figures/ is touched.
import glob
import os
import sys

from kvwall.inputs.loader import (
    SpecError,
    load_catalog,
    load_workflow_config,
    read_yaml,
    validate,
)
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.reported import load_reported
from kvwall.sources import SourceTree


envvars:
    "PATH",


# Shell rules (papermill, nbstripout) use the tools installed beside the interpreter that runs Snakemake, also when
# its environment is not activated (`.venv/bin/snakemake`).
os.environ["PATH"] = os.pathsep.join(
    (os.path.dirname(sys.executable), os.environ.get("PATH", ""))
)

PRINTED_NUMBERS = "config/paper/printed.yaml"
CONFIG_FILE = workflow.configfiles[0] if workflow.configfiles else "config/config.yaml"

try:
    # Snakemake's own reader keeps the last of a key given twice; refuse it instead.
    for path in workflow.configfiles:
        read_yaml(path)
    validate(config, "config", CONFIG_FILE)
    CATALOG = load_catalog(config["config_dir"])
    SELECTIONS = load_workflow_config(config, CATALOG, CONFIG_FILE)
    load_serving_inputs(CATALOG)
    load_reported(CATALOG.files["reported"])
    validate(read_yaml(PRINTED_NUMBERS), "printed", PRINTED_NUMBERS)
except SpecError as error:
    sys.exit(f"kvwall: bad input: {error}")

SPEC_INPUTS = sorted(path for name, path in CATALOG.files.items() if name != "reported")
# The kvwall code a job reads: the import closure of its script or notebook (kvwall.sources), plus any module it
# imports by name. A change to one module reruns exactly the jobs that import it; tests/test_rule_inputs.py checks the
# closure against what each job really imported.
# kvwall_code(script, *modules): the kvwall files that script (and modules, imported by name at run time) reads.
kvwall_code = SourceTree("src").files_of_script


REPORTED_INPUTS = sorted(glob.glob(f"{CATALOG.files['reported']}/*.yaml"))
