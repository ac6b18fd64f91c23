# Reproduction audit: the paper's printed numbers (config/paper/printed.yaml) against the derived tables.
AUDIT_ARTIFACTS = expand("tables/audit/reproduction.{ext}", ext=("csv", "md", "tex"))


rule audit:
    input:
        printed=PRINTED_NUMBERS,
        tables=expand("tables/{artifact}.csv", artifact=sorted(a for a in ARTIFACTS if a.startswith("derived/"))),
        code=KVWALL_CODE,
    output:
        AUDIT_ARTIFACTS,
    log:
        "logs/audit.log",
    conda:
        "../envs/kvwall.yaml"
    script:
        "../scripts/audit.py"
