"""The project's prose, the README and the pages of docs/, for the tests that hold what it says to what is built."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Every page a reader meets: the README, then docs/ in name order.
PAGES = ("README.md", *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")))


def page(name: str) -> str:
    """The Markdown of one page, by its path from the repository root."""
    return (ROOT / name).read_text(encoding="utf-8")


def words(name: str) -> str:
    """A page's text with every run of whitespace one space, so a quoted sentence matches across line breaks."""
    return " ".join(page(name).split())
