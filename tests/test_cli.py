"""The kvwall command answers with the paper's numbers (SoK Tables 4, 5, 7, sections 1.2, 3.4), and fails cleanly."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from docs_pages import PAGES, page

from kvwall.cli import benchmark
from kvwall.cli.main import main
from kvwall.formats import kilo_tokens, tokens
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.loader import load_catalog
from kvwall.model.regimes import CAPACITY_BOUND, KV_BOUND, REGIMES, WEIGHT_BOUND
from kvwall.inputs.specs import EVIDENCE_CLASSES

REPO = Path(__file__).resolve().parents[1]
CONFIG = str(REPO / "config")
USER_SPECS = str(REPO / "tests" / "fixtures" / "user_specs.yaml")


def run(capsys, *argv):
    """Run `kvwall argv --config CONFIG` in-process; return (exit status, stdout, stderr)."""
    status = main([*argv, "--config", CONFIG])
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, *argv):
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


# ---- footprint: SoK Eq. 1, section 1.2, Table 5 KV column -----------------------------------------------------


def test_footprint_llama_3_70b_at_128k(capsys):
    status, out, _ = run(capsys, "footprint", "--model", "llama-3-70b", "--context", "128k")
    assert status == 0
    assert "327,680 B/token" in out
    assert "41.9 GB" in out
    assert "140.0 GB" in out
    assert "SoK Eq. 1" in out


@pytest.mark.parametrize("dtype, printed", [("bf16", "41.9"), ("int8", "21.0"), ("int4", "10.5"), ("int2", "5.2")])
def test_footprint_kv_column_of_table5(capsys, dtype, printed):
    answer = run_json(capsys, "footprint", "--model", "llama-3-70b", "--context", "128k", "--kv-dtype", dtype)
    assert f"{answer['kv'][0]['kv_bytes']['value'] / 1e9:.1f}" == printed


def test_footprint_of_a_million_tokens_is_328_gb(capsys):
    """SoK section 1.2: one 10^6-token sequence holds 328 GB of KV."""
    answer = run_json(capsys, "footprint", "--model", "llama-3-70b", "--context", "1M")
    assert round(answer["kv"][0]["kv_bytes"]["value"] / 1e9) == 328


@pytest.mark.parametrize("text, expected", [("131072", 131072), ("128k", 128_000), ("1M", 1_000_000), ("1e6", 1_000_000)])
def test_context_forms(capsys, text, expected):
    answer = run_json(capsys, "footprint", "--model", "llama-3-70b", "--context", text)
    assert answer["context"]["value"] == expected
    assert answer["context"]["evidence"] == "assumption"


def test_footprint_json_names_each_class(capsys):
    answer = run_json(capsys, "footprint", "--model", "llama-3-70b", "--kv-dtype", "bf16", "int4")
    assert answer["weights"] == {**answer["weights"], "value": 140e9, "evidence": "derived"}
    assert [row["kv_bytes_per_token"]["value"] for row in answer["kv"]] == [327_680, 81_920]
    assert {row["kv_bytes_per_element"]["evidence"] for row in answer["kv"]} == {"assumption"}


# ---- crossover: SoK Table 4 and the capacity crossover of section 3.4 ----------------------------------------------

TABLE4 = {
    "llama-3-8b": ["122.5k", "15.3k", "3.8k", "957", "479"],
    "llama-3-70b": ["427.2k", "53.4k", "13.4k", "3.3k", "1.7k"],
    "llama-3.1-405b": ["1.57M", "196.2k", "49.0k", "12.3k", "6.1k"],
}


def test_crossover_llama_3_70b_batch_32(capsys):
    status, out, _ = run(capsys, "crossover", "--model", "llama-3-70b", "--batch", "32")
    assert status == 0
    assert "13.4k (13,351 tokens)" in out


def test_crossover_llama_3_70b_batch_1(capsys):
    status, out, _ = run(capsys, "crossover", "--model", "llama-3-70b", "--batch", "1")
    assert status == 0
    assert "427.2k" in out


@pytest.mark.parametrize("model", sorted(TABLE4))
def test_crossover_reproduces_table4(capsys, model):
    answer = run_json(capsys, "crossover", "--model", model)
    assert [row["batch"]["value"] for row in answer["paper_frame"]] == [1, 8, 32, 128, 256]
    assert [tokens(row["traffic_crossover"]["value"]) for row in answer["paper_frame"]] == TABLE4[model]


def test_capacity_crossovers_of_section_3_4(capsys):
    """488k for Llama-3-8B on H100; 159k for Llama-3-70B on B200 and MI300X; none on H100 and for 405B (the weights
    alone exceed the HBM: null in JSON, with the reason)."""
    def s_cap(model):
        return run_json(capsys, "crossover", "--model", model, "--batch", "1")["paper_frame"][0]["capacity_crossover"]

    assert kilo_tokens(s_cap("llama-3-8b")["h100-sxm"]["value"]) == "488k"
    seventy = s_cap("llama-3-70b")
    assert [kilo_tokens(seventy[d]["value"]) for d in ("b200", "mi300x")] == ["159k", "159k"]
    assert seventy["h100-sxm"]["value"] is None and seventy["h100-sxm"]["basis"].endswith("the weights alone exceed the memory")
    assert all(q["value"] is None for d, q in s_cap("llama-3.1-405b").items() if d in ("h100-sxm", "b200", "mi300x"))


def test_capacity_crossover_shrinks_as_one_over_batch(capsys):
    rows = run_json(capsys, "crossover", "--model", "llama-3-8b", "--device", "h100-sxm", "--batch", "1", "4")["paper_frame"]
    assert rows[0]["capacity_crossover"]["h100-sxm"]["value"] == pytest.approx(4 * rows[1]["capacity_crossover"]["h100-sxm"]["value"])


# ---- regime: SoK sections 3.5 and 5.1, Tables 5 and 7, design rules of section 6.2 ---------------------------------


def regime_answer(capsys, model, device, batch, context, *extra):
    return run_json(capsys, "regime", "--model", model, "--device", device, "--batch", str(batch), "--context", context, *extra)


@pytest.mark.parametrize(
    "device, batch, expected",
    [("b200", 1, WEIGHT_BOUND), ("b200", 32, KV_BOUND), ("h100-sxm", 1, CAPACITY_BOUND), ("h100-sxm", 32, CAPACITY_BOUND)],
)
def test_regime_of_llama_3_70b_at_128k(capsys, device, batch, expected):
    assert regime_answer(capsys, "llama-3-70b", device, batch, "128k")["paper_frame"]["regime"] == expected


def test_regime_text_names_the_regime_and_the_rules(capsys):
    status, out, _ = run(capsys, "regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "1", "--context", "128k")
    assert status == 0
    # the deployment's answer heads: 140 GB of weights on one 80 GB H100 need at least 2; the paper frame follows
    assert out.splitlines()[1].startswith("Regime: does not fit: the weights need at least 2 devices")
    assert "): regime capacity-bound; AI" in out
    assert "cannot load" in out
    assert "140.0 GB" in out and "80.0 GB" in out
    assert sum(line.startswith(("  [x]", "  [ ]")) for line in out.splitlines()) == 8


def test_regime_numbers_of_table5_at_128k(capsys):
    """W1: 22.7 ms per step, AI 2.6, INT4 1.21x, 2-bit 1.25x (SoK Table 5, s = 128k)."""
    numbers = regime_answer(capsys, "llama-3-70b", "b200", 1, "128k")["paper_frame"]["numbers"]
    assert f"{numbers['step_time']['value'] * 1e3:.1f}" == "22.7"
    assert f"{numbers['arithmetic_intensity']['value']:.1f}" == "2.6"
    assert f"{numbers['speedup_int4']['value']:.2f}" == "1.21"
    assert f"{numbers['speedup_int2']['value']:.2f}" == "1.25"
    assert f"{numbers['ridge_point']['value']:.0f}" == "281"
    assert tokens(numbers["traffic_crossover"]["value"]) == "427.2k"


def test_regime_numbers_of_table5_at_512k(capsys):
    """Above the crossover: 38.5 ms, AI 4.8, INT4 1.69x, 2-bit 1.91x, and the batch is sharded over two B200s."""
    numbers = regime_answer(capsys, "llama-3-70b", "b200", 1, "512k")["paper_frame"]["numbers"]
    assert f"{numbers['step_time']['value'] * 1e3:.1f}" == "38.5"
    assert f"{numbers['arithmetic_intensity']['value']:.1f}" == "4.8"
    assert [f"{numbers[k]['value']:.2f}" for k in ("speedup_int4", "speedup_int2")] == ["1.69", "1.91"]
    assert f"{numbers['memory_needed']['value'] / 1e9:.1f}" == "307.8"
    assert numbers["devices_needed"]["value"] == 2


def test_two_bit_speedup_of_w2_is_table7(capsys):
    """The same 2-bit cache: 1.25x in W1 (b = 1), 4.82x in W2 (b = 32) (SoK Table 7)."""
    numbers = regime_answer(capsys, "llama-3-70b", "b200", 32, "128k")["paper_frame"]["numbers"]
    assert f"{numbers['speedup_int2']['value']:.2f}" == "4.82"


def test_pinned_pages_halve_the_b200_bandwidth(capsys):
    striped = regime_answer(capsys, "llama-3-70b", "b200", 1, "128k")["paper_frame"]["numbers"]
    pinned = regime_answer(capsys, "llama-3-70b", "b200", 1, "128k", "--placement", "pinned")["paper_frame"]["numbers"]
    assert pinned["bandwidth"]["value"] == pytest.approx(striped["bandwidth"]["value"] / 2)
    assert pinned["step_time"]["value"] > striped["step_time"]["value"]


def test_design_rules_follow_the_regime(capsys):
    def applies(device, batch):
        rules = regime_answer(capsys, "llama-3-70b", device, batch, "128k")["design_rules"]
        assert [r["number"] for r in rules] == list(range(1, 9))
        return {r["number"] for r in rules if r["applies"]}

    assert applies("b200", 1) == {1, 2, 3, 7, 8}  # below s*: do not compress; stripe the two dies
    assert applies("b200", 32) == {1, 2, 4, 5, 6, 7, 8}  # 1 of 32 fits: quantize, shard; 1.48 TB needs sharding
    assert applies("h100-sxm", 1) == {1, 2, 6, 8}  # the weights do not fit: shard first; monolithic


def test_every_json_number_has_exactly_one_evidence_class(capsys):
    out = regime_answer(capsys, "llama-3-70b", "mi300x", 8, "64k")
    for numbers in (out["paper_frame"]["numbers"], out["per_device"]):
        assert numbers
        for name, q in numbers.items():
            assert q["evidence"] in EVIDENCE_CLASSES, name
            assert isinstance(q["value"], float) and q["unit"] and q["basis"], name
        assert numbers["hbm_capacity"]["evidence"] == "spec"


# ---- user spec files (--specs) --------------------------------------------------------------------------------------


def test_user_specs_add_a_device_and_a_model(capsys):
    """Test-Model: 2 * 10 * 4 * 100 * 2 = 16,000 B/token, 20 GB of weights; s*(1) = 1.25M; s_cap = 80 GB / 16 kB = 5M."""
    answer = run_json(capsys, "crossover", "--specs", USER_SPECS, "--model", "test-model", "--device", "test-accel", "--batch", "1")
    row = answer["paper_frame"][0]
    assert row["traffic_crossover"]["value"] == pytest.approx(1.25e6)
    assert row["capacity_crossover"]["test-accel"]["value"] == pytest.approx(5e6)
    point = regime_answer(capsys, "test-model", "test-accel", 1, "128k", "--specs", USER_SPECS)
    assert point["paper_frame"]["regime"] == point["regime"] == WEIGHT_BOUND
    assert point["paper_frame"]["numbers"]["hbm_capacity"]["basis"] == "kvwall test fixture: invented round numbers"


def test_user_device_with_a_paper_model(capsys):
    """Llama-3-70B's 140 GB of weights do not fit the 100 GB test accelerator."""
    point = regime_answer(capsys, "llama-3-70b", "test-accel", 1, "8k", "--specs", USER_SPECS)
    assert point["paper_frame"]["regime"] == CAPACITY_BOUND and point["regime"] == "does not fit"


