"""Loaded by every Python process of a traced pipeline run (tests/test_workflow.py puts this folder on PYTHONPATH).

Each time a process that runs a job imports a kvwall module, it appends one JSON line to $KVWALL_IMPORT_TRACE: the
job's first output and the module's name. A Snakemake script job names its output through its ``snakemake`` object;
a notebook's kernel is known by its parent, the papermill process, whose second argument is the executed notebook.
Imports are recorded as they happen (an audit hook), since a kernel may be ended without running its exit handlers.
"""

import json
import os
import sys


def _job_output():
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    if job is not None and len(job.output):
        return str(job.output[0])
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
            parent = [part.decode() for part in handle.read().split(b"\0") if part]
    except OSError:
        return None
    notebooks = [part for part in parent if part.endswith(".ipynb")]
    if any(part.endswith("papermill") for part in parent) and len(notebooks) >= 2:
        return notebooks[1]
    return None


def _record(event, args):
    if event != "import" or not args or not str(args[0]).startswith("kvwall"):
        return
    name = str(args[0])
    if name != "kvwall" and not name.startswith("kvwall."):
        return
    output = _job_output()
    if output is None:
        return
    with open(os.environ["KVWALL_IMPORT_TRACE"], "a", encoding="utf-8") as trace:
        trace.write(json.dumps({"output": output, "module": name}) + "\n")


if os.environ.get("KVWALL_IMPORT_TRACE"):
    sys.addaudithook(_record)
