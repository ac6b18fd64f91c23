# Reproduction audit: the paper's printed numbers (config/paper/printed.yaml) against the derived tables.
# The tables it reads: those printed.yaml names numbers of (checked to exist by the front door).
PRINTED_TABLES = sorted(
    {group["artifact"] for group in read_yaml(PRINTED_NUMBERS)["groups"]}
)
AUDIT_ARTIFACTS = expand("tables/audit/reproduction.{ext}", ext=("csv", "md", "tex"))


rule audit:
    input:
        printed=PRINTED_NUMBERS,
        view=VIEWS["paper"],
        tables=expand("tables/{artifact}.csv", artifact=PRINTED_TABLES),
        script="workflow/scripts/audit.py",
        code=kvwall_code(
            "workflow/scripts/audit.py", *(module_of(a) for a in PRINTED_TABLES)
        ),
    output:
        csv=report(
            "tables/audit/reproduction.csv",
            caption="../report/audit.rst",
            category="Tables",
            subcategory="audit",
            labels={
                "table": "reproduction",
                "evidence": "audit (reported vs derived)",
            },
        ),
        md="tables/audit/reproduction.md",
        tex="tables/audit/reproduction.tex",
    log:
        "logs/audit.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.printed:q} 2> {log:q}"
