"""CANONICAL-NUMBERS.md and canonical-numbers.json: every headline number with its value, unit, class and source.

A Number is one value in one unit with exactly one evidence class and one source (the equation and spec keys of a
derived number, the citation of a reported one, the platform and raw data of a measured one). Numbers sit in rows,
rows in blocks (tables), blocks in the seven sections; the audit pairs a published number with ours. The Markdown
is rendered by a jinja2 template, the JSON twin from the same objects, so the two never disagree.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from importlib import resources

import jinja2

from kvwall.inputs.specs import EVIDENCE_CLASSES
from kvwall.units import in_unit

#: What each evidence class means here, in the order the document explains them.
EVIDENCE_MEANINGS = {
    "spec": "Copied from a vendor datasheet or a model's published config; the file and key are named.",
    "assumption": "A stated modelling choice, not a fact: an operating point, a utilization, a link scenario.",
    "derived": "Computed here from spec and assumption inputs by a named equation (or from reported values, which "
    "it then names as its inputs).",
    "reported": "A third party's published result, cited and not reproduced: it audits derivations and never feeds them.",
    "measured": "Measured by this pipeline on named hardware, with the raw data committed.",
}

_DISPLAY_SUFFIX = {"percent": "%", "×": "×", "ratio": "", "count": "", "": ""}
#: What separates the parts of a source: an equation, each spec key, each table.
SOURCE_PARTS = "; "




def show(value: float, unit: str, decimals: int) -> str:
    """A value already in ``unit``, printed with thousands separators and its unit: '81.9 us', '7.6%', '3.37×'."""
    text = f"{value:,.{decimals}f}"
    suffix = _DISPLAY_SUFFIX.get(unit, f" {unit}")
    return f"{text}{suffix}"


def show_as_given(given: float, unit: str) -> str:
    """A published value as its source prints it: '16.34 ms/GiB', '87%', '0.991'."""
    return f"{given:,g}{_DISPLAY_SUFFIX.get(unit, f' {unit}')}"


@dataclass(frozen=True)
class Number:
    """One value in one unit, with one evidence class and its source."""

    id: str
    quantity: str
    value: float | int | str | bool
    unit: str
    display: str
    evidence: str
    source: str

    def __post_init__(self):
        if self.evidence not in EVIDENCE_CLASSES:
            raise ValueError(f"number {self.id!r}: unknown evidence class {self.evidence!r}")
        if not self.source:
            raise ValueError(f"number {self.id!r} has no source")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise ValueError(f"number {self.id!r} is not finite")


def quantity(number_id: str, name: str, base_value: float, unit: str, decimals: int, evidence: str, source: str) -> Number:
    """A Number from a base-unit value, converted to ``unit`` (through kvwall.units) and printed."""
    value = float(in_unit(float(base_value), unit))
    return Number(number_id, name, value, unit, show(value, unit, decimals), evidence, source)


def label(number_id: str, name: str, text: str, evidence: str, source: str) -> Number:
    """A Number whose value is a word or phrase: a regime, 'holds', 'cannot load', a quoted claim."""
    return Number(number_id, name, text, "", text, evidence, source)


@dataclass(frozen=True)
class Row:
    """One table row: a label and numbers that share one evidence class and one source."""

    label: str
    numbers: tuple[Number, ...]

    def __post_init__(self):
        if len({n.evidence for n in self.numbers}) != 1 or len({n.source for n in self.numbers}) != 1:
            raise ValueError(f"row {self.label!r} mixes evidence classes or sources")

    @property
    def evidence(self) -> str:
        return self.numbers[0].evidence

    @property
    def source(self) -> str:
        return self.numbers[0].source


@dataclass(frozen=True)
class Block:
    """A table: long (one number per row, columns Quantity/Value) or wide (named columns, one number per cell)."""

    title: str
    rows: tuple[Row, ...]
    note: str = ""
    header: str = "Quantity"
    columns: tuple[str, ...] = ()

    def __post_init__(self):
        width = len(self.columns) or 1
        for row in self.rows:
            if len(row.numbers) != width:
                raise ValueError(f"block {self.title!r}: row {row.label!r} has {len(row.numbers)} numbers, expected {width}")

    @property
    def shared_evidence(self) -> str:
        """The evidence class every row has, named once above the table; empty where rows differ."""
        classes = {row.evidence for row in self.rows}
        return classes.pop() if len(classes) == 1 else ""

    @property
    def shared_source(self) -> str:
        """The parts ('; '-separated) of a source that every row names, in order, said once above the table."""
        parts = [part.split(SOURCE_PARTS) for part in (row.source for row in self.rows)]
        if not parts:
            return ""
        common = set.intersection(*(set(p) for p in parts))
        return SOURCE_PARTS.join(part for part in parts[0] if part in common)

    def row_source(self, row: Row) -> str:
        """What a row's source adds to the shared one: the parts no other row names too."""
        shared = set(self.shared_source.split(SOURCE_PARTS))
        return SOURCE_PARTS.join(part for part in row.source.split(SOURCE_PARTS) if part not in shared)

    @property
    def sources_differ(self) -> bool:
        """Whether any row's source says more than the shared one (the table then keeps a Source column)."""
        return any(self.row_source(row) for row in self.rows)


