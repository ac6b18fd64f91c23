"""The whole pipeline, run into a temporary directory: every expected artifact is built, byte-identical to the
committed one, and a second run finds nothing to do."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow

#: What a checkout needs to build every artifact.
INPUTS = ("Snakefile", "workflow", "src", "config", "notebooks", "data", "matplotlibrc", "tests/fixtures/hf-configs")
ARTIFACT_ROOTS = ("tables", "figures", "notebooks/executed", "CANONICAL-NUMBERS.md", "canonical-numbers.json")


TRACER = Path(__file__).parent / "import_trace"


def _snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "--cores", "2", "--directory", str(workdir), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)


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
    # Every job's process records the kvwall files it imported (tests/import_trace/sitecustomize.py).
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(TRACER), os.environ.get("PYTHONPATH")))),
        "KVWALL_IMPORT_TRACE": str(workdir / "import-trace.jsonl"),
    }
    result = _snakemake(workdir, "--snakefile", str(workdir / "Snakefile"), env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


@pytest.fixture(scope="module")
def snakemake(forked_snakemake):
    """``snakemake(workdir, *args)``: as _snakemake, in a process forked from one that imported Snakemake once
    (tests/snakemake_runs.py)."""
    return lambda workdir, *args: forked_snakemake(["--cores", "2", "--directory", workdir, *args], cwd=Path.cwd(),
                                                   timeout=900)


@pytest.fixture(scope="module")
def summary(built, snakemake) -> subprocess.CompletedProcess:
    """Snakemake's detailed summary of the built copy, taken once before any test edits it."""
    return snakemake(built, "--snakefile", built / "Snakefile", "--detailed-summary")


def test_every_job_lists_the_kvwall_code_it_imports(built, summary):
    """A rule's inputs hold every kvwall file its job imported, so that a change to one reruns the job."""
    listed = _listed_inputs(summary)
    imported: dict[str, set[str]] = {}
    for line in (built / "import-trace.jsonl").read_text().splitlines():
        trace = json.loads(line)
        if "module" in trace:
            imported.setdefault(trace["output"], set()).update(_module_files(built, trace["module"]))
    assert "notebooks/executed/01_footprint_and_crossovers.ipynb" in imported  # kernels are traced too
    assert "tables/derived/table4_traffic_crossover.csv" in imported
    missing = {output: sorted(files - listed[output]) for output, files in imported.items() if output in listed}
    assert {output: files for output, files in missing.items() if files} == {}


def _listed_inputs(summary: subprocess.CompletedProcess) -> dict[str, set[str]]:
    """Each output's inputs, as the detailed summary lists them."""
    assert summary.returncode == 0, summary.stderr[-2000:]
    rows = [line.split("\t") for line in summary.stdout.splitlines()]
    header = rows[0]
    return {row[0]: set(row[header.index("input-file(s)")].split(",")) for row in rows[1:] if len(row) == len(header)}


#: What a job may open beyond its rule's inputs: its own outputs and logs, the kvwall package (the import test above
#: checks it), Snakemake's copy of a script job's script, matplotlib's style file.
NOT_INPUTS = ("src/", "logs/", ".snakemake/scripts/", "matplotlibrc")
#: Notebooks read config/ through kvwall's loader, as a reviewer would; their rules list in its place the checked
#: view of the entries they use (kvwall.inputs.views), which tests/test_workflow.py's contributor loop holds to it.
NOTEBOOK_READS = ("config/",)


def test_every_job_reads_only_files_its_rule_lists(built, summary):
    """A job that opened a file its rule does not list would not rerun when that file changes."""
    listed = _listed_inputs(summary)
    opened: dict[str, set[str]] = {}
    for line in (built / "import-trace.jsonl").read_text().splitlines():
        trace = json.loads(line)
        if "opened" in trace and trace["output"] in listed:
            opened.setdefault(trace["output"], set()).add(trace["opened"])
    assert "tables/derived/table4_traffic_crossover.csv" in opened
    unlisted = {}
    for output, files in opened.items():
        allowed = NOT_INPUTS + (NOTEBOOK_READS if output.endswith(".ipynb") else ())
        extra = sorted(f for f in files - listed[output] if not f.startswith(allowed) and not _is_output_of(f, output, listed))
        if extra:
            unlisted[output] = extra
    assert unlisted == {}


def _is_output_of(path: str, output: str, listed: dict[str, set[str]]) -> bool:
    """Whether ``path`` is written by the same job as ``output`` (its siblings: .md beside .csv, .pdf beside .svg)."""
    return Path(path).with_suffix("") == Path(output).with_suffix("") or path == output


def _module_files(root: Path, module: str) -> set[str]:
    """The files importing ``module`` runs, as the workflow names them: the module and every package above it."""
    parts, files = module.split("."), set()
    for end in range(1, len(parts) + 1):
        base = "src/" + "/".join(parts[:end])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if (root / candidate).is_file():
                files.add(candidate)
    return files


