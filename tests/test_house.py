"""The house: packages by idea, imports pointing one way (inputs <- model <- tier <- artifacts <- cli)."""

import json
import pkgutil
import shutil

import pytest

import kvwall
from kvwall.sources import SourceTree, import_circles

#: The floor of each room; a module imports only its own room and lower floors.
FLOORS = {
    "kvwall.units": 0,
    "kvwall.formats": 0,
    "kvwall.sources": 0,
    "kvwall.numerics": 0,
    "kvwall.job": 0,
    "kvwall.inputs": 1,
    "kvwall.model": 2,
    "kvwall.tier": 3,
    "kvwall.render": 4,
    "kvwall.measure": 5,
    "kvwall.validation": 6,
    "kvwall.audit": 7,
    "kvwall.tables": 7,
    "kvwall.figures": 7,
    "kvwall.report": 7,
    "kvwall.plan": 7,
    "kvwall.canonical": 8,
    "kvwall.cli": 9,
}
MODULES = sorted(m.name for m in pkgutil.walk_packages(kvwall.__path__, "kvwall."))


def room(module: str) -> str:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in FLOORS:
            return ".".join(parts[:end])
    raise AssertionError(f"{module} is in no room of FLOORS")


@pytest.fixture(scope="module")
def tree(root):
    return SourceTree(root / "src")


def test_every_module_has_a_room():
    assert [m for m in MODULES if m != "kvwall.__main__"] and all(room(m) for m in MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_imports_point_down(tree, module):
    here = room(module)
    upward = [
        imported
        for imported in tree.imports_of(module)
        if imported != "kvwall" and room(imported) != here and FLOORS[room(imported)] >= FLOORS[here]
    ]
    assert upward == []


def test_no_import_circles(tree):
    assert import_circles(tree, MODULES) == []


def test_the_circle_finder_finds_a_circle(tmp_path):
    for name, body in {"__init__": "", "a": "from kvwall.b import x\n", "b": "import kvwall.c\n",
                       "c": "from kvwall import a\n", "d": "import kvwall.a\n"}.items():
        (tmp_path / "kvwall").mkdir(exist_ok=True)
        (tmp_path / "kvwall" / f"{name}.py").write_text(body, encoding="utf-8")
    assert import_circles(SourceTree(tmp_path), ["kvwall.d", "kvwall.a"]) == [["kvwall.a", "kvwall.b", "kvwall.c", "kvwall.a"]]
    assert import_circles(SourceTree(tmp_path), ["kvwall.d"]) == [["kvwall.a", "kvwall.b", "kvwall.c", "kvwall.a"]]

def test_the_model_reads_no_files(tree):
    """The equations take typed specs; only kvwall.inputs reads YAML."""
    for module in (m for m in MODULES if room(m) == "kvwall.model"):
        assert not [i for i in tree.imports_of(module) if i.startswith("kvwall.inputs.loader")], module


def test_a_table_module_reaches_only_what_it_imports(tree):
    files = tree.files(["kvwall.tables.crossovers"])
    assert any(f.endswith("tables/crossovers.py") for f in files)
    assert any(f.endswith("model/regimes.py") for f in files)
    assert not any("/kvwall/catalogue/" in f for f in files)  # the shipped catalogue is packaged.py's
    assert any(f.endswith("inputs/schemas/models.schema.yaml") for f in tree.files(["kvwall.inputs.loader"]))  # it opens them
    assert any("/kvwall/catalogue/" in f for f in tree.files(["kvwall.inputs.packaged"]))
    assert not any(f.endswith(("tables/hardware.py", "cli/main.py")) for f in files)
    assert not any("__pycache__" in f for f in files)


def test_type_checking_imports_are_not_followed(tree):
    # kvwall.tables names Catalog and Table only for type checkers.
    assert "kvwall.render" not in tree.imports_of("kvwall.tables")


def test_a_cached_tree_answers_as_a_fresh_one_and_reads_an_edited_file_again(tmp_path, root):
    """kvwall.sources keeps what each file imports in a cache file, valid while the file's size and modification time
    stay; an edited file is read again, and a cache that is not a cache is ignored."""
    shutil.copytree(root / "src" / "kvwall", tmp_path / "src" / "kvwall", ignore=shutil.ignore_patterns("__pycache__"))
    script = tmp_path / "job.py"
    script.write_text("from kvwall.tables import crossovers\n", encoding="utf-8")
    cache = tmp_path / "sources.json"
    first = SourceTree(tmp_path / "src", cache)
    fresh = first.files_of_script(script)
    first.save()
    assert json.loads(cache.read_text(encoding="utf-8"))[script.as_posix()]["imports"] == ["kvwall.tables",
                                                                                         "kvwall.tables.crossovers"]
    assert SourceTree(tmp_path / "src", cache).files_of_script(script) == fresh
    script.write_text("from kvwall.tables import crossovers\nimport kvwall.tables.hardware\n", encoding="utf-8")
    assert any(f.endswith("tables/hardware.py") for f in SourceTree(tmp_path / "src", cache).files_of_script(script))
    cache.write_text('{"' + script.as_posix() + '": {"stamp": 3}}', encoding="utf-8")
    assert SourceTree(tmp_path / "src", cache).files_of_script(script) == SourceTree(tmp_path / "src").files_of_script(script)