def _broken_specs(tmp_path, old, new):
    text = Path(USER_SPECS).read_text()
    assert old in text
    path = tmp_path / "specs.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("hbm_bandwidth: {value: 5,", "hbm_bandwidth: {value: -5,", "devices.test-accel.hbm_bandwidth.value: must be > 0"),
        ("  test-accel:", "  b200:", "devices.b200: id already defined in"),
        ("unit: TB/s", "unit: TB/sec", "devices.test-accel.hbm_bandwidth.unit: unit 'TB/sec' is not understood"),
        ("devices:", "links:", "links: unknown section"),
        ("    n_layers: {value: 10, unit: count}\n", "", "models.test-model: missing required field 'n_layers'"),
    ],
)
def test_bad_user_specs_give_one_clear_line(capsys, tmp_path, old, new, message):
    path = _broken_specs(tmp_path, old, new)
    status, out, err = run(capsys, "crossover", "--specs", path, "--model", "llama-3-70b")
    assert status == 2
    assert out == ""
    assert err.startswith(f"kvwall: {path}: {message}")
    assert len(err.strip().splitlines()) == 1


def test_missing_user_specs_file(capsys, tmp_path):
    status, _, err = run(capsys, "footprint", "--model", "llama-3-70b", "--specs", str(tmp_path / "nope.yaml"))
    assert status == 2
    assert err.strip() == f"kvwall: {tmp_path / 'nope.yaml'}: (top level): file not found"


