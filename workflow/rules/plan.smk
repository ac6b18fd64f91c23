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
    priority: FIRST - 1
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.validated:q} 2> {log:q}"


PLAN_FIGURE_ARTIFACTS = expand(
    "figures/{figure}.{ext}",
    figure=("plan_frontier", "plan_ranking", "plan_workloads"),
    ext=("svg", "pdf", "png"),
)


PLAN_FRONTIER_TABLES = expand(
    "tables/derived/plan_frontier.{ext}", ext=("csv", "md", "tex")
)
TABLE_ARTIFACTS += PLAN_FRONTIER_TABLES


rule plan_frontier:
    input:
        "matplotlibrc",
        view=VIEWS["serving"],
        validated=VALIDATED,
        # the engines' calibrations (kvwall.plan.calibrated reads them beside the config/)
        calibration=expand(
            "tables/{table}.csv",
            table=(
                VALIDATION_TABLES["constants"],
                VALIDATION_TABLES["error"],
                VALIDATION_TABLES["offsets"],
            ),
        ),
        script="workflow/scripts/plan_frontier.py",
        code=kvwall_code("workflow/scripts/plan_frontier.py"),
    output:
        tables=PLAN_FRONTIER_TABLES,
        svg=report(
            "figures/plan_frontier.svg",
            caption="../report/plan_frontier.rst",
            category="Planning",
            labels={"figure": "plan_frontier", "evidence": "derived, reported"},
        ),
        pdf="figures/plan_frontier.pdf",
        png="figures/plan_frontier.png",
    log:
        "logs/tables/derived/plan_frontier.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.validated:q} 2> {log:q}"


rule plan_ranking_figure:
    input:
        "matplotlibrc",
        ranking="tables/derived/plan_ranking.csv",
        summary="tables/derived/plan_ranking_summary.csv",
        script="workflow/scripts/plan_ranking_figure.py",
        code=kvwall_code("workflow/scripts/plan_ranking_figure.py"),
    output:
        svg=report(
            "figures/plan_ranking.svg",
            caption="../report/plan_ranking.rst",
            category="Planning",
            labels={"figure": "plan_ranking", "evidence": "derived"},
        ),
        pdf="figures/plan_ranking.pdf",
        png="figures/plan_ranking.png",
    log:
        "logs/figures/plan_ranking.log",
    priority: EARLY
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.ranking:q} {input.summary:q} 2> {log:q}"


# The paper's W1 and W2 planned (kvwall.plan.workload_frontiers): the table on every catalogue device, the figure on
# the paper's (Table 3), so that a device added outside the paper's frame reruns the table alone.
PLAN_WORKLOAD_TABLES = expand(
    "tables/derived/plan_workloads.{ext}", ext=("csv", "md", "tex")
)
TABLE_ARTIFACTS += PLAN_WORKLOAD_TABLES


rule plan_workloads_table:
    input:
        view=VIEWS["catalogue"],
        script="workflow/scripts/plan_workloads_table.py",
        code=kvwall_code("workflow/scripts/plan_workloads_table.py"),
    output:
        PLAN_WORKLOAD_TABLES,
    log:
        "logs/tables/derived/plan_workloads.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} 2> {log:q}"


rule plan_workloads:
    input:
        "matplotlibrc",
        view=VIEWS["paper"],
        script="workflow/scripts/plan_workloads.py",
        code=kvwall_code("workflow/scripts/plan_workloads.py"),
    output:
        svg=report(
            "figures/plan_workloads.svg",
            caption="../report/plan_workloads.rst",
            category="Planning",
            labels={"figure": "plan_workloads", "evidence": "derived"},
        ),
        pdf="figures/plan_workloads.pdf",
        png="figures/plan_workloads.png",
    log:
        "logs/figures/plan_workloads.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} 2> {log:q}"