def test_a_job_lists_only_the_modules_its_code_reaches(summary):
    """The map is not the whole tree: one table's job does not list another table's module or the command line."""
    rows = [line.split("\t") for line in summary.stdout.splitlines()]
    header = rows[0]
    listed = {row[0]: row[header.index("input-file(s)")].split(",") for row in rows[1:] if len(row) == len(header)}
    crossover = listed["tables/derived/table4_traffic_crossover.csv"]
    assert "src/kvwall/tables/crossovers.py" in crossover
    assert "src/kvwall/model/regimes.py" in crossover
    assert not [f for f in crossover if f.startswith(("src/kvwall/cli/", "src/kvwall/canonical/", "src/kvwall/figures/"))]
    assert "src/kvwall/tables/hardware.py" not in crossover
    roofline = listed["figures/fig3_roofline.svg"]
    assert "src/kvwall/figures/roofline.py" in roofline and "src/kvwall/figures/speedup.py" not in roofline


def _committed(root: Path) -> dict[str, bytes]:
    """The artifacts as git holds them (the index: what the next commit records), not as the working tree has them,
    which an earlier build on this machine may have rewritten."""
    listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *ARTIFACT_ROOTS], capture_output=True,
                             check=True).stdout.decode().split("\0")
    names = [name for name in listing if name]
    blobs = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input="".join(f":{n}\n" for n in names).encode(),
                           capture_output=True, check=True).stdout
    contents, at = {}, 0
    for name in names:
        header_end = blobs.index(b"\n", at)
        size = int(blobs[at:header_end].split()[2])
        contents[name] = blobs[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1
    return contents


def test_every_committed_artifact_is_rebuilt_identically(built, root):
    committed = _committed(root)
    assert committed, "no committed artifacts"
    assert sorted(_artifacts(built)) == sorted(committed)
    different = [name for name, blob in committed.items() if (built / name).read_bytes() != blob]
    assert different == []


def test_a_second_run_has_nothing_to_do(built, snakemake):
    # Snakemake's own console (the default profile's prints nothing when there is nothing to do).
    result = snakemake(built, "--snakefile", built / "Snakefile", "--dry-run", "--workflow-profile", "none")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


def _kvwall_build(workdir: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "import sys; from kvwall.cli.main import main; sys.exit(main())", "build",
               "--cores", "2"]
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=900)


def test_kvwall_build_of_an_unchanged_checkout_starts_no_snakemake(built):
    """The first plain `kvwall build` after the build runs Snakemake, which finds nothing to do, and leaves its stamp;
    the second starts no Snakemake (no run log); a file touched starts it again."""
    logs = built / ".snakemake" / "log"
    for expect_snakemake in (True, False):
        before = set(logs.iterdir())
        done = _kvwall_build(built)
        assert done.returncode == 0, done.stderr[-2000:]
        assert (set(logs.iterdir()) != before) is expect_snakemake
        assert ("nothing to do: no file changed since the last build" in done.stderr) is not expect_snakemake
    os.utime(built / "config" / "tiers.yaml")
    before = set(logs.iterdir())
    assert _kvwall_build(built).returncode == 0 and set(logs.iterdir()) != before


def test_a_device_and_a_model_added_rerun_only_the_catalogues_jobs(built, summary, snakemake):
    """The contributor loop: entries outside the paper's frame change the catalogue view alone (kvwall.inputs.views),
    so exactly the jobs that read it rerun; the notebooks, which read config/ itself, come out the same when forced.
    Runs last in this module: it edits the built copy."""
    from kvwall.cli.benchmark import add_device_and_model

    catalogue_jobs = {output for output, inputs in _listed_inputs(summary).items()
                      if ".snakemake/kvwall-views/catalogue.pickle" in inputs}
    assert "tables/derived/deployments.csv" in catalogue_jobs and "tables/derived/table4_traffic_crossover.csv" not in catalogue_jobs
    add_device_and_model(built)
    result = snakemake(built, "--snakefile", built / "Snakefile", "--workflow-profile", "none")
    assert result.returncode == 0, result.stderr[-4000:]
    ran = {output.strip() for line in (result.stdout + result.stderr).splitlines() if line.strip().startswith("output:")
           for output in line.split("output:", 1)[1].split(",")}
    assert ran == catalogue_jobs
    notebooks = sorted(str(p.relative_to(built)) for p in (built / "notebooks" / "executed").glob("*.ipynb"))
    before = {name: (built / name).read_bytes() for name in notebooks}
    forced = snakemake(built, "--snakefile", built / "Snakefile", "--forcerun", *(
        f"notebook_{Path(name).stem}" for name in notebooks))
    assert forced.returncode == 0, forced.stderr[-4000:]
    assert [name for name in notebooks if (built / name).read_bytes() != before[name]] == []
