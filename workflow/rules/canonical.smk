# CANONICAL-NUMBERS.md, its machine-readable twin, its LaTeX macros (canonical-numbers.tex), and the four-constraints figures.
from kvwall.canonical.derived import TABLE_INPUTS
from kvwall.canonical.validation import VALIDATION_TABLE_INPUTS

TIER_FIGURES = ("fig3_1_four_constraints", "tier_sustainability_vs_hiding")
CANONICAL_ARTIFACTS = [
    "CANONICAL-NUMBERS.md",
    "canonical-numbers.json",
    "canonical-numbers.tex",
    *expand("figures/{figure}.{ext}", figure=TIER_FIGURES, ext=("svg", "pdf", "png")),
]


rule canonical_numbers:
    input:
        view=VIEWS["paper"],
        code=kvwall_code("workflow/scripts/canonical_numbers.py"),
        tiers="config/tiers.yaml",
        tables=expand(
            "tables/{artifact}.csv", artifact=(*TABLE_INPUTS, *VALIDATION_TABLE_INPUTS)
        ),
        # This project's measurement tables: those the measured leg renders from data/measured/ (MEASURED_ARTIFACTS,
        # known once the whole workflow is read) and any committed under tables/measured/.
        measured=lambda wildcards: sorted(
            {
                p
                for p in MEASURED_ARTIFACTS
                if p.startswith("tables/measured/") and p.endswith(".md")
            }
            | set(glob.glob("tables/measured/*.md"))
        ),
        template="src/kvwall/canonical/templates/canonical-numbers.md.j2",
        script="workflow/scripts/canonical_numbers.py",
    output:
        md="CANONICAL-NUMBERS.md",
        json="canonical-numbers.json",
        tex="canonical-numbers.tex",
    log:
        "logs/canonical/numbers.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output.md:q} {output.json:q} {output.tex:q} {input.view:q} {input.tiers:q}"
        " {input.measured:q} 2> {log:q}"


rule canonical_figure_constraints:
    input:
        "matplotlibrc",
        view=VIEWS["paper"],
        code=kvwall_code("workflow/scripts/canonical_figure_constraints.py"),
        numbers="canonical-numbers.json",
        tiers="config/tiers.yaml",
        script="workflow/scripts/canonical_figure_constraints.py",
    output:
        svg=report(
            "figures/fig3_1_four_constraints.svg",
            caption="../report/fig3_1_four_constraints.rst",
            category="Four constraints",
            labels={
                "figure": "Figure 3.1. Four constraints, not one wall",
                "evidence": "derived",
            },
        ),
        pdf="figures/fig3_1_four_constraints.pdf",
        png="figures/fig3_1_four_constraints.png",
    log:
        "logs/canonical/fig3_1_four_constraints.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.numbers:q} {input.tiers:q} 2> {log:q}"


rule canonical_figure_timeline:
    input:
        "matplotlibrc",
        view=VIEWS["paper"],
        code=kvwall_code("workflow/scripts/canonical_figure_timeline.py"),
        tiers="config/tiers.yaml",
        script="workflow/scripts/canonical_figure_timeline.py",
    output:
        svg=report(
            "figures/tier_sustainability_vs_hiding.svg",
            caption="../report/tier_sustainability_vs_hiding.rst",
            category="Four constraints",
            labels={
                "figure": "Figure 3.1, companion: sustainability against hiding",
                "evidence": "derived",
            },
        ),
        pdf="figures/tier_sustainability_vs_hiding.pdf",
        png="figures/tier_sustainability_vs_hiding.png",
    log:
        "logs/canonical/tier_sustainability_vs_hiding.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.tiers:q} 2> {log:q}"
