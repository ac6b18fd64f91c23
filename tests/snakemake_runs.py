"""`python -m snakemake` for the tests, each run a fresh process forked from one that imported Snakemake and the
Snakefile's kvwall modules once: the same exit status, stdout and stderr as a process started for it, without
paying those imports (seconds) on every run."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

#: The process that forks the runs. A child leaves the loop through Snakemake's own exit (or exception) and ends as
#: `python -m snakemake` ends: the interpreter prints a SystemExit's message, runs atexit and flushes its streams.
FORKER = r"""
import json, os, sys
import snakemake.cli
import kvwall.cli.front_door, kvwall.inputs.views, kvwall.sources, kvwall.numerics
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.chdir(request["cwd"])
        for fd, name in ((0, os.devnull), (1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(name, os.O_RDWR | os.O_CREAT | os.O_TRUNC if fd else os.O_RDONLY), fd)
        sys.argv = [request["main"], *request["args"]]
        snakemake.cli.main(request["args"])
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""


class Forker:
    """One forking process; ``run`` answers as ``subprocess.run([python, -m, snakemake, *args], capture_output=True,
    text=True)`` would."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, start_new_session=True)
        self.folder = tempfile.TemporaryDirectory()
        self.main = str(Path(__import__("snakemake").__file__).with_name("__main__.py"))

    def run(self, args: list, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        out, err = Path(self.folder.name, "stdout"), Path(self.folder.name, "stderr")
        request = {"args": [str(a) for a in args], "cwd": str(cwd), "stdout": str(out), "stderr": str(err), "main": self.main}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        if not select.select([self.process.stdout], [], [], timeout)[0]:
            self.close()
            raise subprocess.TimeoutExpired(["snakemake", *args], timeout)
        answer = self.process.stdout.readline()
        assert answer, "the forking process ended"
        status = int(answer)
        command = [sys.executable, "-m", "snakemake", *request["args"]]
        return subprocess.CompletedProcess(command, status, out.read_text(), err.read_text())

    def close(self):
        os.killpg(self.process.pid, 9)  # a run still going with it
        self.process.wait()
        self.folder.cleanup()
