"""Loaded by every Python process of a traced pipeline run (tests/test_workflow.py puts this folder on PYTHONPATH).

At exit, a process that ran a job appends one JSON line to $KVWALL_IMPORT_TRACE: the job's first output and the
kvwall source files the process imported. A Snakemake script job names its output through its ``snakemake`` object;
a notebook's kernel is known by its parent, the papermill process, whose second argument is the executed notebook.
"""

import atexit
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


def _record():
    output = _job_output()
    if output is None:
        return
    # As the workflow names them, wherever the package is installed from: src/kvwall/...
    files = sorted(
        "src/kvwall/" + module.__file__.replace(os.sep, "/").rsplit("/kvwall/", 1)[1]
        for name, module in list(sys.modules.items())
        if (name == "kvwall" or name.startswith("kvwall.")) and getattr(module, "__file__", None)
    )
    with open(os.environ["KVWALL_IMPORT_TRACE"], "a", encoding="utf-8") as trace:
        trace.write(json.dumps({"output": output, "files": files}) + "\n")


if os.environ.get("KVWALL_IMPORT_TRACE"):
    atexit.register(_record)
