"""What a newcomer meets, as `kvwall benchmark` prints it: the README's length, whether the documentation site builds
with every link and anchor resolving (`mkdocs build --strict`), and the import circles among kvwall's modules."""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kvwall.sources import SourceTree, import_circles

#: The most lines the README may hold: what kvwall is, the quick start, one example per user, the classes, links.
README_LINES = 250


@dataclass(frozen=True)
class House:
    """The README's lines, whether the site built strict (None: MkDocs not installed) and the import circles."""

    readme_lines: int
    docs_strict: bool | None
    import_circles: int


def docs_build_strict(repo: Path) -> bool | None:
    """Whether `mkdocs build --strict` of ``repo`` succeeds, into a temporary folder; None without MkDocs."""
    if importlib.util.find_spec("mkdocs") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="kvwall-site-") as site:
        built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", site],
                               cwd=repo, capture_output=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return built.returncode == 0


def house_of(repo: Path) -> House:
    """The README's lines, the strict site build and the import circles of the kvwall package under ``repo/src``."""
    import kvwall

    modules = sorted(m.name for m in pkgutil.walk_packages(kvwall.__path__, "kvwall."))
    readme = (repo / "README.md").read_text(encoding="utf-8")
    return House(len(readme.splitlines()), docs_build_strict(repo),
                 len(import_circles(SourceTree(repo / "src"), modules)))
