"""Audit notebooks: sources without outputs, executed copies free of volatile metadata, and an execution with other
parameters that still asserts agreement with the committed tables (and fails when a table disagrees)."""

import csv
import json
import re
import shutil
import sys
from pathlib import Path

import papermill
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXECUTED = ROOT / "notebooks" / "executed"
FOOTPRINT = ROOT / "notebooks" / "01_footprint_and_crossovers.ipynb"
REGIMES = ROOT / "notebooks" / "02_roofline_and_regimes.ipynb"
MATRIX = ROOT / "notebooks" / "03_comparison_matrix.ipynb"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def outputs_text(notebook: dict) -> str:
    """Every text the notebook's cells printed or displayed."""
    texts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") if output["output_type"] == "stream" else output.get("data", {}).get("text/plain", ""))
    return "\n".join("".join(t) if isinstance(t, list) else t for t in texts)


@pytest.fixture(autouse=True)
def workflow_kernel(monkeypatch):
    """Run notebooks on the workflow's kernel, as the notebook rules do."""
    monkeypatch.setenv("JUPYTER_PATH", str(ROOT / "workflow" / "jupyter"))


def test_the_workflow_kernel_wins_over_a_user_kernel_and_runs_papermills_interpreter(tmp_path, monkeypatch):
    hostile = tmp_path / "kernels" / "python3"
    hostile.mkdir(parents=True)
    (hostile / "kernel.json").write_text(json.dumps({"argv": ["/nonexistent/python", "-f", "{connection_file}"],
                                                     "display_name": "elsewhere", "language": "python"}))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))  # the user-level kernels directory
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "0")  # a user's choice that would put it before the venv's kernel
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert Path(spec.resource_dir) == ROOT / "workflow" / "jupyter" / "kernels" / "python3"
    manager = KernelManager(kernel_name="python3")
    assert manager.format_kernel_cmd()[0] == sys.executable


def test_six_notebooks_each_with_a_parameters_cell_and_no_outputs():
    assert [p.stem for p in SOURCES] == [
        "01_footprint_and_crossovers", "02_roofline_and_regimes", "03_comparison_matrix", "04_reproduction_audit",
        "05_serving_validation", "06_plan_by_hand"]
    for path in SOURCES:
        cells = load(path)["cells"]
        assert sum("parameters" in c["metadata"].get("tags", []) for c in cells) == 1, path.name
        for cell in cells:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


#: Parameters the workflow sets from its own paths (workflow/rules/notebooks.smk), never from --config.
PATH_PARAMETERS = {"config_dir", "tables_dir", "printed_file", "captions_file", "measurements", "validation_map",
                   "stamp_dir"}


