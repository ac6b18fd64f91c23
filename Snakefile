# kvwall: every table, figure, notebook and CANONICAL-NUMBERS.md of the SoK paper, from the specs in config/.
# `snakemake --cores 4` builds everything; `snakemake --cores 4 measure` runs the machine-dependent benchmark.
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/preflight.smk"


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/validation.smk"
include: "workflow/rules/plan.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/notebooks.smk"
include: "workflow/rules/canonical.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        TABLE_ARTIFACTS,
        AUDIT_ARTIFACTS,
        FIGURE_ARTIFACTS,
        NOTEBOOK_ARTIFACTS,
        CANONICAL_ARTIFACTS,
        MEASURED_ARTIFACTS,
        VALIDATION_ARTIFACTS,
        PLAN_FIGURE_ARTIFACTS,


# Every rule has listed its code: keep what the source files import for the next start (kvwall.sources).
KVWALL_SOURCES.save()
