"""An executed notebook as an HTML fragment: its cells and outputs (nbconvert's basic template), the equations of
its Markdown as MathML (kvwall.report.mathml), so the report renders them offline."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from pygments.formatters import HtmlFormatter

from kvwall.report import mathml
from kvwall.report.pieces import demote

#: Output formats whose text is Markdown, rendered like a Markdown cell.
MARKDOWN_OUTPUT = "text/markdown"
#: The Pygments style the page colours code with: its rules (code_css) and the token classes it gives one.
CODE_STYLE = HtmlFormatter(style="default")
_STYLED = frozenset(CODE_STYLE.class2style)
#: A token of nbconvert's highlighted code: a span of one Pygments class around its text.
_TOKEN = re.compile(r'<span class="([^"]*)">([^<]*)</span>')
#: Pygments' class of whitespace tokens.
WHITESPACE = "w"
_CODE_BLOCK = re.compile(r'(<div class="highlight[^"]*"><pre>)(.*?)(</pre>)', re.S)


def code_css() -> str:
    """The page's rules for highlighted code."""
    return CODE_STYLE.get_style_defs(".highlight")


def unstyled_tokens_as_text(html: str) -> str:
    """``html`` with every code token whose span shows nothing (a class the style gives no rule, or whitespace, whose
    colour no one sees) as its text alone: the page looks the same, lighter."""
    def token(match: re.Match) -> str:
        shown = match.group(1) in _STYLED and match.group(1) != WHITESPACE
        return match.group(0) if shown else match.group(2)

    return _CODE_BLOCK.sub(lambda m: m.group(1) + _TOKEN.sub(token, m.group(2)) + m.group(3), html)


def _protect_math(node: nbformat.NotebookNode) -> dict[str, mathml.Formula]:
    """Replace every formula of the Markdown cells and Markdown outputs by a placeholder; the MathML of each."""
    formulas: dict[str, mathml.Formula] = {}
    for cell in node.cells:
        if cell.cell_type == "markdown":
            cell.source = mathml.protect(cell.source, formulas)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MARKDOWN_OUTPUT in data:
                data[MARKDOWN_OUTPUT] = mathml.protect(data[MARKDOWN_OUTPUT], formulas)
    return formulas


def notebook(path: Path) -> str:
    """An executed notebook, its cells and outputs, as an HTML fragment (images already embedded in the notebook)."""
    node = nbformat.read(path, as_version=4)
    formulas = _protect_math(node)
    exporter = HTMLExporter(template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(node)
    return demote(mathml.restore(unstyled_tokens_as_text(body), formulas), 2)
