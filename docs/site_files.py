"""MkDocs hooks: the site's pages are the repository's own Markdown, read where it lives.

README.md is the home page and the committed artifacts (tables/, figures/, notebooks/executed/,
CANONICAL-NUMBERS.md) are served at the paths they have in the repository, so one link works both on a
repository's web view and on the site: a page of docs/ links `../figures/fig1_kv_footprint.png`, the README
links `docs/planning.md`, and the site reads them as its own `figures/...` and `planning.md`.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
#: What the site serves from outside docs/, by the repository path it has there.
ARTIFACTS = ("CANONICAL-NUMBERS.md", "figures/*.png", "figures/*.svg", "notebooks/executed/*.ipynb", "tables/**/*.md", "tables/**/*.csv")
#: A table's Markdown past this size is served as its CSV alone: a page of thousands of rows is no page to read.
LARGEST_TABLE_PAGE = 100_000
#: A Markdown link's target, up to its closing parenthesis.
LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def _served(config, src_uri: str, path: Path) -> File:
    return File.generated(config, src_uri, abs_src_path=str(path))


def on_files(files: Files, config) -> Files:
    """Add the README as the home page and every committed artifact at its repository path."""
    files.append(_served(config, "index.md", ROOT / "README.md"))
    for pattern in ARTIFACTS:
        for path in sorted(ROOT.glob(pattern)):
            if path.suffix == ".md" and path.parts[-3] == "tables" and path.stat().st_size > LARGEST_TABLE_PAGE:
                continue
            files.append(_served(config, path.relative_to(ROOT).as_posix(), path))
    return files


def _site_target(target: str, home: bool) -> str:
    """A repository-relative link target as the site resolves it (docs/ is the site's root)."""
    if target.startswith(("http://", "https://", "#", "mailto:")):
        return target
    if home:
        return target.removeprefix("docs/")
    if target.startswith("../README.md"):
        return "index.md" + target.removeprefix("../README.md")
    return target.removeprefix("../")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Re-point the links of the home page and of docs/ at the site's own paths (artifact pages keep theirs)."""
    uri = page.file.src_uri
    if uri != "index.md" and "/" in uri or uri == "CANONICAL-NUMBERS.md":
        return markdown
    home = uri == "index.md"
    return LINK.sub(lambda m: m[1] + _site_target(m[2], home) + m[3], markdown)
