"""Where each command is documented: the page that `kvwall --help` and `kvwall COMMAND --help` end by naming, as a
path from the repository root (the README, the documentation's home page, and the pages of docs/)."""

from __future__ import annotations

from types import MappingProxyType

SERVING, CONTRIBUTORS = "docs/serving.md", "docs/contributors.md"

#: The documentation page of each command, by the name its help prints (the parser's prog).
PAGES = MappingProxyType({
    "kvwall": "README.md",
    "kvwall footprint": SERVING,
    "kvwall crossover": SERVING,
    "kvwall regime": SERVING,
    "kvwall fit": SERVING,
    "kvwall list": SERVING,
    "kvwall import": "docs/importing.md",
    "kvwall plan": "docs/planning.md",
    "kvwall validate": "docs/validation.md",
    "kvwall measure": "docs/measure.md",
    "kvwall template": CONTRIBUTORS,
    "kvwall diff": CONTRIBUTORS,
    "kvwall build": CONTRIBUTORS,
    "kvwall benchmark": "docs/benchmark.md",
})


def documentation_line(prog: str) -> str | None:
    """The last line of the help of ``prog`` ("Documentation: docs/planning.md"); None for a command without a page."""
    page = PAGES.get(prog)
    return None if page is None else f"Documentation: {page}"
