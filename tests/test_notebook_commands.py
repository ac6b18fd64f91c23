"""The notebooks and the reviewers' page give the same re-derivation commands, and they never write the committed copies."""

import json
import re

import pytest
from docs_pages import page

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow

NOTEBOOKS = ("01_footprint_and_crossovers", "02_roofline_and_regimes", "03_comparison_matrix", "04_reproduction_audit")


def _intro(root, name):
    return "".join(json.loads((root / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"][0]["source"])


def _commands(text):
    """Snakemake and papermill command lines of a text, continuation lines joined."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    return {" ".join(line.strip().strip("`").split()) for line in re.findall(r"uv run --frozen (?:snakemake|papermill)[^`\n]*", joined)}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_rederivation_writes_its_own_path(root, name):
    commands = _commands(_intro(root, name))
    assert len(commands) == 2
    assert all(f"notebooks/rederived/{name}.ipynb" in c and "notebooks/executed" not in c for c in commands)


def test_the_reviewers_page_gives_the_notebooks_commands(root):
    readme = _commands(page("docs/reviewers.md"))
    assert _commands(_intro(root, NOTEBOOKS[0])) <= readme


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_copies_run_with_the_papers_parameters(root, name):
    executed = json.loads((root / "notebooks" / "executed" / f"{name}.ipynb").read_text(encoding="utf-8"))
    injected = [c for c in executed["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    names = {line.split("=")[0].strip() for c in injected for line in "".join(c["source"]).splitlines() if "=" in line}
    assert names <= {"config_dir", "tables_dir", "printed_file", "captions_file"}  # input paths only


def test_rederived_folder_is_ignored(root):
    assert (root / "notebooks" / "rederived" / ".gitignore").read_text().splitlines()[1:] == ["*", "!.gitignore"]


def test_the_reviewers_page_renders_a_notebook_as_written(root, tmp_path):
    """The nbconvert line of the reviewers' page, run as written but into a temporary folder."""
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    (line,) = re.findall(r"^uv run --frozen (jupyter nbconvert [^\n]+)$", page("docs/reviewers.md"), re.M)
    words = shlex.split(line)
    assert words[words.index("--output-dir") + 1] == "notebooks/rederived" and words[-1].endswith(".ipynb")
    words[words.index("--output-dir") + 1] = str(tmp_path)
    jupyter = Path(sys.executable).with_name("jupyter")
    subprocess.run([str(jupyter), *words[1:]], cwd=root, check=True, capture_output=True)
    rendered = (tmp_path / Path(words[-1]).with_suffix(".html").name).read_text(encoding="utf-8")
    assert "Audit (a)" in rendered


def test_the_reviewers_page_starts_the_notebook_front_end_as_root_too(root):
    assert "jupyter notebook --allow-root notebooks/" in page("docs/reviewers.md")
