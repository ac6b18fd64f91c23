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


# The corpus of published configs as `kvwall import` reads them: one job over every config of the folder (and the
# hf_quant_config.json companions it reads beside them), so that editing a fixture reruns it.
from kvwall.inputs.published_params import PUBLISHED_PARAMS_FILE
from kvwall.tables.import_corpus import corpus_configs

HF_CORPUS = "tests/fixtures/hf-configs"
IMPORT_CORPUS_ARTIFACTS = expand(
    "tables/derived/import_corpus.{ext}", ext=("csv", "md", "tex")
)
TABLE_ARTIFACTS += IMPORT_CORPUS_ARTIFACTS


rule import_corpus:
    input:
        view=VIEWS["paper"],
        published=f"{config['config_dir']}/{PUBLISHED_PARAMS_FILE}",
        configs=[str(path) for path in corpus_configs(HF_CORPUS)],
        companions=sorted(glob.glob(f"{HF_CORPUS}/*_hf_quant_config.json")),
        script="workflow/scripts/import_corpus.py",
        code=kvwall_code("workflow/scripts/import_corpus.py"),
    output:
        IMPORT_CORPUS_ARTIFACTS,
    log:
        "logs/tables/derived/import_corpus.log",
    conda:
        "../envs/kvwall.yaml"
    shell:
        "python {input.script:q} {output:q} {input.view:q} {input.published:q} {input.configs:q} 2> {log:q}"