@dataclass(frozen=True)
class Section:
    """One numbered section: an introduction, its blocks, and Markdown kept verbatim (committed measurement tables)."""

    number: int
    title: str
    intro: str
    blocks: tuple[Block, ...]
    verbatim: tuple[str, ...] = field(default_factory=tuple)


#: References a reason may name by number: sections, equations, tables (a reason holds words, never values).
_REFERENCES = re.compile(r"§\d+(\.\d+)*|\b(Eq\.|Table|Tables|Section|Sections) \d+(\.\d+)*")
#: A word that is a value: 52, 2.31, 5,242,880, 35.7%, 47x, 1.25× (names such as H100 or LPDDR5X are not).
_VALUE = re.compile(r"[-+~≈]?\d[\d,.]*(%|x|×)?")


def states_a_value(text: str) -> bool:
    """True when ``text`` holds a numeric value outside its section, equation and table references."""
    words = _REFERENCES.sub("", text).split()
    return any(_VALUE.fullmatch(word.strip("()[]\"'“”‘’.,;:")) for word in words)


@dataclass(frozen=True)
class AuditEntry:
    """A published number against ours: agrees or differs, and why.

    The reason is words only; a number it rests on is one of ``working``, with its own class and source, so that no
    cell holds values of two classes.
    """

    id: str
    claim: str
    published: Number
    ours: Number
    status: str
    reason: str
    working: tuple[Number, ...] = ()

    def __post_init__(self):
        if self.published.evidence != "reported" or self.ours.evidence not in ("derived", "spec"):
            raise ValueError(f"audit {self.id!r}: the published side is reported, ours derived (or a spec it rests on)")
        if states_a_value(self.reason):
            raise ValueError(f"audit {self.id!r}: the reason states a value; give it as a working number: {self.reason!r}")


@dataclass(frozen=True)
class Document:
    """The whole document: numbered sections in order, the audit, then the sections that follow it."""

    sections: tuple[Section, ...]
    audit_intro: str
    audit: tuple[AuditEntry, ...]
    after_audit: tuple[Section, ...] = ()  # sections numbered after the audit (§8 Validation)

    def __post_init__(self):
        ids = [n.id for n in self.numbers()] + [e.id for e in self.audit] + [n.id for e in self.audit for n in e.working]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"ids given twice: {duplicates}")

    def numbers(self) -> list[Number]:
        return [n for s in (*self.sections, *self.after_audit) for b in s.blocks for r in b.rows for n in r.numbers]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(document: Document) -> str:
    """CANONICAL-NUMBERS.md from the package template."""
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (resources.files("kvwall.canonical") / "templates" / name).read_text(encoding="utf-8")),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    environment.filters["cell"] = _cell
    template = environment.get_template("canonical-numbers.md.j2")
    return template.render(document=document, evidence=EVIDENCE_MEANINGS, audit_section=len(document.sections) + 1)


def to_json(document: Document) -> str:
    """The machine-readable twin: every number with id, quantity, value, unit, display, evidence and source."""
    payload = {
        "evidence_classes": EVIDENCE_MEANINGS,
        "sections": [
            {"number": s.number, "title": s.title,
             "numbers": [asdict(n) for b in s.blocks for r in b.rows for n in r.numbers]}
            for s in (*document.sections, *document.after_audit)
        ],
        "audit": [asdict(entry) for entry in document.audit],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def numbers_by_id(payload: dict) -> dict[str, dict]:
    """Every number of a parsed canonical-numbers.json, by id (for figures that quote them)."""
    return {n["id"]: n for section in payload["sections"] for n in section["numbers"]}

