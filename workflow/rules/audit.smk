# Reproduction audit: the paper's printed numbers (config/paper/printed.yaml) against the derived tables.
DERIVED_TABLES = sorted(a for a in ARTIFACTS if a.startswith("derived/"))
AUDIT_ARTIFACTS = expand("tables/audit/reproduction.{ext}", ext=("csv", "md", "tex"))


rule audit:
    input:
        printed=PRINTED_NUMBERS,
        tables=expand("tables/{artifact}.csv", artifact=DERIVED_TABLES),
        code=kvwall_code(
            "workflow/scripts/audit.py", *(module_of(a) for a in DERIVED_TABLES)
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
    script:
        "../scripts/audit.py"
