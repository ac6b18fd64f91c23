"""Shared fixtures: the repository's catalogue and workflow selections, loaded once.

The tests run in the numeric environment of the pipeline's jobs (kvwall.numerics), so that a number a test computes
in its own process and compares with a committed artifact is computed as the job computed it, on any CPU: a session
started without it starts again with it, before any test is collected.
"""

import os
import sys
from pathlib import Path

import pytest
import yaml

from kvwall.inputs.loader import load_catalog, load_workflow_config

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """Start the session again in the pipeline's numeric environment where it was started without it."""
    from kvwall.numerics import pinned_environment

    pinned = pinned_environment(os.environ)
    if any(os.environ.get(name) != value for name, value in pinned.items()):
        config.pluginmanager.getplugin("capturemanager").stop_global_capturing()
        sys.stdout.flush(), sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, **pinned})


#: The test files that take longest, in this order before the rest: each worker takes the next file as it frees
#: (`--dist loadfile --no-loadscope-reorder`, pyproject.toml), so none of these starts last and runs alone, and
#: files that read the same session fixture (review_report; committed_validation) follow each other onto one worker.
FIRST = ("test_workflow.py", "test_report_browser.py", "test_report.py", "test_figure_layout.py", "test_estimate.py",
         "test_plan_frontier.py", "test_validation.py", "test_notebooks.py", "test_bad_input.py", "test_front_door.py")


def pytest_collection_modifyitems(items):
    """The files of FIRST first; every file's tests keep their order."""
    rank = {name: place for place, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(ROOT / "config")


@pytest.fixture(scope="session")
def selections(catalog):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return load_workflow_config(config, catalog)


@pytest.fixture(scope="session")
def review_report() -> str:
    """The review report's page, built once from the checkout for the tests that read it and the one that browses it."""
    from kvwall.report.page import build_report

    return build_report(ROOT)


@pytest.fixture(scope="session")
def committed_validation(catalog):
    """The committed serving measurements held against their bounds (kvwall.validation.run.validate_file): the rows
    as read, the validation map and the result, computed once for every test that reads them (none changes them)."""
    from kvwall.validation.run import validate_file

    return validate_file(ROOT / "data/reported/serving-measurements.csv", ROOT / "config/validation.yaml", catalog)


@pytest.fixture(scope="session")
def llama70(catalog):
    return catalog.models["llama-3-70b"]


@pytest.fixture(scope="session")
def forked_snakemake():
    """``run(args, cwd)``: `python -m snakemake` in a process forked from one that imported it once
    (tests/snakemake_runs.py)."""
    from snakemake_runs import Forker

    forker = Forker()
    yield forker.run
    forker.close()
