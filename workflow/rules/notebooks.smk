# Audit notebooks (notebooks/ -> notebooks/executed/): each re-derives one part of the argument from the specs,
# with the paper's equations written out, and asserts that the result equals the committed tables. The committed
# copies run with the paper's parameters. A re-derivation for other parameters writes to notebooks/rederived/
# (ignored by git), never over them: `snakemake --cores 2 notebooks/rederived/<notebook>.ipynb --config
# notebook_model=llama-3-8b notebook_device=h100-sxm notebook_batch=8 notebook_context=64000` (notebook_where="Table 5"
# for the audit). nbstripout then drops what changes from run to run (papermill's timings and paths, execution
# timestamps, the Python patch version), keeping the outputs.
# The kernel is workflow/jupyter's "python3", found first through JUPYTER_PATH: its argv "python" is replaced by
# papermill's own interpreter, so a user-level "python3" kernelspec pointing elsewhere cannot take over.
import itertools
import mimetypes
import shlex
from pathlib import Path

# The HTML report offers executed notebooks as notebooks.
mimetypes.add_type("application/x-ipynb+json", ".ipynb")

NOTEBOOKS = {
    "01_footprint_and_crossovers": {
        "title": "(a) KV footprint and the two crossovers",
        "tables": [
            "derived/table1_kv_per_token",
            "derived/sliding_window_footprint",
            "derived/table4_traffic_crossover",
            "derived/capacity_crossover",
        ],
        "parameters": ("model", "device", "batch", "context"),
        "view": "catalogue",  # it works every device of the catalogue
    },
    "02_roofline_and_regimes": {
        "title": "(b) Roofline, placement and the three regimes",
        "tables": [
            "derived/table3_ridge",
            "derived/intensity_limits",
            "derived/placement_ceilings",
            "derived/table6_workloads",
        ],
        "parameters": ("model", "device", "batch", "context"),
        "view": "catalogue",  # it works every device of the catalogue
    },
    "03_comparison_matrix": {
        "title": "(c) The comparison matrix, Tables 5 and 7",
        "tables": [
            "derived/table5_roofline_bounds",
            "derived/table7_speedups",
            "derived/combinations",
        ],
        "parameters": ("model", "device", "batch", "context"),
    },
    "04_reproduction_audit": {
        "title": "(d) The reproduction audit",
        "tables": ["audit/reproduction", *PRINTED_TABLES],
        "parameters": ("where",),
        "files": {
            "printed_file": "config/paper/printed.yaml",
            "captions_file": "workflow/report/tables.yaml",
        },
        # It rebuilds the columns of every table the audit reads through kvwall.tables.builder.
        "modules": [module_of(a) for a in PRINTED_TABLES],
    },
    "05_serving_validation": {
        "title": "(e) One measured serving point against its bound and its estimate",
        "tables": [
            "derived/serving_bounds",
            "derived/serving_engine_constants",
            "derived/serving_estimate_error",
            "derived/serving_estimate_offsets",
        ],
        "parameters": ("point_id", "moe_point_id"),
        "view": "serving",
        "files": {
            "measurements": SERVING_MEASUREMENTS,
            "validation_map": VALIDATION_MAP,
        },
        # The front door checked the measurements' rows before any job and left its stamp there (kvwall.inputs.stamps):
        # the notebook reads them without checking every row again, a reviewer's own run checks them.
        "stamps": {"stamp_dir": CHECKED_STAMPS},
    },
    "06_plan_by_hand": {
        "title": "(f) One plan worked out by hand",
        "tables": [],
        "parameters": ("model", "device", "gpus", "isl", "osl", "tpot_max_ms"),
    },
}
# (folder, whether --config notebook_<name> parameters apply): the committed paper run, and re-derivations. Each job
# runs papermill and nbstripout in one interpreter (workflow/scripts/notebook.py).
NOTEBOOK_RUNS = (("executed", False), ("rederived", True))
NOTEBOOK_ARTIFACTS = expand("notebooks/executed/{notebook}.ipynb", notebook=NOTEBOOKS)
JUPYTER_PATH = "workflow/jupyter"
VOLATILE_NOTEBOOK_KEYS = "metadata.papermill cell.metadata.papermill cell.metadata.execution metadata.language_info.version"


def papermill_options(entry, parameters):
    """-p options: the relative input paths, then (``parameters``) each one given as --config notebook_<name>=<value>."""
    given = {
        "config_dir": config["config_dir"],
        "tables_dir": "tables",
        **entry.get("files", {}),
        **entry.get("stamps", {}),
    }
    given.update(
        {
            name: config[f"notebook_{name}"]
            for name in entry["parameters"]
            if parameters and f"notebook_{name}" in config
        }
    )
    return " ".join(
        f"-p {name} {shlex.quote(str(value))}" for name, value in given.items()
    )


for (notebook_name, notebook_entry), (folder, parameters) in itertools.product(
    NOTEBOOKS.items(), NOTEBOOK_RUNS
):

    rule:
        name:
            f"notebook_{notebook_name}" + ("" if folder == "executed" else f"_{folder}")
        input:
            notebook=f"notebooks/{notebook_name}.ipynb",
            tables=expand("tables/{table}.csv", table=notebook_entry["tables"]),
            # The notebook reads config/ as a reviewer would; of it, it uses only the entries its view holds, whose
            # checked content the view is (kvwall.inputs.views): a device or model outside them reruns nothing here.
            view=VIEWS[notebook_entry.get("view", "paper")],
            files=list(notebook_entry.get("files", {}).values()),
            script="workflow/scripts/notebook.py",
            # what the job script imports, and what the notebook's kernel does
            code=sorted(
                {
                    *kvwall_code("workflow/scripts/notebook.py"),
                    *kvwall_code(
                        f"notebooks/{notebook_name}.ipynb",
                        *notebook_entry.get("modules", ()),
                    ),
                }
            ),
            config="config/config.yaml",
            kernel=f"{JUPYTER_PATH}/kernels/python3/kernel.json",
        output:
            report(
                f"notebooks/{folder}/{notebook_name}.ipynb",
                caption=f"../report/{notebook_name}.rst",
                category="Audit notebooks",
                labels={
                    "notebook": notebook_entry["title"],
                    "evidence": "derived, asserted against the tables",
                },
            ),
        log:
            f"logs/notebooks/{folder}/{notebook_name}.log",
        # (e) ends the build's longest chain (workflow/rules/validation.smk): it starts as soon as its tables are written
        priority: EARLY if notebook_name == "05_serving_validation" else 0
        conda:
            "../envs/kvwall.yaml"
        params:
            options=papermill_options(notebook_entry, parameters),
            volatile=VOLATILE_NOTEBOOK_KEYS,
            jupyter_path=lambda wildcards, input: str(Path(input.kernel).parents[2]),
        shell:
            "JUPYTER_PATH={params.jupyter_path:q} python {input.script:q} {output:q} {input.notebook:q}"
            " {params.volatile:q} -k python3 {params.options} > {log:q} 2>&1"
