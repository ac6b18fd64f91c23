# Figures 1-8 (SVG, PDF, PNG under figures/): one job per figure, each drawn by its module in kvwall.figures from the
# same model functions the tables use, with its caption in workflow/report/.
from kvwall.figures import FIGURES

FIGURE_FORMATS = ("svg", "pdf", "png")
FIGURE_ARTIFACTS = expand("figures/{figure}.{ext}", figure=FIGURES, ext=FIGURE_FORMATS)

for figure_name, figure_entry in FIGURES.items():

    rule:
        name:
            f"figure_{figure_name}"
        input:
            "matplotlibrc",
            view=VIEWS[figure_entry.view],
            script="workflow/scripts/figure.py",
            code=kvwall_code(
                "workflow/scripts/figure.py", f"kvwall.figures.{figure_entry.module}"
            ),
        output:
            svg=report(
                f"figures/{figure_name}.svg",
                caption=f"../report/{figure_name}.rst",
                category="Figures",
                labels={
                    "figure": figure_entry.title,
                    "evidence": figure_entry.evidence,
                },
            ),
            pdf=f"figures/{figure_name}.pdf",
            png=f"figures/{figure_name}.png",
        log:
            f"logs/figures/{figure_name}.log",
        conda:
            "../envs/kvwall.yaml"
        params:
            figure=figure_name,
        shell:
            "python {input.script:q} {output:q} {input.view:q} {params.figure} 2> {log:q}"
