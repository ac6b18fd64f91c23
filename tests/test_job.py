"""A job's script ends through kvwall.job.finish: exit status 0 at once, with what it printed flushed, also when a
tool it ran closed a standard stream; a script that fails before it exits as Python does."""

import subprocess
import sys

SCRIPT = """
import sys
from kvwall.job import finish
print("written", end="")  # no newline: still in the buffer
sys.stderr.write("logged")
if "close" in sys.argv:
    sys.stdout.close()
if "fail" in sys.argv:
    raise SystemExit("kvwall: the job failed")
finish()
print("never")
"""


def _run(*arguments):
    return subprocess.run([sys.executable, "-c", SCRIPT, *arguments], capture_output=True, text=True, timeout=60)


def test_a_finished_job_exits_0_with_its_output_flushed():
    done = _run()
    assert (done.returncode, done.stdout, done.stderr) == (0, "written", "logged")


def test_a_job_whose_tool_closed_standard_output_still_finishes():
    done = _run("close")
    assert (done.returncode, done.stderr) == (0, "logged")


def test_a_job_that_fails_before_it_finishes_exits_as_python_does():
    done = _run("fail")
    assert done.returncode == 1 and done.stderr.endswith("kvwall: the job failed\n")
