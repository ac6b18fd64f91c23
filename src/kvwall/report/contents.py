"""What the review report shows, in the paper's order: figures with their numbers, tables with their captions
(workflow/report/tables.yaml), the audit notebooks and CANONICAL-NUMBERS.md; read from the artifacts on disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kvwall.inputs.loader import read_yaml

#: Figures in the paper's order with the number it prints (the tier timeline and the measured slopes accompany
#: Figure 3.1 and section 1 of CANONICAL-NUMBERS, unnumbered).
FIGURE_ORDER = (
    ("fig1_kv_footprint", "Figure 1", "KV footprint"),
    ("fig2_arithmetic_intensity", "Figure 2", "Arithmetic intensity"),
    ("fig3_roofline", "Figure 3", "Roofline"),
    ("fig3_1_four_constraints", "Figure 3.1", "Four constraints"),
    ("tier_sustainability_vs_hiding", "Figure 3.1, companion", "Sustainability against hiding"),
    ("fig4_regime_map", "Figure 4", "Three-regime map"),
    ("fig5_speedup", "Figure 5", "Speedup against context"),
    ("fig6_placement", "Figure 6", "Placement"),
    ("fig7_speed_quality", "Figure 7", "Speed-quality plane"),
    ("fig8_reuse", "Figure 8", "W4 reuse"),
    ("measured_kv_slope", "Measured KV slope", "Measured KV slope"),
    ("deployment_regimes", "Regimes per device of a deployment", "Regimes of a deployment"),
    ("serving_tpot_against_bound", "Validation: measured TPOT against the bound", "TPOT against the bound"),
    ("serving_realization", "Validation: bound over measured per engine and device", "Bound over measured"),
    ("serving_cost_shares", "Validation: what the measured TPOT is made of", "What the TPOT is made of"),
    ("serving_format_claim", "Validation: narrower weights, measured and predicted", "Narrower weights"),
    ("plan_workloads", "Planning: W1 and W2 on the paper's devices", "Plan of W1 and W2"),
    ("plan_frontier", "Planning: the derived frontier against measured points", "Plan frontier"),
    ("plan_ranking", "Planning: the estimate's layout rankings against the measurements'", "Plan ranking"),
)
#: The audit notebooks, in order, with their titles.
NOTEBOOKS = (
    ("01_footprint_and_crossovers", "(a) KV footprint and the two crossovers"),
    ("02_roofline_and_regimes", "(b) Roofline, placement and the three regimes"),
    ("03_comparison_matrix", "(c) The comparison matrix, Tables 5 and 7"),
    ("04_reproduction_audit", "(d) The reproduction audit"),
    ("05_serving_validation", "(e) One measured serving point against its bound and its estimate"),
    ("06_plan_by_hand", "(f) One plan worked out by hand"),
)
#: What an evidence folder of tables/ holds.
TABLE_CLASSES = {
    "paper": "side by side as the paper prints it; each column's class in its header",
    "audit": "reported against derived; each column's class in its header",
}
CAPTIONS = "workflow/report/tables.yaml"
#: How a caption's ``paper`` begins for a table the paper does not print.
NOT_IN_THE_PAPER = "not in the paper"


@dataclass(frozen=True)
class FigureItem:
    stem: str
    number: str
    title: str  # the few words the navigation pane shows
    png: Path
    caption: Path  # reStructuredText, workflow/report/<stem>.rst


@dataclass(frozen=True)
class TableItem:
    artifact: str  # <evidence>/<name>
    paper: str
    caption: str
    columns: dict[str, str]
    markdown: Path
    csv: Path

    @property
    def evidence(self) -> str:
        return self.artifact.split("/", 1)[0]

    @property
    def title(self) -> str:
        """The table's title, the first line of its Markdown."""
        with open(self.markdown, encoding="utf-8") as handle:
            return handle.readline().removeprefix("# ").strip()

    @property
    def label(self) -> str:
        """The few words the navigation pane shows: where the paper prints the table, else the head of its title."""
        return self.title.split(":")[0] if self.paper.startswith(NOT_IN_THE_PAPER) else self.paper

    @property
    def anchor(self) -> str:
        """The id of the table's section in the page."""
        return "table-" + self.artifact.replace("/", "-")

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
    known = {stem for stem, _, _ in FIGURE_ORDER}
    unordered = sorted(p.stem for p in (root / "figures").glob("*.png") if p.stem not in known)
    if unordered:
        raise ValueError(f"figures without a place in kvwall.report.contents.FIGURE_ORDER: {', '.join(unordered)}")
    return [FigureItem(stem, number, title, root / "figures" / f"{stem}.png", root / "workflow/report" / f"{stem}.rst")
            for stem, number, title in FIGURE_ORDER]


def tables(root: Path) -> list[TableItem]:
    """Every table under tables/ (its Markdown), in the order of the caption file; one without a caption is an error."""
    captions = read_yaml(root / CAPTIONS)
    present = {str(p.relative_to(root / "tables").with_suffix("")) for p in (root / "tables").glob("*/*.md")}
    missing, stale = sorted(present - set(captions)), sorted(set(captions) - present)
    if missing or stale:
        raise ValueError(f"{CAPTIONS}: tables without a caption: {missing}; captions without a table: {stale}")
    return [TableItem(artifact, entry["paper"], entry["caption"], dict(entry["columns"]), root / "tables" / f"{artifact}.md",
                      root / "tables" / f"{artifact}.csv")
            for artifact, entry in captions.items()]


def notebooks(root: Path) -> list[NotebookItem]:
    """The executed audit notebooks with their captions."""
    return [NotebookItem(name, title, root / "notebooks/executed" / f"{name}.ipynb", root / "workflow/report" / f"{name}.rst")
            for name, title in NOTEBOOKS]
