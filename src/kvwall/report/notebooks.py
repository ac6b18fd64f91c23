"""An executed notebook as an HTML fragment: its cells and outputs (nbconvert's basic template), the equations of
its Markdown as MathML (kvwall.report.mathml), so the report renders them offline."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from kvwall.report import mathml
from kvwall.report.pieces import demote

#: Output formats whose text is Markdown, rendered like a Markdown cell.
MARKDOWN_OUTPUT = "text/markdown"


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
    return demote(mathml.restore(body, formulas), 2)
