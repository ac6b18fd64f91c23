"""The kvwall source files a piece of code reads: the static import closure of a script, a notebook or a module.

The workflow lists these files as a rule's inputs, so that a change to one module reruns exactly the jobs whose code
imports it (directly or through other kvwall modules). Imports are found in the syntax tree, not by running the code:
``import kvwall.x``, ``from kvwall.x import y`` (``y`` a submodule or a name), and every package ``__init__`` on the
way, which Python runs on import. Imports under ``if TYPE_CHECKING:`` are not followed, since they never run. A data
folder of a package (schemas, templates, the shipped catalogue) belongs to the modules that open it by name,
``resources.files("kvwall.inputs") / "schemas"``. A module that is imported by name at run time
(``importlib.import_module``) is named by the caller as an extra entry.

What a file imports and opens can be kept in a cache file between runs, each entry valid while the file's size and
modification time stay those it was read at, so that a workflow that lists its rules' code does not parse every
module again at every start.
"""

from __future__ import annotations

import ast
import json
import os
from functools import lru_cache
from pathlib import Path

PACKAGE = "kvwall"


def _is_type_checking_guard(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


#: The nodes that are or hold statements: an import is never inside an expression.
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _imported_names(tree: ast.AST) -> list[str]:
    """Dotted kvwall names imported by the code of ``tree``: modules, and ``module.name`` for ``from`` imports."""
    names: list[str] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        if _is_type_checking_guard(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == PACKAGE:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        # imports are statements: only statements (and the handlers and cases that hold them) can hold one
        pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDS_STATEMENTS))
    return names


def _data_folders_named(tree: ast.AST) -> list[tuple[str, str]]:
    """(package, folder) of every ``resources.files("<package>") / "<folder>"`` in the code of ``tree``."""
    named = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            continue
        left, right = node.left, node.right
        if (isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "files"
                and len(left.args) == 1 and isinstance(left.args[0], ast.Constant) and isinstance(right, ast.Constant)
                and isinstance(left.args[0].value, str) and str(left.args[0].value).split(".")[0] == PACKAGE):
            named.append((left.args[0].value, right.value))
    return named


def _is_data_file(path: Path) -> bool:
    """A file in a data folder of a package: not a subpackage, not a bytecode cache."""
    folder = path.parent
    return path.is_file() and folder.name != "__pycache__" and not (folder / "__init__.py").exists()


def _syntax_tree(path: Path, text: str) -> ast.AST:
    """The syntax tree of a .py file's ``text``, or of an .ipynb's code cells (their IPython magics and shell lines left
    out)."""
    if path.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
        return ast.parse("\n".join(lines), str(path))
    return ast.parse(text, str(path))


