# Read the workflow's own config file with kvwall's reader before Snakemake does, so that a syntax error, a key given
# twice or a YTE template (`__use_yte__`, `?expression`, which Snakemake would run as Python) stops the run with one
# line naming file, line and reason. A --configfile from the command line is read by Snakemake before any workflow
# code runs; it is refused here too, after that read (README, "Bad input").
import sys

from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import read_yaml
from kvwall.inputs.reader import refuse_templates

try:
    for path in ("config/config.yaml", *workflow.configfiles):
        refuse_templates(read_yaml(path), path)
except SpecError as error:
    sys.exit(f"kvwall: bad input: {error}")
