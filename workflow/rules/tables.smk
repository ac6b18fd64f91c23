# Tables 1-8 and their companions: one job per artifact, each written as CSV, Markdown and LaTeX under
# tables/<evidence class>/ (tables/paper/ holds side-by-side views with each column's class marked).
from kvwall.tables import ARTIFACTS, module_of, view_of

TABLE_ARTIFACTS = expand(
    "tables/{artifact}.{ext}", artifact=sorted(ARTIFACTS), ext=("csv", "md", "tex")
)


rule table:
    input:
        view=lambda w: VIEWS[view_of(f"{w.evidence}/{w.name}")],
        script="workflow/scripts/write_table.py",
        code=lambda w: kvwall_code(
            "workflow/scripts/write_table.py", module_of(f"{w.evidence}/{w.name}")
        ),
    output:
        csv=report(
            "tables/{evidence}/{name}.csv",
            caption="../report/table.rst",
            category="Tables",
            subcategory="{evidence}",
            labels={"table": "{name}", "evidence": "{evidence}"},
        ),
        md="tables/{evidence}/{name}.md",
        tex="tables/{evidence}/{name}.tex",
    log:
        "logs/tables/{evidence}/{name}.log",
    wildcard_constraints:
        evidence="spec|assumption|derived|reported|paper",
        # only the registry's tables: other rules (the validation tables) write tables of their own
        name="|".join(sorted({artifact.split("/")[1] for artifact in ARTIFACTS})),
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {wildcards.evidence}/{wildcards.name} 2> {log:q}"
