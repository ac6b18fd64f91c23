"""A local build schedules when a job finishes, not once a second more for every job finished before: Snakemake's
default job rate limit (--max-jobs-per-timespan 100/1s) is dropped for local runs (workflow/rules/common.smk)."""

import shutil

import pytest

from test_bad_input import REPO
from test_workflow import INPUTS

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (README, "Tests").
pytestmark = pytest.mark.slow

#: Two figure jobs on one core: the second waits, ready, for the first (Figure 4 takes seconds), so every scheduling
#: round while the first runs looks at it and says so.
TARGETS = ("figures/fig4_regime_map.svg", "figures/fig6_placement.svg")


def test_a_local_build_schedules_when_a_job_finishes(tmp_path, forked_snakemake):
    root = tmp_path / "repo"
    root.mkdir()
    for name in INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "executed"))
        else:
            shutil.copy2(source, root / name)
    done = forked_snakemake(["--cores", "1", "--verbose", "--workflow-profile", "none", *TARGETS], cwd=root,
                            timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    # one round at the start and one as each job finishes (the two figures, then `all` is ready)
    rounds = log.count("Ready jobs: ")
    assert 2 <= rounds <= 3, rounds
    assert all((root / target).is_file() for target in TARGETS)