# ---- command-line mistakes ------------------------------------------------------------------------------------------


def test_unknown_model_names_it_and_the_known_ids(capsys):
    status, _, err = run(capsys, "footprint", "--model", "llama-4")
    assert status == 2
    assert "unknown model 'llama-4'" in err and "llama-3-70b" in err and "--specs" in err


def test_unknown_device_names_it_and_the_known_ids(capsys, catalog):
    status, _, err = run(capsys, "regime", "--model", "llama-3-70b", "--device", "b400", "--batch", "1", "--context", "8k")
    assert status == 2
    assert "unknown device 'b400'" in err and f"known devices: {', '.join(sorted(catalog.devices))};" in err


def test_context_that_is_not_a_length(capsys):
    status, _, err = run(capsys, "footprint", "--model", "llama-3-70b", "--context", "12q")
    assert status == 2
    assert err.startswith("kvwall: --context:")


def test_outside_the_repository_the_shipped_catalogue_answers(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["footprint", "--model", "llama-3-70b", "--context", "1000"]) == 0
    assert "327,680 B/token" in capsys.readouterr().out


def test_bad_config_directory_gives_file_key_reason(capsys, tmp_path):
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    devices = config / "devices.yaml"
    devices.write_text(devices.read_text().replace("value: 8.0, unit: TB/s", "value: 0, unit: TB/s", 1))
    assert main(["footprint", "--model", "llama-3-70b", "--config", str(config)]) == 2
    assert capsys.readouterr().err == f"kvwall: {devices}: devices.b200.hbm_bandwidth.value: must be > 0 (got 0)\n"


