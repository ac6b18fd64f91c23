"""The end of a workflow job's script: the process exits at once, without tearing its interpreter down.

Once a job has written its outputs, its interpreter would spend 0.1-0.2 s freeing the modules it imported (pandas,
matplotlib, scipy) in a process that ends anyway: over a build's jobs, seconds of its cores. Every artifact a job
writes is closed when its write returns (kvwall.render.replace_atomically, matplotlib's savefig, nbformat's and
nbstripout's writers), so nothing is left to flush but the standard streams, which are flushed here. A job that
fails raises as any script does, and exits as Python exits.
"""

from __future__ import annotations

import os
import sys


def finish() -> None:
    """End the job's process now with exit status 0, its standard output and error flushed (where still open: a
    tool the job ran may have closed one)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None and not stream.closed:
            stream.flush()
    os._exit(0)
