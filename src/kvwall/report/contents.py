"""What the review report shows, in the paper's order: figures with their numbers, tables with their captions
(workflow/report/tables.yaml), the audit notebooks and CANONICAL-NUMBERS.md; read from the artifacts on disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kvwall.inputs.loader import read_yaml

#: Figures in the paper's order with the number it prints (the tier timeline and the measured slopes accompany
#: Figure 3.1 and section 1 of CANONICAL-NUMBERS, unnumbered).
FIGURE_ORDER = (
    ("fig1_kv_footprint", "Figure 1"),
    ("fig2_arithmetic_intensity", "Figure 2"),
    ("fig3_roofline", "Figure 3"),
    ("fig3_1_four_constraints", "Figure 3.1"),
    ("tier_sustainability_vs_hiding", "Figure 3.1, companion"),
    ("fig4_regime_map", "Figure 4"),
    ("fig5_speedup", "Figure 5"),
    ("fig6_placement", "Figure 6"),
    ("fig7_speed_quality", "Figure 7"),
    ("fig8_reuse", "Figure 8"),
    ("measured_kv_slope", "Measured KV slope"),
    ("deployment_regimes", "Regimes per device of a deployment"),
    ("serving_tpot_against_bound", "Validation: measured TPOT against the bound"),
    ("serving_realization", "Validation: bound over measured per engine and device"),
    ("serving_gap_fits", "Validation: what the gap is made of"),
    ("serving_format_claim", "Validation: narrower weights, measured and predicted"),
)
#: The audit notebooks, in order, with their titles.
NOTEBOOKS = (
    ("01_footprint_and_crossovers", "(a) KV footprint and the two crossovers"),
    ("02_roofline_and_regimes", "(b) Roofline, placement and the three regimes"),
    ("03_comparison_matrix", "(c) The comparison matrix, Tables 5 and 7"),
    ("04_reproduction_audit", "(d) The reproduction audit"),
    ("05_serving_validation", "(e) One measured serving point against its bound"),
)
#: What an evidence folder of tables/ holds.
TABLE_CLASSES = {
    "paper": "side by side as the paper prints it; each column's class in its header",
    "audit": "reported against derived; each column's class in its header",
}
CAPTIONS = "workflow/report/tables.yaml"


@dataclass(frozen=True)
class FigureItem:
    stem: str
    number: str
    png: Path
    caption: Path  # reStructuredText, workflow/report/<stem>.rst


@dataclass(frozen=True)
class TableItem:
    artifact: str  # <evidence>/<name>
    paper: str
    caption: str
    columns: dict[str, str]
    markdown: Path

    @property
    def evidence(self) -> str:
        return self.artifact.split("/", 1)[0]

    @property
    def evidence_note(self) -> str:
        return TABLE_CLASSES.get(self.evidence, "")


@dataclass(frozen=True)
class NotebookItem:
    name: str
    title: str
    executed: Path
    caption: Path


def figures(root: Path) -> list[FigureItem]:
    """Every figure of FIGURE_ORDER; a PNG under figures/ that the order does not name is an error."""
    known = {stem for stem, _ in FIGURE_ORDER}
    unordered = sorted(p.stem for p in (root / "figures").glob("*.png") if p.stem not in known)
    if unordered:
        raise ValueError(f"figures without a place in kvwall.report.contents.FIGURE_ORDER: {', '.join(unordered)}")
    return [FigureItem(stem, number, root / "figures" / f"{stem}.png", root / "workflow/report" / f"{stem}.rst")
            for stem, number in FIGURE_ORDER]


def tables(root: Path) -> list[TableItem]:
    """Every table under tables/ (its Markdown), in the order of the caption file; one without a caption is an error."""
    captions = read_yaml(root / CAPTIONS)
    present = {str(p.relative_to(root / "tables").with_suffix("")) for p in (root / "tables").glob("*/*.md")}
    missing, stale = sorted(present - set(captions)), sorted(set(captions) - present)
    if missing or stale:
        raise ValueError(f"{CAPTIONS}: tables without a caption: {missing}; captions without a table: {stale}")
    return [TableItem(artifact, entry["paper"], entry["caption"], dict(entry["columns"]), root / "tables" / f"{artifact}.md")
            for artifact, entry in captions.items()]


def notebooks(root: Path) -> list[NotebookItem]:
    """The executed audit notebooks with their captions."""
    return [NotebookItem(name, title, root / "notebooks/executed" / f"{name}.ipynb", root / "workflow/report" / f"{name}.rst")
            for name, title in NOTEBOOKS]
