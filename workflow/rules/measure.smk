# Measured leg: `snakemake --cores 4 measure` records a run; the default build renders committed records.
# Records are globbed when the workflow is parsed, so committing a new one reruns the table and the figure.
MEASURED_RECORDS = sorted(glob.glob("data/measured/*.json"))
MEASURED_TABLE = expand("tables/measured/kv_slope_fits.{ext}", ext=("csv", "md", "tex"))
MEASURED_FIGURE = expand("figures/measured_kv_slope.{ext}", ext=("svg", "pdf", "png"))
MEASURED_ARTIFACTS = MEASURED_TABLE + MEASURED_FIGURE


rule measured_table:
    input:
        records=MEASURED_RECORDS,
        script="workflow/scripts/measure_table.py",
        code=kvwall_code("workflow/scripts/measure_table.py"),
    output:
        csv=MEASURED_TABLE[0],
        md=MEASURED_TABLE[1],
        tex=MEASURED_TABLE[2],
    log:
        "logs/measure/measured_table.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.records:q} 2> {log:q}"


rule measured_figure:
    input:
        "matplotlibrc",
        records=MEASURED_RECORDS,
        view=VIEWS["paper"],
        script="workflow/scripts/measure_figure.py",
        code=kvwall_code("workflow/scripts/measure_figure.py"),
        measure_config="config/measure.yaml",
    output:
        svg=report(
            MEASURED_FIGURE[0],
            caption="../report/measured_kv_slope.rst",
            category="Measured",
            labels={
                "figure": "Measured KV slopes beside the reported GB10 fits",
                "evidence": "measured, reported",
            },
        ),
        pdf=MEASURED_FIGURE[1],
        png=MEASURED_FIGURE[2],
    log:
        "logs/measure/measured_figure.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.measure_config:q} {input.records:q} 2> {log:q}"


# Not part of the default build: the numbers depend on the machine. Writes data/measured/<platform>-<date>.json;
# commit it and the default build renders it. No output file is declared, so the rule runs whenever it is asked for.
rule measure:
    input:
        SPEC_INPUTS,
        "workflow/scripts/measure.py",
        code=kvwall_code("workflow/scripts/measure.py"),
        measure_config="config/measure.yaml",
    log:
        "logs/measure/measure.log",
    conda:
        "../envs/kvwall.yaml"
    threads: workflow.cores
    script:
        "../scripts/measure.py"
