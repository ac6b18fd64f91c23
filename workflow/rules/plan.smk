# Planning: whether the step-time estimate ranks the layouts of each measured group as the measurements do
# (kvwall.plan.proof), from the same validation of the serving measurements.
PLAN_TABLES = ("derived/plan_ranking", "derived/plan_ranking_summary")
PLAN_ARTIFACTS = expand(
    "tables/{table}.{ext}", table=PLAN_TABLES, ext=("csv", "md", "tex")
)
TABLE_ARTIFACTS += PLAN_ARTIFACTS


rule plan_ranking:
    input:
        validated=VALIDATED,
        script="workflow/scripts/plan_ranking.py",
        # the saved validation's catalogue unpickles through kvwall.inputs.views
        code=kvwall_code("workflow/scripts/plan_ranking.py", "kvwall.inputs.views"),
    output:
        PLAN_ARTIFACTS,
    log:
        "logs/tables/derived/plan_ranking.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.validated:q} 2> {log:q}"


PLAN_FIGURE_ARTIFACTS = expand("figures/plan_frontier.{ext}", ext=("svg", "pdf", "png"))


rule plan_frontier:
    input:
        "matplotlibrc",
        view=VIEWS["serving"],
        validated=VALIDATED,
        script="workflow/scripts/plan_frontier.py",
        code=kvwall_code("workflow/scripts/plan_frontier.py"),
    output:
        svg=report(
            "figures/plan_frontier.svg",
            caption="../report/plan_frontier.rst",
            category="Planning",
            labels={"figure": "plan_frontier", "evidence": "derived, reported"},
        ),
        pdf="figures/plan_frontier.pdf",
        png="figures/plan_frontier.png",
    log:
        "logs/figures/plan_frontier.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.validated:q} 2> {log:q}"