@pytest.mark.slow
def test_installed_script_answers_and_fails_cleanly(tmp_path):
    """The `kvwall` entry point of the environment, run from the repository root, and outside any checkout (the
    catalogue shipped with kvwall answers there)."""
    script = shutil.which("kvwall", path=str(Path(sys.executable).parent))
    assert script is not None
    done = subprocess.run([script, "crossover", "--model", "llama-3-70b", "--batch", "32", "--json"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    assert tokens(json.loads(done.stdout)["paper_frame"][0]["traffic_crossover"]["value"]) == "13.4k"
    failed = subprocess.run([script, "regime", "--model", "nope", "--device", "b200", "--batch", "1", "--context", "1k"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr
    assert failed.stderr.startswith("kvwall: unknown model 'nope'")
    listed = subprocess.run([script, "list", "models"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "meta-llama/Llama-3.1-70B" in listed.stdout


# ---- benchmark helpers (no timing assertions) ----------------------------------------------------------------------


def test_grid_throughput_is_positive_on_a_tiny_grid():
    assert benchmark.grid_throughput(load_catalog(CONFIG), points=16, repeats=1) > 0


def test_grid_agrees_with_the_operating_points(capsys):
    catalog = load_catalog(CONFIG)
    grid = benchmark.evaluate_grid(catalog, load_serving_inputs(catalog), np.array([128_000.0, 128_000.0]),
                                   np.array([1.0, 32.0]))
    assert [REGIMES[i] for i in grid["regime"]] == [WEIGHT_BOUND, KV_BOUND]
    assert f"{grid['speedup'][1]:.2f}" == "4.82"
    # TP 4 on B200 at b = 1, s = 128k, memory-bound: (140e9 / 4 - the embedding rows not gathered + 128,000 x
    # 327,680 / 4) / 8e12; a rank gathers a quarter of the one token's row: (128,256 / 4 - 1 / 4) x 8,192 x 2 B less
    read = 35e9 - (128_256 / 4 - 1 / 4) * 8192 * 2
    assert grid["step_time_bound"][0] == pytest.approx((read + 128_000 * 81_920) / 8e12, rel=1e-12)
    assert grid["step_time_estimate"][0] > grid["step_time_bound"][0]


def test_the_blocked_threaded_sweep_is_the_grid_evaluated_at_once(monkeypatch):
    catalog = load_catalog(CONFIG)
    serving = load_serving_inputs(catalog)
    contexts, batches = np.logspace(3, 7, 37), np.arange(1.0, 12.0)
    monkeypatch.setattr(benchmark, "GRID_BLOCK_POINTS", 50)  # 4 rows a block: ten blocks, the last one short
    swept = benchmark.sweep_grid(catalog, serving, contexts, batches, workers=2)
    whole = benchmark.evaluate_grid(catalog, serving, *np.meshgrid(contexts, batches, indexing="ij"))
    assert swept.keys() == whole.keys()
    for name, values in whole.items():
        assert swept[name].shape == (37, 11) and np.array_equal(swept[name], values), name
    assert set(np.unique(swept["regime"])) == {0, 1, 2}  # the grid crosses s* and s_cap


def test_jobs_run_counts_the_lines_of_finished_jobs():
    log = ("Using workflow specific profile profiles/default for setting default command line arguments.\n"
           "[1/4] table_table1: tables/derived/table1.csv (+2)\n[2/4] figure_fig2: figures/fig2.svg (+2)\n"
           "  message: not a job line [9/9] x: y\n[3/4] canonical_numbers: CANONICAL-NUMBERS.md (+2)\n"
           "[4/4] all: (no output)\n")
    assert benchmark.jobs_run(log) == 3
    assert benchmark.jobs_run("Nothing to be done (all requested files are present and up to date).") == 0


def test_regime_takes_the_weight_and_kv_formats_as_stated_assumptions(capsys):
    # Llama-3-70B in fp8 on one H100: 70 GB of weights fit, so s_cap = (80 - 70) GB / 163,840 B per token.
    argv = ["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "1", "--context", "128k",
            "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--json"]
    assert main(argv) == 0
    numbers = json.loads(capsys.readouterr().out)["paper_frame"]["numbers"]
    assert numbers["weight_bytes"]["value"] == 70e9 and "fp8" in numbers["weight_bytes"]["basis"]
    assert numbers["kv_bytes_per_token"]["value"] == 163_840 and "fp8, assumption" in numbers["kv_bytes_per_token"]["basis"]
    assert round(numbers["capacity_crossover"]["value"]) == 61_035
    assert round(numbers["traffic_crossover"]["value"]) == 427_246  # w_p and w_kv halved together: s* is unchanged


def test_crossover_and_footprint_take_the_formats_too(capsys):
    assert main(["crossover", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "1", "--weight-dtype", "fp8",
                 "--kv-dtype", "fp8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["weight_dtype"], out["kv_dtype"]) == ("fp8", "fp8")
    assert main(["footprint", "--model", "llama-3-70b", "--weight-dtype", "int4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["weights"]["value"] == 35e9


def test_regime_takes_the_compute_precision_and_refuses_one_the_device_does_not_list(capsys):
    argv = ["regime", "--model", "llama-3-70b", "--device", "h100-sxm", "--batch", "64", "--context", "8k", "--json"]
    assert main([*argv, "--compute-precision", "fp8"]) == 0
    ridge = json.loads(capsys.readouterr().out)["paper_frame"]["numbers"]["ridge_point"]["value"]
    assert round(ridge) == 591  # 1,979 TFLOP/s dense FP8 over 3.35 TB/s: twice the BF16 ridge of SoK Table 3
    assert main([*argv, "--compute-precision", "fp4"]) != 0
    assert "H100 SXM lists no dense rate for it (it lists bf16, fp8)" in capsys.readouterr().err


def test_the_shipped_catalogue_is_config(root):
    """Every spec file load_catalog reads ships with the package, and is config/'s own (a link in a checkout); so does
    the validation map, which `kvwall validate` reads."""
    from kvwall.inputs.validation_map import VALIDATION_FILE
    from kvwall.inputs.loader import DEVICE_ASSUMPTIONS_FILE, SPEC_FILES
    from kvwall.inputs.packaged import packaged_config_dir

    for name in (*SPEC_FILES.values(), DEVICE_ASSUMPTIONS_FILE, VALIDATION_FILE):
        assert (packaged_config_dir() / name).read_bytes() == (root / "config" / name).read_bytes(), name


def shown_commands() -> list[list[str]]:
    """The `kvwall` command lines of the README's and every docs page's `sh` blocks, without `uv run --frozen` and
    redirects (a line that names a file of the reader's own, such as `org--model_config.json`, is left out)."""
    commands = []
    for name in PAGES:
        for block in page(name).split("```sh\n")[1:]:
            lines = [line.split("#", 1)[0].split(">", 1)[0] for line in block.split("```", 1)[0].splitlines()]
            commands += [shlex.split(line)[4:] for line in lines if line.startswith("uv run --frozen kvwall ")
                         and not line.rstrip().endswith("\\")]
    return [argv for argv in commands if argv[0] in ANSWERING]


#: The commands whose shown lines answer from the committed catalogue and tables, quickly, with nothing written.
ANSWERING = {"footprint", "crossover", "regime", "fit", "list", "template"}


@pytest.mark.parametrize("argv", shown_commands(), ids=" ".join)
def test_every_command_the_docs_show_answers(argv, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(argv) == 0
    assert capsys.readouterr().out


def test_the_docs_show_the_questions_a_serving_engineer_asks():
    asked = {argv[0] for argv in shown_commands()}
    assert {"footprint", "crossover", "regime", "fit", "list"} <= asked


def shown_examples() -> list[tuple[list[str], list[str]]]:
    """Each block of the README or a docs page that shows a `$ kvwall` command and what it prints: its arguments and
    the printed lines it shows whole (a line with '...' in it elides)."""
    examples = []
    for name in PAGES:
        for block in page(name).split("```\n$ kvwall ")[1:]:
            lines = block.split("```", 1)[0].splitlines()
            command = [lines.pop(0)]
            while command[-1].endswith("\\"):
                command.append(lines.pop(0))
            argv = shlex.split(" ".join(line.rstrip("\\") for line in command))
            examples.append((argv, [line for line in lines if "..." not in line]))
    return examples


@pytest.mark.parametrize("argv, shown", shown_examples(), ids=lambda value: " ".join(value)[:60])
def test_every_example_the_docs_print_is_what_the_command_prints(argv, shown, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert shown and all(line in printed for line in shown), [line for line in shown if line not in printed]


def test_job_kinds_are_the_scripts_and_notebooks_the_run_log_lists():
    log = ("[Wed Dec  2 12:38:34 2026]\nlocalrule figure_fig1:\n    input: matplotlibrc, .snakemake/kvwall-views/paper.pickle, "
           "workflow/scripts/figure.py, src/kvwall/figures/style.py\n    output: figures/fig1.svg\n"
           "localrule tables_hardware:\n    input: .snakemake/kvwall-views/paper.pickle, workflow/scripts/write_tables.py\n"
           "rule tables_bounds:\n    input: workflow/scripts/write_tables.py, src/kvwall/render.py\n"
           "localrule notebook_01:\n    input: notebooks/01_footprint.ipynb, tables/derived/table1.csv, workflow/scripts/notebook.py\n"
           "localrule validation_tables:\n    input: .snakemake/kvwall-views/serving.pickle, src/kvwall/render.py\n"
           "localrule all:\n    input: notebooks/executed/01_footprint.ipynb, figures/fig1.svg\n")
    assert benchmark.job_kinds(log) == {"figure": 1, "write_tables": 2, "notebook": 1, "validation_tables": 1}


def test_a_scripts_floor_imports_what_it_imports_and_snakemakes_preamble_where_it_runs_under_script(tmp_path):
    shell_job = tmp_path / "shell_job.py"
    shell_job.write_text("import sys\nfrom kvwall.render import write_table\nfrom . import nothing\n")
    script_job = tmp_path / "script_job.py"
    script_job.write_text("import sys\n\nsys.stderr = open(snakemake.log[0], 'w')\n")
    assert benchmark.script_imports(shell_job) == ("sys", "kvwall.render")
    assert benchmark.script_imports(script_job) == ("snakemake.script", "sys")


def test_the_floor_is_every_jobs_kind_floor_over_the_cores():
    result = benchmark.BenchmarkResult(
        cold_build=10.0, noop_build=0.5, contributor_loop=5.0, loop_jobs=3, load_average=0.0,
        kind_floors=(benchmark.KindFloor("write_tables", 13, 0.25), benchmark.KindFloor("figure", 9, 1.0)),
        cores=4, grid_points=1, grid_throughput=1.0, validation_rows=1, validation_time=0.1)
    assert result.jobs == 22
    assert result.floor == pytest.approx((13 * 0.25 + 9 * 1.0) / min(4, os.cpu_count() or 1))
    assert not result.targets()["every job kind's floor <= 0.5 s"]
    assert not any("test" in target for target in result.targets())  # the suites are timed with --tests only
    housed = replace(result, house=benchmark.House(251, None, 2)).targets()
    assert housed == {**result.targets(), "README <= 250 lines (251)": False,
                      "mkdocs build --strict clean (MkDocs not installed)": False,
                      "no import circle among kvwall's modules (2)": False}
    timed = replace(result, fast_tests=45.0, all_tests=200.0).targets()
    assert timed['pytest -m "not slow" <= 60 s'] and not timed["the whole test suite <= 180 s"]


def test_the_plan_benchmark_counts_the_points_the_command_searches():
    catalog = load_catalog(CONFIG)
    points, seconds = benchmark.plan_search_time(catalog, repeats=1)
    assert points > benchmark.PLAN_CANDIDATES and seconds > 0