class SourceTree:
    """The kvwall package under ``source_root`` (the folder that holds ``kvwall/``), read as files; with ``cache``,
    what each file imports and opens is read from and kept in that JSON file (save writes it)."""

    def __init__(self, source_root: str | Path, cache: str | Path | None = None):
        self.root = Path(source_root)
        self.cache = Path(cache) if cache is not None else None
        self._known = self._read_cache()
        self._learned = False

    def _read_cache(self) -> dict:
        if self.cache is None or not self.cache.is_file():
            return {}
        try:
            known = json.loads(self.cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return known if isinstance(known, dict) else {}

    @lru_cache(maxsize=None)
    def _facts(self, path: Path) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        """The dotted kvwall names the code of ``path`` imports and the (package, folder) data folders it opens."""
        stat = path.stat()
        stamp = [stat.st_size, stat.st_mtime_ns]
        known = self._known.get(path.as_posix())
        try:
            if known["stamp"] == stamp:
                return tuple(map(str, known["imports"])), tuple((str(p), str(f)) for p, f in known["data"])
        except (KeyError, TypeError, ValueError):
            pass
        text = path.read_text(encoding="utf-8")
        tree = _syntax_tree(path, text)
        # a data folder is named through an attribute called files: code without the word names none
        opens = _data_folders_named(tree) if "files" in text else []
        facts = tuple(_imported_names(tree)), tuple(opens)
        self._known[path.as_posix()] = {"stamp": stamp, "imports": list(facts[0]), "data": [list(f) for f in facts[1]]}
        self._learned = True
        return facts

    def save(self) -> None:
        """Write what this tree learned to its cache file (replaced whole, never left half written)."""
        if self.cache is None or not self._learned:
            return
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        partial = self.cache.with_name(f".{self.cache.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(self._known, sort_keys=True), encoding="utf-8")
        os.replace(partial, self.cache)
        self._learned = False

    @lru_cache(maxsize=None)
    def _file(self, module: str) -> Path | None:
        """The file of the dotted ``module``: ``a/b.py`` or ``a/b/__init__.py``; None for a name that is no module."""
        base = self.root.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def _with_parents(self, module: str) -> list[str]:
        parts = module.split(".")
        return [".".join(parts[: i + 1]) for i in range(len(parts))]

    @lru_cache(maxsize=None)
    def imports_of(self, module: str) -> tuple[str, ...]:
        """The kvwall modules that ``module`` imports directly, each with the packages above it."""
        return self._modules_named(list(self._facts(self._file(module))[0]))

    def _modules_named(self, names: list[str]) -> tuple[str, ...]:
        found: set[str] = set()
        for name in names:
            for candidate in self._with_parents(name):
                if self._file(candidate) is not None:
                    found.add(candidate)
        return tuple(sorted(found))

    def closure(self, modules: list[str] | tuple[str, ...]) -> list[str]:
        """Every kvwall module that importing ``modules`` runs, the packages above each one included."""
        seen: set[str] = set()
        pending = [m for name in modules for m in self._with_parents(name) if self._file(m) is not None]
        while pending:
            module = pending.pop()
            if module in seen:
                continue
            seen.add(module)
            pending.extend(self.imports_of(module))
        return sorted(seen)

    def files(self, modules: list[str] | tuple[str, ...]) -> list[str]:
        """The source files of ``closure(modules)`` and the package data files they read, as sorted paths."""
        paths: set[Path] = set()
        for module in self.closure(modules):
            paths.add(self._file(module))
            paths.update(self._data_read_by(module))
        return sorted(p.as_posix() for p in paths)

    @lru_cache(maxsize=None)
    def _data_read_by(self, module: str) -> tuple[Path, ...]:
        """The files of the package data folders ``module`` opens as ``resources.files("<package>") / "<folder>"``."""
        found: list[Path] = []
        for package, folder in self._facts(self._file(module))[1]:
            found += self._package_data(self.root.joinpath(*package.split("."))).get(folder, ())
        return tuple(found)

    @lru_cache(maxsize=None)
    def _package_data(self, package: Path) -> dict[str, tuple[Path, ...]]:
        """The data files (templates, schemas) of each data folder of ``package``, by folder name."""
        folders: dict[str, list[Path]] = {}
        for p in sorted(package.glob("*/*")):
            if _is_data_file(p):
                folders.setdefault(p.parent.name, []).append(p)
        return {name: tuple(files) for name, files in folders.items()}

    def files_of_script(self, script: str | Path, *extra_modules: str) -> list[str]:
        """The kvwall files that running ``script`` (a .py file or an .ipynb's code cells) reads, with ``extra_modules``."""
        return self.files([*self.modules_of_script(script), *extra_modules])

    def modules_of_script(self, script: str | Path) -> tuple[str, ...]:
        """The kvwall modules that ``script`` imports directly."""
        return self._modules_named(list(self._facts(Path(script))[0]))


def import_circles(tree: SourceTree, modules: list[str]) -> list[list[str]]:
    """Every import circle among ``modules``, each as the path that closes it (first module repeated last), found
    by a depth-first walk of the import graph (importing a package's module runs the package first: no circle)."""
    found, finished, path = [], set(), []

    def walk(module: str) -> None:
        path.append(module)
        for imported in tree.imports_of(module):
            if imported == module or module.startswith(imported + "."):
                continue
            if imported in path:
                found.append(path[path.index(imported):] + [imported])
            elif imported not in finished:
                walk(imported)
        path.pop()
        finished.add(module)

    for module in modules:
        if module not in finished:
            walk(module)
    return found
