"""Loaded by every Python process of a traced pipeline run (tests/test_workflow.py puts this folder on PYTHONPATH).

Each time a process that runs a job imports a kvwall module, it appends one JSON line to $KVWALL_IMPORT_TRACE: the
job's first output and the module's name. A job script of workflow/scripts/ takes its outputs first (its first
argument); a Snakemake script job names its output through its ``snakemake`` object; a notebook's kernel is known by
its parent, the job script that runs papermill, whose first argument is the executed notebook.
Each file under the job's directory that the process opens for reading is recorded the same way, as
{"output": ..., "opened": path}. Imports and opens are recorded as they happen (an audit hook), since a kernel may
be ended without running its exit handlers.
"""

import json
import os
import sys


def _job_output():
    if len(sys.argv) > 1 and os.path.dirname(sys.argv[0]).endswith(os.path.join("workflow", "scripts")):
        return sys.argv[1]
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    if job is not None and len(job.output):
        return str(job.output[0])
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
            parent = [part.decode() for part in handle.read().split(b"\0") if part]
    except OSError:
        return None
    scripts = [i for i, part in enumerate(parent) if os.path.dirname(part).endswith(os.path.join("workflow", "scripts"))]
    if scripts and len(parent) > scripts[0] + 1:
        return parent[scripts[0] + 1]  # a kernel its job script (workflow/scripts/notebook.py) started
    return None


def _opened_for_reading(args) -> str | None:
    """The path of an open() that reads a file (no write, append or update), relative to the job's directory."""
    path, mode = args[0], args[1] if len(args) > 1 else "r"
    if not isinstance(path, (str, bytes, os.PathLike)) or not isinstance(mode, str) or set(mode) & set("wax+"):
        return None
    path = os.fsdecode(path)
    relative = os.path.relpath(os.path.abspath(path), os.getcwd())
    # a folder opened to list it (importlib.metadata scans every folder of sys.path, a script's own among them) is not
    # a file the job reads
    return None if relative.startswith("..") or os.path.isdir(path) else relative


def _record(event, args):
    if event == "import" and args and str(args[0]).startswith("kvwall"):
        name = str(args[0])
        if name != "kvwall" and not name.startswith("kvwall."):
            return
        entry = {"module": name}
    elif event == "open" and args:
        path = _opened_for_reading(args)
        if path is None:
            return
        entry = {"opened": path}
    else:
        return
    output = _job_output()
    if output is None:
        return
    with open(os.environ["KVWALL_IMPORT_TRACE"], "a", encoding="utf-8") as trace:
        trace.write(json.dumps({"output": output, **entry}) + "\n")


if os.environ.get("KVWALL_IMPORT_TRACE"):
    sys.addaudithook(_record)
