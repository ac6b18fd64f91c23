"""The whole pipeline, run into a temporary directory: every expected artifact is built, byte-identical to the
committed one, and a second run finds nothing to do."""

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: What a checkout needs to build every artifact.
INPUTS = ("Snakefile", "workflow", "src", "config", "notebooks", "data", "matplotlibrc")
ARTIFACT_ROOTS = ("tables", "figures", "notebooks/executed", "CANONICAL-NUMBERS.md", "canonical-numbers.json")


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "--cores", "2", "--directory", str(workdir), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def _artifacts(base: Path) -> list[str]:
    found = []
    for name in ARTIFACT_ROOTS:
        path = base / name
        if path.is_file():
            found.append(name)
        elif path.is_dir():
            found += [p.relative_to(base).as_posix() for p in sorted(path.rglob("*")) if p.is_file()]
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory, root) -> Path:
    workdir = tmp_path_factory.mktemp("pipeline")
    for name in INPUTS:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, workdir / name, symlinks=True, ignore=shutil.ignore_patterns("executed"))
        elif source.exists():
            shutil.copy2(source, workdir / name)
    result = _snakemake(workdir, "--snakefile", str(workdir / "Snakefile"))
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


def test_every_committed_artifact_is_rebuilt_identically(built, root):
    committed = _artifacts(root)
    assert committed, "no committed artifacts"
    rebuilt = _artifacts(built)
    assert sorted(rebuilt) == sorted(committed)
    different = [name for name in committed if not filecmp.cmp(root / name, built / name, shallow=False)]
    assert different == []


def test_a_second_run_has_nothing_to_do(built):
    result = _snakemake(built, "--snakefile", str(built / "Snakefile"), "--dry-run")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr
