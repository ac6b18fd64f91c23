"""The workflow passes the checks the Snakemake workflow catalog runs: `snakemake --lint` and `snakefmt --check`."""

import subprocess
import sys
from pathlib import Path

import pytest

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow


def _run(root: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)


def test_snakemake_lint_finds_nothing(root):
    result = _run(root, sys.executable, "-m", "snakemake", "--lint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_snakefmt_leaves_the_workflow_unchanged(root):
    files = ["Snakefile", *sorted(str(p.relative_to(root)) for p in (root / "workflow" / "rules").glob("*.smk"))]
    result = _run(root, sys.executable, "-m", "snakefmt", "--check", *files)
    assert result.returncode == 0, result.stdout + result.stderr
