"""Each artifact as an HTML fragment that needs nothing outside the file: Markdown (mistune), captions in
reStructuredText (docutils), figures as PNG data URIs re-encoded with a palette to keep the page small."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import mistune
from docutils.core import publish_parts
from PIL import Image

_MARKDOWN = mistune.create_markdown(plugins=["table"], escape=False)
#: Colours of a figure re-encoded for the report: antialiased text and lines keep their look at 256.
PALETTE_COLORS = 256


def demote(html: str, levels: int) -> str:
    """Headings moved down ``levels`` so that an artifact's title sits below the report's section heading."""
    return re.sub(r"<(/?)h([1-6])\b", lambda m: f"<{m[1]}h{min(6, int(m[2]) + levels)}", html)


def scrolling_tables(html: str) -> str:
    """Each <table> in a box of its own that scrolls sideways when the table is wider than the page column, so the
    page itself never does."""
    return re.sub(r"<table\b", '<div class="table-scroll"><table', html).replace("</table>", "</table></div>")


def markdown_text(text: str, levels: int = 2) -> str:
    """Markdown text as HTML, its tables as <table>."""
    return _MARKDOWN(text) if levels == 0 else demote(_MARKDOWN(text), levels)


def markdown(path: Path, levels: int = 2) -> str:
    """A Markdown artifact (a table, CANONICAL-NUMBERS.md) as HTML, its tables as <table>."""
    return markdown_text(path.read_text(encoding="utf-8"), levels)


def restructured(text: str) -> str:
    """A caption in reStructuredText as an HTML fragment."""
    settings = {"report_level": 5, "halt_level": 5, "embed_stylesheet": False, "doctitle_xform": False}
    return publish_parts(text, writer="html", settings_overrides=settings)["fragment"]


def png_data_uri(path: Path) -> str:
    """A PNG inlined as a data URI, re-encoded with an adaptive palette of PALETTE_COLORS (median cut, no dither:
    the same bytes on every run), a third of the committed file's size."""
    image = Image.open(path).convert("RGB").quantize(PALETTE_COLORS, method=Image.Quantize.MEDIANCUT,
                                                       dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
