"""The review report as one HTML page: the introduction, figures, tables, notebooks and CANONICAL-NUMBERS, in that
order, rendered by templates/report.html.j2 with the styles inline."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import jinja2
from pygments.formatters import HtmlFormatter

from kvwall.report import contents, pieces

INTRODUCTION = "workflow/report/workflow.rst"


def build_report(root: Path) -> str:
    """The report of the artifacts under ``root`` (a checkout after a build)."""
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (resources.files("kvwall.report") / "templates" / name).read_text(encoding="utf-8")),
        undefined=jinja2.StrictUndefined, autoescape=jinja2.select_autoescape(default=True), keep_trailing_newline=True,
    )
    figures = [{"item": f, "image": pieces.png_data_uri(f.png), "caption": pieces.restructured(f.caption.read_text(encoding="utf-8"))}
               for f in contents.figures(root)]
    tables = [{"item": t, "body": pieces.markdown(t.markdown)} for t in contents.tables(root)]
    notebooks = [{"item": n, "body": pieces.notebook(n.executed), "caption": pieces.restructured(n.caption.read_text(encoding="utf-8"))}
                 for n in contents.notebooks(root)]
    return environment.get_template("report.html.j2").render(
        introduction=pieces.restructured((root / INTRODUCTION).read_text(encoding="utf-8")),
        figures=figures, tables=tables, notebooks=notebooks,
        canonical=pieces.markdown(root / "CANONICAL-NUMBERS.md"),
        highlight_css=HtmlFormatter(style="default").get_style_defs(".highlight"),
    )
