"""A build prints one line per job and the errors, nothing else (profiles/default, snakemake_logger_plugin_kvwall).

Runs the workflow on a temporary copy of the repository with its default profile, as `snakemake --cores N` does.
"""

import re
import shutil
from pathlib import Path

import pytest

from kvwall.cli.benchmark import jobs_run
from test_bad_input import REPO, workflow_copy

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow

TABLES = ["tables/spec/table1_architectures.csv", "tables/derived/footprint_examples.csv"]
#: The job each of TABLES is written by (one per family of kvwall.tables.families): its family, its first table and
#: how many more outputs its line counts (the family's other files).
FAMILIES = [("architecture", TABLES[0], "8"), ("in_text", TABLES[1], "17")]
#: Snakemake's command line prints this before any logger runs; it is the one line a build cannot leave out.
PROFILE_LINE = "Using workflow specific profile profiles/default for setting default command line arguments."


@pytest.fixture
def build(forked_snakemake):
    """``build(root, *args)``: `python -m snakemake --cores 1 *args` in ``root`` (tests/snakemake_runs.py)."""
    return lambda root, *args: forked_snakemake(["--cores", "1", *args], cwd=root)


def profiled_copy(folder: Path) -> Path:
    root = workflow_copy(folder)
    shutil.copytree(REPO / "profiles", root / "profiles")
    shutil.copytree(REPO / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns("executed"))
    return root


def test_a_build_prints_one_line_per_job(tmp_path, build):
    root = profiled_copy(tmp_path)
    done = build(root, "--forceall", *TABLES)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == PROFILE_LINE
    jobs = [re.fullmatch(r"\[(\d)/2\] tables_(\w+): (\S+) \(\+(\d+)\)", line) for line in lines[1:]]
    assert all(jobs) and len(jobs) == 2, done.stderr
    assert [job[1] for job in jobs] == ["1", "2"]
    assert sorted((job[2], job[3], job[4]) for job in jobs) == sorted(FAMILIES)
    assert jobs_run(done.stderr) == 2  # what `kvwall benchmark` counts its floor by
    # Everything else went to the run log.
    assert "Finished jobid" in next((root / ".snakemake" / "log").glob("*.snakemake.log")).read_text()
    again = build(root, *TABLES)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines() == [PROFILE_LINE]


def test_a_dry_run_prints_one_line_per_planned_job(tmp_path, build):
    done = build(profiled_copy(tmp_path), "--forceall", "--dry-run", TABLES[0])
    assert done.returncode == 0, done.stderr
    assert (done.stderr.splitlines(), done.stdout.splitlines()) == ([PROFILE_LINE], [f"tables_architecture: {TABLES[0]} (+8)"])


def test_a_failed_job_prints_its_error_and_its_log(tmp_path, build):
    root = profiled_copy(tmp_path)
    (root / "workflow" / "scripts" / "write_tables.py").write_text('raise SystemExit("this table cannot be written")\n')
    done = build(root, "--forceall", TABLES[1])
    assert done.returncode != 0
    assert "this table cannot be written" in done.stderr
    assert f"Error in rule tables_in_text (job 0): {TABLES[1]}, " in done.stderr
    assert "    log: logs/tables/in_text.log (check log file(s) for error details)" in done.stderr
    assert not re.search(r"Finished jobid|steps \(|Building DAG|Job stats", done.stderr), done.stderr