def test_every_notebook_parameter_is_a_config_key_the_front_door_checks():
    import ast

    from kvwall.inputs.loader import schema

    checked = set(schema("notebook_parameters")["properties"])
    given = set()
    for path in SOURCES:
        cell = next(c for c in load(path)["cells"] if "parameters" in c["metadata"].get("tags", []))
        names = {target.id for node in ast.parse("".join(cell["source"])).body for target in node.targets}
        given |= {f"notebook_{name}" for name in names - PATH_PARAMETERS}
    assert given == checked


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_executed_notebook_ran_its_assertions_and_has_no_volatile_metadata(source):
    executed = load(EXECUTED / source.name)
    assert "papermill" not in executed["metadata"]
    assert "version" not in executed["metadata"].get("language_info", {})
    for cell in executed["cells"]:
        assert not {"papermill", "execution"} & set(cell["metadata"]), source.name
        # no errors, and no buffered prints: a stream may be split differently on each run
        assert all(o["output_type"] not in ("error", "stream") for o in cell.get("outputs", [])), source.name
    assert re.search(r"\d+ derived values agree with (the committed tables|kvwall\.plan)", outputs_text(executed))
    injected = [c for c in executed["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and 'config_dir = "config"' in "".join(injected[0]["source"])  # relative paths


def test_another_model_and_device_rederives_and_agrees(tmp_path):
    out = tmp_path / "footprint.ipynb"
    papermill.execute_notebook(
        str(FOOTPRINT), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
        parameters={"config_dir": "config", "tables_dir": "tables", "model": "llama-3-8b", "device": "h100-sxm",
                    "batch": 8, "context": 64000},
    )
    text = outputs_text(load(out))
    assert "model Llama-3-8B, device H100 SXM, batch b = 8" in text
    assert "Table 4 Llama-3-8B: s*(8)" in text and "s_cap Llama-3-8B on H100 SXM" in text


def test_a_sliding_window_model_rederives_its_capped_footprint_and_crossovers(tmp_path):
    out = tmp_path / "footprint.ipynb"
    papermill.execute_notebook(
        str(FOOTPRINT), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
        parameters={"config_dir": "config", "tables_dir": "tables", "model": "gemma-3-27b", "device": "h100-sxm"},
    )
    text = outputs_text(load(out))
    assert "s_cap Gemma-3-27B on H100 SXM" in text  # asserted against the capacity table, solved on the capped footprint
    assert "Gemma-3-27B: KV bytes/token beyond it" in text and "s = 312,058 = 312k tokens" in text


def test_the_regimes_of_a_sliding_window_model_come_from_its_capped_footprint(tmp_path):
    out = tmp_path / "regimes.ipynb"
    papermill.execute_notebook(str(REGIMES), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
                               parameters={"config_dir": "config", "tables_dir": "tables", "model": "gemma-3-27b",
                                           "device": "h100-sxm"})
    text = outputs_text(load(out))
    assert "Gemma-3-27B has sliding-window layers" in text and "312,058" in text  # s_cap on the capped footprint


def test_the_comparison_matrix_derives_another_model_without_comparing_and_refuses_window_models(tmp_path):
    out = tmp_path / "matrix.ipynb"
    papermill.execute_notebook(str(MATRIX), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
                               parameters={"config_dir": "config", "tables_dir": "tables", "model": "llama-3-8b"})
    assert "Llama-3-8B is not the model of the committed Tables 5 and 7" in outputs_text(load(out))
    with pytest.raises(papermill.PapermillExecutionError, match="sliding-window layers"):
        papermill.execute_notebook(str(MATRIX), str(tmp_path / "window.ipynb"), kernel_name="python3", cwd=str(ROOT),
                                   progress_bar=False,
                                   parameters={"config_dir": "config", "tables_dir": "tables", "model": "gemma-3-27b"})


def test_an_mla_moe_model_is_written_out_in_its_own_terms(tmp_path):
    parameters = {"config_dir": "config", "tables_dir": "tables", "model": "deepseek-v2", "device": "h100-sxm"}
    footprint, regimes = tmp_path / "footprint.ipynb", tmp_path / "regimes.ipynb"
    papermill.execute_notebook(str(FOOTPRINT), str(footprint), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
                               parameters=parameters)
    papermill.execute_notebook(str(REGIMES), str(regimes), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
                               parameters=parameters)
    assert "s*(32) = W(b) / (b · KV per token)" in outputs_text(load(footprint))
    assert ("AI = SoK section 3.1: b (2P_active + 2 L n_q (2 d_c + d_r) s) / (W(b) + b L (d_c + d_r) s w_kv)"
            in outputs_text(load(regimes)))
    with pytest.raises(papermill.PapermillExecutionError, match=r"caches SoK Eq. 1, Table 1 \(MLA\): L \(d_c \+ d_r\) w_kv"):
        papermill.execute_notebook(str(MATRIX), str(tmp_path / "matrix.ipynb"), kernel_name="python3", cwd=str(ROOT),
                                   progress_bar=False, parameters=parameters)


def test_a_committed_table_that_disagrees_fails_the_notebook(tmp_path):
    tables = tmp_path / "tables"
    shutil.copytree(ROOT / "tables" / "derived", tables / "derived")
    path = tables / "derived" / "table4_traffic_crossover.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    evaluated = next(r for r in rows if r["model_id"] == "llama-3-70b")  # the notebook's default model
    evaluated["b1"] = str(float(evaluated["b1"]) * 1.001)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(papermill.PapermillExecutionError, match="Table 4"):
        papermill.execute_notebook(
            str(FOOTPRINT), str(tmp_path / "out.ipynb"), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
            parameters={"config_dir": "config", "tables_dir": str(tables)},
        )


SERVING = ROOT / "notebooks" / "05_serving_validation.ipynb"


def test_the_serving_notebook_rederives_another_point_and_agrees(tmp_path):
    out = tmp_path / "serving.ipynb"
    papermill.execute_notebook(
        str(SERVING), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
        parameters={"config_dir": "config", "tables_dir": "tables",
                    "measurements": "data/reported/serving-measurements.csv", "validation_map": "config/validation.yaml",
                    "point_id": "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp4_ep1_507"},
    )
    text = outputs_text(load(out))
    assert "TP = 4 GPUs" in text and "weights per GPU = 70,600,000,000 x 1 B / 4 = 17.65 GB" in text
    assert "derived values agree with the committed tables" in text


def test_the_serving_notebook_refuses_a_model_whose_formulas_it_does_not_write_out(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError, match="dense attention model"):
        papermill.execute_notebook(
            str(SERVING), str(tmp_path / "out.ipynb"), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
            parameters={"config_dir": "config", "tables_dir": "tables",
                        "measurements": "data/reported/serving-measurements.csv",
                        "validation_map": "config/validation.yaml",
                        "point_id": "dsr1_b200_trtllm_fp4_agg_1024x8192_c256_cfg191"},
        )


AUDIT = ROOT / "notebooks" / "04_reproduction_audit.ipynb"


def markdown_outputs(notebook: dict) -> list[str]:
    """The Markdown the notebook's cells displayed, one text per display."""
    return ["".join(output["data"]["text/markdown"]) for cell in notebook["cells"] for output in cell.get("outputs", [])
            if "text/markdown" in output.get("data", {})]


def source_rows(markdown: str) -> list[list[str]]:
    """The body rows of the table of one paper place in the audit notebook's section 3."""
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in markdown.splitlines()[6:]]


def test_the_audit_notebook_traces_every_printed_number_to_its_table_column_equation_and_unit():
    executed = load(EXECUTED / AUDIT.name)
    places = {m.split("\n", 1)[0].removeprefix("### "): m for m in markdown_outputs(executed) if m.startswith("### ")}
    with (ROOT / "tables" / "audit" / "reproduction.csv").open(encoding="utf-8") as handle:
        audit = list(csv.DictReader(handle))
    assert list(places) == list(dict.fromkeys(r["where"] for r in audit))  # every place, in the paper's order
    assert sum(len(source_rows(m)) for m in places.values()) == len(audit)
    table4 = places["Table 4"]
    assert "`tables/derived/table4_traffic_crossover.csv`" in table4 and "notebook `01_footprint_and_crossovers`" in table4
    assert ["llama-3-70b", "`b32` (b=32)", "s*(b) = P w_p / (b · 2 L n_kv d_h w_kv) in tokens at batch b (k = 1,000 tokens)",
            "13351.4404296875 tokens", "13.4k tokens", "13.4k", "match"] in source_rows(table4)
    # units as the paper prints them: scaled (GB, ms), carried by the text (MB, TB/s, ×), or the table's own
    table5 = source_rows(places["Table 5"])
    assert ["128000/bf16", "`kv_bytes` (KV (GB))", "KV bytes of the sequence", "41943040000 B", "41.9 GB", "41.9",
            "match"] in table5
    assert any(row[3] == "0.02274288 s" and row[4] == "22.7 ms" for row in table5)
    assert ["h100-sxm", "`partition_bandwidth` (β_part)", "aggregate bandwidth over partitions, TB/s",
            "3350000000000 B/s", "3.35 TB/s", "3.35 TB/s", "match"] in source_rows(places["Table 3"])
    # a table of the text: the quantity it states and the equation its own Equation column names
    assert ["Llama-3-70B KV bytes per token", "`value` (Value)", "2 L n_kv d_h w_kv (Eq. 1)", "327680 B", "327,680 B",
            "327,680", "match"] in source_rows(places["Sections 1.2, 2.1 (text)"])


def test_each_notebook_the_audit_names_works_out_that_table():
    for markdown in markdown_outputs(load(EXECUTED / AUDIT.name)):
        named = re.search(r"notebook `(\w+)`", markdown)
        if markdown.startswith("### ") and named:
            artifact = re.search(r"`tables/(\S+)\.csv`", markdown)[1]
            assert artifact in (ROOT / "notebooks" / f"{named[1]}.ipynb").read_text(encoding="utf-8"), markdown[:200]


def test_the_audit_notebook_shows_the_sources_of_one_place(tmp_path):
    out = tmp_path / "audit.ipynb"
    papermill.execute_notebook(str(AUDIT), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
                               parameters={"config_dir": "config", "tables_dir": "tables",
                                           "printed_file": "config/paper/printed.yaml",
                                           "captions_file": "workflow/report/tables.yaml", "where": "Table 5"})
    places = [m.split("\n", 1)[0] for m in markdown_outputs(load(out)) if m.startswith("### ")]
    assert places == ["### Table 5"]
    with (ROOT / "tables" / "audit" / "reproduction.csv").open(encoding="utf-8") as handle:
        audit = list(csv.DictReader(handle))
    traced = f"{len(audit)} printed numbers traced to {len({r['artifact'] for r in audit})} derived tables"
    assert traced in outputs_text(load(out))  # every number is traced, whichever place is shown


PLAN = ROOT / "notebooks" / "06_plan_by_hand.ipynb"


def test_the_plan_notebook_works_out_another_plan_and_agrees(tmp_path):
    out = tmp_path / "plan.ipynb"
    papermill.execute_notebook(
        str(PLAN), str(out), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
        parameters={"config_dir": "config", "tables_dir": "tables", "model": "qwen3-32b", "device": "b200",
                    "gpus": 2, "isl": 2048, "osl": 512, "tpot_max_ms": 30.0},
    )
    text = outputs_text(load(out))
    assert "Qwen3-32B on B200" in text and "6 derived values agree with kvwall.plan" in text


def test_the_plan_notebook_refuses_a_model_whose_formulas_it_does_not_write_out(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError, match="dense model of full-attention layers"):
        papermill.execute_notebook(
            str(PLAN), str(tmp_path / "out.ipynb"), kernel_name="python3", cwd=str(ROOT), progress_bar=False,
            parameters={"config_dir": "config", "tables_dir": "tables", "model": "deepseek-v3"},
        )
