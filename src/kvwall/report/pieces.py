"""Each artifact as an HTML fragment that needs nothing outside the file: Markdown tables (mistune), captions in
reStructuredText (docutils), executed notebooks (nbconvert's basic template), figures as PNG data URIs."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import mistune
import nbformat
from docutils.core import publish_parts
from nbconvert import HTMLExporter

_MARKDOWN = mistune.create_markdown(plugins=["table"], escape=False)


def _demote(html: str, levels: int) -> str:
    """Headings moved down ``levels`` so that an artifact's title sits below the report's section heading."""
    return re.sub(r"<(/?)h([1-6])\b", lambda m: f"<{m[1]}h{min(6, int(m[2]) + levels)}", html)


def markdown(path: Path, levels: int = 2) -> str:
    """A Markdown artifact (a table, CANONICAL-NUMBERS.md) as HTML, its tables as <table>."""
    return _demote(_MARKDOWN(path.read_text(encoding="utf-8")), levels)


def restructured(text: str) -> str:
    """A caption in reStructuredText as an HTML fragment."""
    settings = {"report_level": 5, "halt_level": 5, "embed_stylesheet": False, "doctitle_xform": False}
    return publish_parts(text, writer="html", settings_overrides=settings)["fragment"]


def notebook(path: Path) -> str:
    """An executed notebook, its cells and outputs, as an HTML fragment (images already embedded in the notebook)."""
    exporter = HTMLExporter(template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nbformat.read(path, as_version=4))
    return _demote(body, 2)


def png_data_uri(path: Path) -> str:
    """A PNG inlined as a data URI."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
