"""The review report as one HTML page: a navigation pane with an entry per figure, table, notebook and section of
CANONICAL-NUMBERS, then the introduction, figures, tables, notebooks and CANONICAL-NUMBERS in that order, rendered by
templates/report.html.j2 with its styles and its one small script (sorting and filtering tables) inline."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from kvwall.report import contents, pieces
from kvwall.report.notebooks import code_css, notebook
from kvwall.report.tables import shown_table

INTRODUCTION = "workflow/report/workflow.rst"
CANONICAL = "CANONICAL-NUMBERS.md"
#: The heading level of a CANONICAL-NUMBERS section (its '##') once demoted below the report's headings.
_CANONICAL_SECTION = re.compile(r"<h4>(.*?)</h4>", re.S)


@dataclass(frozen=True)
class Entry:
    """One link of the navigation pane."""

    anchor: str
    label: str


def _template(name: str) -> str:
    return (resources.files("kvwall.report") / "templates" / name).read_text(encoding="utf-8")


def canonical_sections(rendered: str) -> tuple[str, list[Entry]]:
    """CANONICAL-NUMBERS as HTML with an id on each numbered section's heading, and an entry per section."""
    entries: list[Entry] = []

    def anchored(match: re.Match) -> str:
        anchor = f"canonical-{len(entries) + 1}"
        entries.append(Entry(anchor, html.unescape(re.sub(r"<[^>]+>", "", match[1])).strip()))
        return f'<h4 id="{anchor}">{match[1]}</h4>'

    return _CANONICAL_SECTION.sub(anchored, rendered), entries


def build_report(root: Path) -> str:
    """The report of the artifacts under ``root`` (a checkout after a build); its links to CSVs are relative to
    ``root``, where the report is written."""
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template), undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(default=True), keep_trailing_newline=True,
    )
    figures = [{"item": f, "image": pieces.png_data_uri(f.png), "caption": pieces.restructured(f.caption.read_text(encoding="utf-8"))}
               for f in contents.figures(root)]
    tables = [{"item": t, "shown": shown_table(t.markdown, t.csv), "csv": t.csv.relative_to(root).as_posix()}
              for t in contents.tables(root)]
    for table in tables:
        table["body"] = pieces.scrolling_tables(table["shown"].html)
    notebooks = [{"item": n, "body": notebook(n.executed), "caption": pieces.restructured(n.caption.read_text(encoding="utf-8"))}
                 for n in contents.notebooks(root)]
    canonical, canonical_entries = canonical_sections(pieces.scrolling_tables(pieces.markdown(root / CANONICAL)))
    navigation = {
        "Figures": [Entry(f"figure-{f['item'].stem}", f"{f['item'].number}: {f['item'].title}"
                          if f["item"].number.startswith("Figure") else f["item"].title) for f in figures],
        "Tables": [Entry(t["item"].anchor, t["item"].label) for t in tables],
        "Audit notebooks": [Entry(f"notebook-{n['item'].name}", n["item"].title) for n in notebooks],
        "CANONICAL-NUMBERS": canonical_entries,
    }
    return environment.get_template("report.html.j2").render(
        introduction=pieces.restructured((root / INTRODUCTION).read_text(encoding="utf-8")),
        navigation=navigation, figures=figures, tables=tables, notebooks=notebooks, canonical=canonical,
        style=_template("report.css"), script=_template("report.js"),
        highlight_css=code_css(),
    )
