"""A hostile or malformed file is refused by the one hardened reader whatever command reads it: one line naming the
file and the key, exit status 2, nothing written, no hang."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from kvwall.cli.main import main
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import read_yaml
from kvwall.inputs.serving import read_serving_measurements
from test_written_files import CONFIG, MEASUREMENTS, QWEN, ROOT, one_line



def special(tmp_path: Path, kind: str) -> Path:
    """A config.json that is no regular file or too big to read."""
    path = tmp_path / "org--model_config.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "large":
        path.write_text(json.dumps({"model_type": "qwen3", "pad": "x" * (5 * 2**20)}))
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    return path


@pytest.mark.parametrize("kind, reason", [
    ("fifo", "(file): not a regular file"), ("device", "(file): not a regular file"),
    ("folder", "(file): not a regular file"), ("large", "(file): larger than 4 MiB"),
    ("nested", "(file): not valid JSON: nested too deeply"),
])
@pytest.mark.parametrize("command", [["import"], ["regime", "--device", "b200", "--batch", "1", "--context", "8k", "--hf-config"]])
def test_a_config_json_that_is_no_plain_file_is_one_line(tmp_path, capsys, kind, reason, command):
    path = special(tmp_path, kind)
    assert main([*command, str(path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys).startswith(f"kvwall: {path}: {reason}")


def edited(tmp_path: Path, **fields) -> Path:
    config = json.loads(QWEN.read_text())
    config.update(fields)
    path = tmp_path / "org--model_config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("fields, key", [
    ({"model_type": ["qwen3"]}, "model_type"),
    ({"layer_types": [{"kind": "full"}] * 36}, "layer_types[0]"),
    ({"num_hidden_layers": 10**200}, "num_hidden_layers"),
    ({"hidden_size": 10**200}, "hidden_size"),
    ({"num_attention_heads": 1e300}, "num_attention_heads"),
    ({"vocab_size": "many"}, "vocab_size"),
    ({"torch_dtype": ["bfloat16"]}, "torch_dtype"),
    ({"quantization_config": [1]}, "quantization_config"),
    ({"text_config": "qwen3"}, "text_config"),
    ({"text_config": [{"model_type": "qwen3"}]}, "text_config"),
    ({"quantization_config": {"quant_method": ["fp8"]}}, "quantization_config.quant_method"),
    ({"quantization_config": {"quant_algo": "MIXED_PRECISION", "quantized_layers": [1]}}, "quantization_config.quantized_layers"),
    ({"quantization_config": {"config_groups": [1]}}, "quantization_config.config_groups"),
    ({"quantization_config": {"config_groups": {"g": {"weights": [8]}}}}, "quantization_config.config_groups.g.weights"),
])
def test_a_config_value_of_the_wrong_type_or_size_names_its_key(tmp_path, capsys, fields, key):
    path = edited(tmp_path, **fields)
    assert main(["import", str(path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys).startswith(f"kvwall: {path}: {key}: ")


@pytest.mark.parametrize("companion, key", [
    ({"quantization": [1]}, "hf_quant_config.json: quantization"),
    ({"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": [1]}}, "hf_quant_config.json: quantization.quantized_layers"),
])
def test_a_quantization_companion_of_the_wrong_shape_names_its_key(tmp_path, capsys, companion, key):
    path = edited(tmp_path)
    (tmp_path / "org--model_hf_quant_config.json").write_text(json.dumps(companion))
    assert main(["import", str(path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys).startswith(f"kvwall: {path}: {key}: must be an object (got list)")


def test_a_folder_where_a_spec_file_is_expected_is_one_line(tmp_path, capsys):
    with pytest.raises(SpecError) as error:
        read_yaml(tmp_path)
    assert (error.value.file, error.value.reason) == (str(tmp_path), "not a regular file (a directory, FIFO or device is never read)")
    assert main(["footprint", "--model", "llama-3-8b", "--context", "8k", "--specs", str(tmp_path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys).startswith(f"kvwall: {tmp_path}: (top level): not a regular file")


def test_a_key_given_twice_in_a_json_file_is_refused(tmp_path, capsys):
    from kvwall.measure.record import read_record

    record = tmp_path / "record.json"
    record.write_text('{"mode": "quick", "mode": "full"}')
    with pytest.raises(SpecError) as error:
        read_record(record)
    assert (error.value.key, error.value.reason) == ("mode", "given twice in one object")
    path = tmp_path / "org--model_config.json"
    path.write_text(QWEN.read_text().replace("{", '{"num_hidden_layers": 2, ', 1))
    assert main(["import", str(path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys) == f"kvwall: {path}: num_hidden_layers: given twice in one object"


@pytest.mark.parametrize("byte", ["\x00", "\x07", "\x1b"])
def test_a_control_character_in_a_spec_file_is_one_line_with_its_line(tmp_path, byte):
    path = tmp_path / "devices.yaml"
    path.write_text(f"evidence: spec\nsources: {{a: x{byte}y}}\n")
    with pytest.raises(SpecError) as error:
        read_yaml(path)
    assert (error.value.key, error.value.reason) == ("line 2", f"not valid YAML: character #x{ord(byte):04x}: control characters are not allowed")


# ---- the serving measurements -----------------------------------------------------------------------------------

def measurements(tmp_path: Path, column: str | None = None, value: str = "", extra: str = "") -> Path:
    """The header and first row of the committed measurements, one cell replaced or cells added."""
    header, row = MEASUREMENTS.read_text().splitlines()[:2]
    cells = row.split(",")
    if column is not None:
        cells[header.split(",").index(column)] = value
    path = tmp_path / "points.csv"
    path.write_text(f"{header}\n{','.join(cells)}{extra}\n")
    return path


@pytest.mark.parametrize("column, value", [("tp_size", "2e19"), ("isl", "8e3"), ("batch_size", "1e2")])
def test_a_count_in_scientific_notation_is_refused_at_its_column(tmp_path, column, value):
    path = measurements(tmp_path, column, value)
    with pytest.raises(SpecError) as error:
        read_serving_measurements(path)
    assert error.value.key.endswith(f"): {column}") and error.value.reason.startswith("must be of type ")


@pytest.mark.parametrize("column, value, key, reason", [
    ("batch_size", "100000000000000000000", "batch_size", "is greater than the maximum of 100000000"),
    ("tp_size", "20000000000000000000", "tp_size", "is greater than the maximum of 1000000"),
    ("silicon_tpot_ms", "1e308", "silicon_tpot_ms", "is greater than the maximum of 1000000000"),
    ("isl", "1" + "0" * 30, "isl", "is greater than the maximum of 100000000"),
])
def test_an_absurd_measurement_is_refused_at_its_column(tmp_path, column, value, key, reason):
    path = measurements(tmp_path, column, value)
    with pytest.raises(SpecError) as error:
        read_serving_measurements(path)
    assert error.value.file == str(path) and error.value.key.endswith(f"): {key}") and error.value.reason.endswith(reason)


def test_a_byte_order_mark_before_the_header_is_read_past(tmp_path):
    path = tmp_path / "points.csv"
    path.write_bytes(b"\xef\xbb\xbf" + MEASUREMENTS.read_bytes()[:20_000].rsplit(b"\n", 1)[0] + b"\n")
    assert list(read_serving_measurements(path).columns)[0] == "id"


@pytest.mark.parametrize("cell, shown", [('"x\ny"', "'x\\ny'"), ('"x\n"', "'x\\n'")])
def test_a_line_break_in_a_quoted_id_is_kept_and_refused_in_one_line(tmp_path, capsys, cell, shown):
    header, row = MEASUREMENTS.read_text().splitlines()[:2]
    path = tmp_path / "points.csv"
    path.write_text(f"{header}\n{cell}{row[row.index(','):]}\n")
    assert main(["validate", str(path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys).startswith(f"kvwall: {path}: line 2 (id {shown}): id: {shown} is not of the form ")


@pytest.mark.parametrize("column, value, extra, reason", [
    (None, "", ",surplus", "1 cell(s) more than the header's columns"),
    ("backend_version", "x" * (10 * 2**20 // 8), "", "not a CSV row (field larger than field limit (131072))"),
])
def test_a_row_the_header_does_not_describe_is_refused_with_its_line(tmp_path, capsys, column, value, extra, reason):
    path = measurements(tmp_path, column, value, extra)
    assert main(["validate", str(path), "--config", str(CONFIG)]) == 2
    assert one_line(capsys) == f"kvwall: {path}: line 2: {reason}"


# ---- kvwall diff ------------------------------------------------------------------------------------------------

def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "t.csv").write_text("id,x\na,1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "one")
    return tmp_path


def test_diff_refuses_an_untracked_link_to_a_device(repo, capsys):
    (repo / "tables" / "zero.csv").symlink_to("/dev/zero")
    assert main(["diff", "--repo", str(repo)]) == 2
    assert one_line(capsys) == f"kvwall: diff: {repo}/tables/zero.csv: (top level): not a regular file (a directory, FIFO or device is never read)"


def test_diff_refuses_bytes_that_are_not_text(repo, capsys):
    (repo / "tables" / "t.csv").write_bytes(b"id,x\n\xff,1\n")
    assert main(["diff", "--repo", str(repo)]) == 2
    assert one_line(capsys) == f"kvwall: diff: {repo}/tables/t.csv: (top level): cannot be read as UTF-8 text"
    _git(repo, "commit", "-qam", "two")
    (repo / "tables" / "t.csv").write_text("id,x\na,1\n")
    assert main(["diff", "--repo", str(repo)]) == 2
    assert one_line(capsys) == "kvwall: diff: git show HEAD:tables/t.csv: the answer cannot be read as UTF-8 text"


def test_diff_names_a_missing_repository(tmp_path, capsys):
    assert main(["diff", "--repo", str(tmp_path / "none")]) == 2
    assert one_line(capsys) == f"kvwall: diff: {tmp_path / 'none'}: No such file or directory"


def test_build_refuses_a_configfile_that_is_a_folder(tmp_path, capsys):
    assert main(["build", "-n", "--configfile", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"kvwall: bad input: {tmp_path}: (top level): not a regular file (a directory, FIFO or device is never read)"


@pytest.mark.parametrize("path, text, line", [
    ("notebooks/executed/n.ipynb", "[1]", "notebooks/executed/n.ipynb: not a notebook ("),
    ("notebooks/executed/n.ipynb", '{"cells": [1]}', "notebooks/executed/n.ipynb: not a notebook ("),
    ("canonical-numbers.json", '{"sections": [1]}', "canonical-numbers.json: not the canonical numbers' format ("),
    ("canonical-numbers.json", "[1]", "canonical-numbers.json: not the canonical numbers' format ("),
])
def test_diff_refuses_json_of_the_wrong_shape(repo, capsys, path, text, line):
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("{}")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "two")
    target.write_text(text)
    assert main(["diff", "--repo", str(repo)]) == 2
    assert one_line(capsys).startswith(f"kvwall: diff: {line}")


def test_diff_refuses_a_table_cell_past_the_csv_field_limit(repo, capsys):
    (repo / "tables" / "t.csv").write_text("id,x\na," + "9" * 200_000 + "\n")
    assert main(["diff", "--repo", str(repo)]) == 2
    assert one_line(capsys) == "kvwall: diff: tables/t.csv: not a CSV table (field larger than field limit (131072))"
