"""TeX between dollar signs as MathML, which browsers render natively: the report's equations need no script and
no network (latex2mathml). ``$$...$$`` becomes a display equation, ``$...$`` an inline one."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from latex2mathml.converter import convert

#: A display equation ($$...$$, over lines) or an inline one ($...$ within a line); a backslash-escaped $ is text.
MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\\)\$", re.S)
_PLACEHOLDER = re.compile(r"kvwallmath\d+x")
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Formula:
    """One formula: its TeX and its MathML."""

    tex: str
    mathml: str


def to_mathml(tex: str, display: bool) -> str:
    """One TeX formula as a <math> element."""
    return convert(tex.strip(), display="block" if display else "inline")


def protect(text: str, formulas: dict[str, Formula]) -> str:
    """``text`` with each formula replaced by a placeholder that Markdown leaves alone; each formula is added to
    ``formulas`` under its placeholder (one numbering across every text protected into the same dict)."""

    def hold(match: re.Match) -> str:
        key = f"kvwallmath{len(formulas)}x"
        display = match[1] is not None
        tex = html.unescape(match[1] if display else match[2])
        formulas[key] = Formula(tex.strip(), to_mathml(tex, display))
        return key

    return MATH.sub(hold, text)


def restore(rendered: str, formulas: dict[str, Formula]) -> str:
    """The rendered HTML with every placeholder of ``protect`` replaced by its MathML; inside a tag (an anchor id
    made from a heading) by its TeX, escaped, since an attribute holds no markup."""
    if not formulas:
        return rendered
    in_tags = _TAG.sub(lambda tag: _PLACEHOLDER.sub(lambda m: html.escape(formulas[m[0]].tex, quote=True), tag[0]), rendered)
    return _PLACEHOLDER.sub(lambda m: formulas[m[0]].mathml, in_tags)
