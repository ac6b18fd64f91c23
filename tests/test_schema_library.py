"""The schema checks do not depend on what else is installed: jsonschema's optional format libraries stay out."""

import subprocess
import sys

from kvwall.inputs.schema_library import FORMAT_LIBRARIES

SCRIPT = """
import pathlib, sys
from kvwall.inputs.loader import SpecError, validate
try:
    validate({"devices": {}}, "devices", "devices.yaml")
except SpecError as error:
    print("refused:", error)
print("imported while loading:", sorted(p.name for p in pathlib.Path(sys.argv[1]).glob("*.imported")))
import rfc3987_syntax, webcolors  # a later import of its own still finds them
print("imported later:", sorted(p.name for p in pathlib.Path(sys.argv[1]).glob("*.imported")))
"""


def test_installed_format_libraries_are_not_imported_with_the_schema_checks(tmp_path):
    # Stand-ins for the libraries Jupyter's packages install: each leaves a mark when it is imported.
    for name in FORMAT_LIBRARIES:
        (tmp_path / f"{name}.py").write_text(
            f"import pathlib\npathlib.Path({str(tmp_path)!r}, '{name}.imported').touch()\n"
            "def is_valid_syntax(*a): return True\nFQDN = validate_rfc3986 = validate_rfc3339 = is_valid_syntax\n")
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(tmp_path), "PATH": ""}, check=True)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("refused: devices.yaml") and "evidence" in lines[0]  # the checks still run
    assert lines[1] == "imported while loading: []"
    assert lines[2] == "imported later: ['rfc3987_syntax.imported', 'webcolors.imported']"


def test_a_notebook_job_imports_papermill_and_nbstripout_without_the_format_libraries(tmp_path):
    """Both read notebooks through nbformat, which imports jsonschema itself: the job script imports it first."""
    from pathlib import Path

    from kvwall.cli.benchmark import script_imports

    script = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / "notebook.py"
    imports = script_imports(script)
    assert imports.index("kvwall.inputs.schema_library") < min(imports.index("nbstripout"), imports.index("papermill.cli"))
    for name in FORMAT_LIBRARIES:
        (tmp_path / f"{name}.py").write_text(f"import pathlib\npathlib.Path({str(tmp_path)!r}, '{name}.imported').touch()\n")
    statement = "; ".join(f"import {module}" for module in imports) + "; import nbformat.validator"
    subprocess.run([sys.executable, "-c", statement], env={"PYTHONPATH": str(tmp_path), "PATH": ""}, check=True)
    # requests, which papermill imports, needs idna itself (a dependency of the default environment too)
    assert sorted(p.name for p in tmp_path.glob("*.imported")) == ["idna.imported"]
