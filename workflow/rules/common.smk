# Load, validate and cross-check every input before any job runs (kvwall.cli.front_door, the loaders the jobs use):
# bad input stops here, with file, key and reason, and nothing under tables/ or figures/ is touched.
import atexit
import fcntl
import glob
import os
import shutil
import subprocess
import sys

import kvwall

from kvwall.cli.front_door import (
    check_below_bound,
    check_inputs,
    view_sources,
    workflow_views,
)
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import read_yaml
from kvwall.inputs.serving import SERVING_MEASUREMENTS
from kvwall.inputs.validation_map import VALIDATION_FILE
from kvwall.inputs.views import save_views
from kvwall.numerics import pinned_environment
from kvwall.sources import SourceTree
from snakemake.io import IOFile


envvars:
    "PATH",


# Shell rules (papermill, nbstripout) use the tools installed beside the interpreter that runs Snakemake, also when
# its environment is not activated (`.venv/bin/snakemake`).
os.environ["PATH"] = os.pathsep.join(
    (os.path.dirname(sys.executable), os.environ.get("PATH", ""))
)
# Every job computes on numpy's baseline kernels and glibc's generic libm, whatever the CPU (kvwall.numerics).
os.environ.update(pinned_environment(os.environ))

# Jobs import kvwall from its source tree (an editable install, which uv's compile-bytecode does not reach), and where
# PYTHONDONTWRITEBYTECODE is set no job keeps what it compiles: each would compile every kvwall module it imports again.
# The build compiles them once (kept in their __pycache__ folders, which git ignores) in a process of its own, beside
# Snakemake's start (the input checks, the DAG), and its first job waits for it (onstart). Best effort: where the tree
# cannot be written, the jobs compile as before.
if workflow.is_main_process:
    KVWALL_BYTECODE = subprocess.Popen(
        [sys.executable, "-m", "compileall", "-q", os.path.dirname(kvwall.__file__)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(KVWALL_BYTECODE.wait)

PRINTED_NUMBERS = "config/paper/printed.yaml"
# Stamps of input files whose bytes already passed a slow check (kvwall.inputs.serving).
CHECKED_STAMPS = ".snakemake/kvwall-checked"
CONFIG_FILE = workflow.configfiles[0] if workflow.configfiles else "config/config.yaml"

try:
    # Snakemake's own reader keeps the last of a key given twice; refuse it instead.
    for path in workflow.configfiles:
        read_yaml(path)
    INPUTS = check_inputs(config, CONFIG_FILE, stamp_dir=CHECKED_STAMPS)
    # A point below its bound without a diagnosis would stop the validation job; stop here instead.
    check_below_bound(
        INPUTS.catalog,
        SERVING_MEASUREMENTS,
        f"{config['config_dir']}/{VALIDATION_FILE}",
        stamp_dir=CHECKED_STAMPS,
    )
except SpecError as error:
    sys.exit(f"kvwall: bad input: {error}")

CATALOG, SELECTIONS = INPUTS.catalog, INPUTS.selections
# What jobs read of the checked inputs, saved once (kvwall.inputs.views): a job loads its view instead of parsing and
# validating config/ again, and lists it as an input in place of the spec files, so a view whose bytes did not change
# (the paper's, when a device outside its selections is added) reruns nothing.
VIEWS = save_views(
    workflow_views(INPUTS), view_sources(INPUTS, CONFIG_FILE), ".snakemake/kvwall-views"
)

# Snakemake runs a script job through a shell command line that a space in the checkout path splits.
if " " in os.getcwd():
    sys.exit(
        f"kvwall: the checkout path {os.getcwd()!r} contains a space, where Snakemake cannot run script jobs; move it"
    )

# One build at a time: a build holds an exclusive lock on BUILD_LOCK while it runs (the kernel drops it when the
# process ends, however it ends), so a second build says so in one line, and Snakemake's own locks found while
# no build holds it were left by a killed one and are removed.
BUILD_LOCK = ".snakemake/kvwall-build.lock"
if workflow.is_main_process:
    os.makedirs(".snakemake", exist_ok=True)
    _build_lock = open(BUILD_LOCK, "a")
    try:
        fcntl.flock(_build_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(
            "kvwall: another build holds this directory (.snakemake/kvwall-build.lock); wait for it to finish"
        )
    if glob.glob(".snakemake/locks/*"):
        shutil.rmtree(".snakemake/locks")
        print(
            "kvwall: removed the lock of a build that was killed (.snakemake/locks)",
            file=sys.stderr,
        )

# A failed job loses nothing: Snakemake deletes a job's outputs before it runs and again when it fails, so every
# artifact is hard-linked into KEPT before the first job, and any that a failed or interrupted run left missing is
# put back from there (README, "Bad input").
KEPT = ".snakemake/kvwall-kept"

SPEC_INPUTS = sorted(path for name, path in CATALOG.files.items() if name != "reported")
# The kvwall code a job reads: the import closure of its script or notebook (kvwall.sources), plus any module it
# imports by name. A change to one module reruns exactly the jobs that import it; tests/test_rule_inputs.py checks the
# closure against what each job really imported.
# kvwall_code(script, *modules): the kvwall files that script (and modules, imported by name at run time) reads.
# What each file imports is kept in KVWALL_SOURCES's cache while the file is unchanged (saved by the Snakefile).
KVWALL_SOURCES = SourceTree("src", cache=".snakemake/kvwall-sources.json")
kvwall_code = KVWALL_SOURCES.files_of_script


REPORTED_INPUTS = sorted(glob.glob(f"{CATALOG.files['reported']}/*.yaml"))


# Snakemake's default --max-jobs-per-timespan, 100/1s, arms a one-second timer each time it schedules, and each timer
# schedules again: every job that finishes adds one more round a second until the build ends, and each round looks up
# the size of every input of every job ready to run. A cold build spent a sixth of its CPU there, taken from the jobs'
# cores. Jobs run on this machine's own cores need no rate limit: without it, a round runs when a job finishes.
DEFAULT_JOB_RATE = (100, 1)


def drop_default_job_rate_limit(scheduler):
    """Run ``scheduler`` without its rate limit where the build runs its jobs locally at Snakemake's default rate."""
    limiter = scheduler.job_rate_limiter
    if (
        workflow.local_exec
        and limiter is not None
        and (limiter.max_jobs, limiter.timespan) == DEFAULT_JOB_RATE
    ):
        scheduler.job_rate_limiter = None


onstart:
    KVWALL_BYTECODE.wait()
    drop_default_job_rate_limit(workflow.scheduler)
    # The temporary file of a write that a kill interrupted (kvwall.render.replace_atomically) is never an artifact.
    for folder in {os.path.dirname(path) for path in rules.all.input}:
        for partial in glob.glob(os.path.join(folder, ".*.partial")):
            os.remove(partial)
    shutil.rmtree(KEPT, ignore_errors=True)
    for path in filter(os.path.isfile, rules.all.input):
        os.makedirs(os.path.join(KEPT, os.path.dirname(path)), exist_ok=True)
        try:
            os.link(path, os.path.join(KEPT, path))
        except OSError:  # a file system without hard links
            shutil.copy2(path, os.path.join(KEPT, path))


# Snakemake records a failed job's outputs as finished, with the inputs it failed on, and counts on having deleted
# them: an artifact put back keeps no such record, so the next build runs that job again.
onerror:
    restored = 0
    for folder, _, names in os.walk(KEPT):
        for kept in (os.path.join(folder, name) for name in names):
            path = os.path.relpath(kept, KEPT)
            if not os.path.exists(path):
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                shutil.copy2(kept, path)
                workflow.persistence.cleanup_metadata(IOFile(path))
                restored += 1
    if restored:
        print(
            f"kvwall: a job failed; {restored} artifact(s) it would have replaced are kept as they were (see logs/)",
            file=sys.stderr,
        )


# A table job's outputs (workflow/rules/tables.smk).
def table_outputs(artifacts):
    """Each artifact's CSV (offered in Snakemake's report), Markdown and LaTeX, in turn."""
    outputs = []
    for artifact in artifacts:
        evidence, name = artifact.split("/")
        csv = report(
            f"tables/{artifact}.csv",
            caption="../report/table.rst",
            category="Tables",
            subcategory=evidence,
            labels={"table": name, "evidence": evidence},
        )
        outputs += [csv, f"tables/{artifact}.md", f"tables/{artifact}.tex"]
    return outputs
