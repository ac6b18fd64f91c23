# Tables 1-8 and their companions: one job per family of tables, each table written as CSV, Markdown and LaTeX under
# tables/<evidence class>/ (tables/paper/ holds side-by-side views with each column's class marked).
from kvwall.tables import ARTIFACTS, families, module_of, view_of

TABLE_ARTIFACTS = expand(
    "tables/{artifact}.{ext}", artifact=sorted(ARTIFACTS), ext=("csv", "md", "tex")
)


# One job per family (the tables one module builds, kvwall.tables.families): whatever reruns one of them reruns all.
for table_family, family_artifacts in families().items():

    rule:
        name:
            f"tables_{table_family}"
        input:
            view=VIEWS[view_of(family_artifacts[0])],
            script="workflow/scripts/write_tables.py",
            code=kvwall_code(
                "workflow/scripts/write_tables.py", module_of(family_artifacts[0])
            ),
        output:
            table_outputs(family_artifacts),
        log:
            f"logs/tables/{table_family}.log",
        conda:
            "../envs/kvwall.yaml"
        params:
            artifacts=family_artifacts,
        shell:
            "python {input.script:q} {output:q} {input.view:q} {params.artifacts:q} 2> {log:q}"


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
