# Load and validate every input before any rule runs: bad input stops here, with file, key and reason,
# and nothing under tables/ or figures/ is touched.
import sys

from kvwall.loader import SPEC_FILES, SpecError, load_catalog, load_workflow_config

try:
    CATALOG = load_catalog(config["config_dir"])
    SELECTIONS = load_workflow_config(config, CATALOG)
except SpecError as error:
    sys.exit(f"kvwall: bad input: {error}")

SPEC_INPUTS = sorted(CATALOG.files.values())
