"""A command writes only the file it was asked to write, whole or not at all: `kvwall import --into` through a YAML
emitter and read back before the file is replaced, `kvwall validate --output` and `kvwall measure --output` never onto an input or a tracked file."""

import os
from pathlib import Path

import pytest

from kvwall.cli.main import main
from kvwall.inputs.loader import read_yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config"
QWEN = ROOT / "tests" / "fixtures" / "hf-configs" / "Qwen--Qwen3-8B_config.json"
MEASUREMENTS = ROOT / "data" / "reported" / "serving-measurements.csv"


def one_line(capsys) -> str:
    """The one line a refused command printed on stderr."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.fixture
def models_file(tmp_path):
    target = tmp_path / "models.yaml"
    target.write_bytes((CONFIG / "models.yaml").read_bytes())
    return target


#: The id a test imports a model under: no catalogue id starts with "test-".
FIXTURE_ID = "test-qwen3-8b"


def import_into(target, *extra, source="Qwen3-8B model card (8.2B)"):
    return main(["import", str(QWEN), "--params-nominal", "8.2e9", "--params-source", source, "--into", str(target),
                 "--config", str(CONFIG), *(extra or ("--id", FIXTURE_ID))])


@pytest.mark.parametrize("source", ['the "Qwen3-8B" card', "card\nmodels: {}", "card\n  evil: \"x\"", "a: b # c", "\\ '"])
def test_a_params_source_of_any_text_reads_back_as_given(models_file, capsys, source):
    assert import_into(models_file, source=source) == 0
    document = read_yaml(models_file)
    assert document["sources"][f"{FIXTURE_ID}.params-nominal"] == source
    assert list(document["models"])[-1] == FIXTURE_ID and "evil" not in document
    assert len(document["models"]) == len(read_yaml(CONFIG / "models.yaml")["models"]) + 1


@pytest.mark.parametrize("text, message", [
    ("", ": (top level): the file is empty"),
    ("evidence: spec\nsources: {a: b}\nmodels: {}\n", ": sources: not in block style"),
    ("{evidence: spec, sources: {a: b}, models: {}}\n", ": sources: not in block style"),
    ("evidence: spec\nsources:\n  a: b\n", ": models: missing"),
    ("evidence: spec\nsources:\n  a: b\nmodels:\n  - x\n", ": models: must be a mapping of ids"),
])
def test_an_into_file_it_cannot_extend_is_refused_unchanged(tmp_path, capsys, text, message):
    target = tmp_path / "models.yaml"
    target.write_text(text)
    assert import_into(target) == 2
    assert one_line(capsys).startswith(f"kvwall: {target}{message}")
    assert target.read_text() == text and os.listdir(tmp_path) == ["models.yaml"]


def test_an_into_file_with_no_model_yet_takes_the_first(tmp_path, capsys):
    target = tmp_path / "mine.yaml"
    target.write_text("evidence: spec\nsources:\n  mine: my notes\nmodels:\n")
    assert import_into(target) == 0
    document = read_yaml(target)
    assert list(document["models"]) == [FIXTURE_ID] and document["sources"]["mine"] == "my notes"
    assert os.listdir(tmp_path) == ["mine.yaml"]


def test_an_into_folder_is_refused(tmp_path, capsys):
    assert import_into(tmp_path) == 2
    assert one_line(capsys) == f"kvwall: {tmp_path}: (top level): not a regular file (a directory, FIFO or device is never read)"


def test_an_entry_that_would_not_load_leaves_the_file_unchanged(models_file, capsys):
    before = models_file.read_bytes()
    text = before.decode().replace("models:\n", "models:\n  broken:\n    name: x\n", 1)
    models_file.write_text(text)
    assert import_into(models_file) == 2
    assert "the entry would not load" in one_line(capsys)
    assert models_file.read_text() == text and os.listdir(models_file.parent) == ["models.yaml"]


def test_an_id_that_is_not_a_catalogue_id_names_the_option(models_file, capsys):
    before = models_file.read_bytes()
    assert import_into(models_file, "--id", "a: b") == 2
    assert one_line(capsys).startswith("kvwall: --id 'a: b': not a catalogue id")
    assert models_file.read_bytes() == before


# ---- kvwall validate --output ----------------------------------------------------------------------------------

POINTS = ("id,measured_on,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
          "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,"
          "prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,"
          "prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,"
          "decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
          "a_c8_x,2026-01-01,vllm,,org/model,h100_sxm,fp8,agg,1024,1024,fp8,fp8,8,2,1,1,2,1,"
          ",,,,,,,,,,,,,,120.5,10.25\n")


@pytest.fixture
def points(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text(POINTS)
    return path


def validate(points, output):
    return main(["validate", str(points), "--output", str(output), "--config", str(CONFIG)])


def test_an_output_that_is_the_input_is_refused(points, capsys):
    assert validate(points, points) == 2
    assert one_line(capsys) == f"kvwall: {points}: --output: is an input of this command: name another file to write"
    assert points.read_text() == POINTS


def test_an_output_tracked_by_git_is_refused(capsys):
    before = MEASUREMENTS.read_bytes()
    readme = ROOT / "README.md"
    readme_before = readme.read_bytes()
    assert validate(MEASUREMENTS, readme) == 2
    assert one_line(capsys).endswith("README.md: --output: is a file under version control: name a file outside the project's own")
    assert readme.read_bytes() == readme_before and MEASUREMENTS.read_bytes() == before


@pytest.mark.parametrize("where, reason", [("folder", "is a folder"), ("missing/out.csv", "folder "),
                                           ("fifo", "is not a regular file"),
                                           ("x" * 300 + ".csv", "cannot be written (File name too long)")])
def test_an_output_it_cannot_write_is_one_line(points, capsys, where, reason):
    output = points.parent / where
    if where == "folder":
        output.mkdir()
    elif where == "fifo":
        os.mkfifo(output)
    assert validate(points, output) == 2
    assert one_line(capsys).startswith(f"kvwall: {output}: --output: {reason}")
    assert not (points.parent / "missing").exists()


@pytest.mark.parametrize("output, reason", [
    ("README.md", "is a file under version control: name a file outside the project's own"),
    ("data/measured/amd-epyc-2c-2026-11-29.json", "is a file under version control: name a file outside the project's own"),
    ("missing/record.json", "folder 'missing' does not exist"),
    ("config/measure.yaml", "is an input of this command: name another file to write"),
])
def test_a_measure_output_is_refused_before_the_run(capsys, monkeypatch, output, reason):
    monkeypatch.chdir(ROOT)
    before = (ROOT / output).read_bytes() if (ROOT / output).exists() else None
    assert main(["measure", "--quick", "--no-progress", "--output", output]) == 2
    assert one_line(capsys) == f"kvwall: {output}: --output: {reason}"
    assert ((ROOT / output).read_bytes() if (ROOT / output).exists() else None) == before
    assert not (ROOT / "missing").exists()


def test_rows_none_understood_are_written_without_warnings(points, tmp_path, capsys, recwarn):
    output = tmp_path / "bounds.csv"
    assert validate(points, output) == 0
    assert len(output.read_text().splitlines()) == 2 and not [w for w in recwarn if "numpy" in str(w.filename)]
    assert "median |estimate / measured - 1| none (no row understood)" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["bounds.csv", "points.csv"]


def test_a_params_source_that_is_not_utf8_is_refused(models_file, capsys):
    before = models_file.read_bytes()
    assert import_into(models_file, "--id", FIXTURE_ID, source=b"card \xff".decode("utf-8", "surrogateescape")) == 2
    assert one_line(capsys) == "kvwall: --params-source: not UTF-8 text (a byte the command line could not decode)"
    assert models_file.read_bytes() == before
