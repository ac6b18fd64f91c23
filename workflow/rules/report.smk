# The review report (`snakemake --cores 2 review-report.html`, not part of the default build): every figure in the paper's
# order, every table rendered with its caption (workflow/report/tables.yaml), the executed notebooks and
# CANONICAL-NUMBERS.md, in one self-contained HTML file. Snakemake's own --report offers tables and notebooks only
# as downloads, so kvwall.report renders them.


rule review_report:
    input:
        TABLE_ARTIFACTS,
        AUDIT_ARTIFACTS,
        FIGURE_ARTIFACTS,
        NOTEBOOK_ARTIFACTS,
        CANONICAL_ARTIFACTS,
        MEASURED_ARTIFACTS,
        "workflow/scripts/review_report.py",
        code=kvwall_code("workflow/scripts/review_report.py"),
        captions=glob.glob("workflow/report/*.rst") + ["workflow/report/tables.yaml"],
    output:
        "review-report.html",
    log:
        "logs/report.log",
    conda:
        "../envs/kvwall.yaml"
    script:
        "../scripts/review_report.py"
