# Validation: every reported serving measurement (data/reported/) held against the bounds of its deployment.
from kvwall.inputs.serving import SERVING_MEASUREMENTS
from kvwall.inputs.validation_map import VALIDATION_FILE

VALIDATION_MAP = f"{config['config_dir']}/{VALIDATION_FILE}"
VALIDATION_TABLES = {
    "measurements": "reported/serving_measurements",
    "bounds": "derived/serving_bounds",
    "realization": "derived/serving_realization",
    "claim": "derived/serving_format_claim",
    "constants": "derived/serving_engine_constants",
    "error": "derived/serving_estimate_error",
    "offsets": "derived/serving_estimate_offsets",
    "sources": "derived/serving_error_sources",
    "repeatability": "derived/serving_repeatability",
    "versions": "derived/serving_version_spread",
    "disagg": "derived/serving_disagg_load",
    "shares": "derived/serving_cost_shares",
    "claim_costs": "derived/serving_format_claim_costs",
}
VALIDATION_ARTIFACTS = expand(
    "tables/{table}.{ext}", table=VALIDATION_TABLES.values(), ext=("csv", "md", "tex")
)
# The validation of the serving measurements, saved once for the jobs that read it (kvwall.validation.run).
VALIDATED = ".snakemake/kvwall-validation/serving.pickle"
# The build's longest chain runs through the validation, its tables and what reads them (the cost shares' figure,
# notebook (e)): those jobs go first whenever they can run, so the chain is not left to the end of a build.
FIRST, EARLY = 3, 1


rule validation:
    input:
        view=VIEWS["serving"],
        measurements=SERVING_MEASUREMENTS,
        validation=VALIDATION_MAP,
        script="workflow/scripts/validation.py",
        code=kvwall_code("workflow/scripts/validation.py"),
    output:
        VALIDATED,
    log:
        "logs/validation/validation.log",
    priority: FIRST
    conda:
        "../envs/kvwall.yaml"
    params:
        stamps=CHECKED_STAMPS,
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.measurements:q} {input.validation:q} "
        "{params.stamps:q} 2> {log:q}"


rule validation_tables:
    input:
        view=VIEWS["serving"],
        validated=VALIDATED,
        script="workflow/scripts/validation_tables.py",
        code=kvwall_code("workflow/scripts/validation_tables.py"),
    output:
        **{
            name: expand(f"tables/{table}.{{ext}}", ext=("csv", "md", "tex"))
            for name, table in VALIDATION_TABLES.items()
        },
    log:
        "logs/validation/tables.log",
    priority: FIRST
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.validated:q} 2> {log:q}"


# Which operation's efficiency carries over to a model the fit never saw (kvwall.validation.transfer), and which form
# of the agg TTFT (kvwall.validation.ttft_forms): their own job, beside the tables', for their fits leaving one model
# out with each candidate.
TRANSFER_TABLES = (
    "derived/serving_transfer",
    "derived/serving_transfer_models",
    "derived/serving_ttft_forms",
)
VALIDATION_ARTIFACTS += expand(
    "tables/{table}.{ext}", table=TRANSFER_TABLES, ext=("csv", "md", "tex")
)


rule validation_transfer:
    input:
        view=VIEWS["serving"],
        validated=VALIDATED,
        script="workflow/scripts/validation_transfer.py",
        code=kvwall_code("workflow/scripts/validation_transfer.py"),
    output:
        expand("tables/{table}.{ext}", table=TRANSFER_TABLES, ext=("csv", "md", "tex")),
    log:
        "logs/validation/transfer.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.validated:q} 2> {log:q}"


from kvwall.figures.serving import COST_SHARES_FIGURE, SERVING_FIGURES

VALIDATION_ARTIFACTS += expand(
    "figures/{figure}.{ext}",
    figure=(*SERVING_FIGURES, COST_SHARES_FIGURE),
    ext=("svg", "pdf", "png"),
)


# SVG (in the report, with its caption), PDF and PNG of every validation figure, named <figure>_<format>.
SERVING_FIGURE_OUTPUTS = {}
for serving_figure in SERVING_FIGURES:
    SERVING_FIGURE_OUTPUTS[f"{serving_figure}_svg"] = report(
        f"figures/{serving_figure}.svg",
        caption=f"../report/{serving_figure}.rst",
        category="Validation",
        labels={"figure": serving_figure, "evidence": "derived, reported"},
    )
    for serving_ext in ("pdf", "png"):
        SERVING_FIGURE_OUTPUTS[f"{serving_figure}_{serving_ext}"] = (
            f"figures/{serving_figure}.{serving_ext}"
        )


# One job draws the three figures of a validation: each needs the whole validation, which takes longer than drawing a figure.
rule validation_figures:
    input:
        "matplotlibrc",
        view=VIEWS["serving"],
        validated=VALIDATED,
        script="workflow/scripts/validation_figures.py",
        code=kvwall_code(
            "workflow/scripts/validation_figures.py",
            *(
                f"kvwall.figures.serving.{module}"
                for module in SERVING_FIGURES.values()
            ),
        ),
    output:
        **SERVING_FIGURE_OUTPUTS,
    log:
        "logs/validation/figures.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.validated:q} 2> {log:q}"


# What the measured TPOT is made of, drawn from its table: the engines' constants are fitted once, by the tables' job.
rule cost_shares_figure:
    input:
        "matplotlibrc",
        view=VIEWS["serving"],
        shares=f"tables/{VALIDATION_TABLES['shares']}.csv",
        script="workflow/scripts/cost_shares_figure.py",
        code=kvwall_code(
            "workflow/scripts/cost_shares_figure.py",
            "kvwall.figures.serving.cost_shares",
        ),
    output:
        svg=report(
            f"figures/{COST_SHARES_FIGURE}.svg",
            caption=f"../report/{COST_SHARES_FIGURE}.rst",
            category="Validation",
            labels={"figure": COST_SHARES_FIGURE, "evidence": "derived, reported"},
        ),
        pdf=f"figures/{COST_SHARES_FIGURE}.pdf",
        png=f"figures/{COST_SHARES_FIGURE}.png",
    log:
        "logs/validation/cost_shares_figure.log",
    priority: EARLY
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.shares:q} 2> {log:q}"
