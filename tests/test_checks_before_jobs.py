"""What a job would refuse, the check before any job refuses first (kvwall.cli.front_door): each edit of a copy of
config/ stops check_inputs with one message naming the file and the key."""

import re
import shutil
from pathlib import Path

import pytest

from kvwall.cli.front_door import check_inputs
from kvwall.cli.notebook_parameters import check_notebook_parameters
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import read_yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config"
CX7 = "      scale_out: {name: ConnectX-7 400 Gb/s, bandwidth: {value: 400, unit: Gb/s, source: hgx-8-gpu-cx7}}\n"


def checked(config: Path) -> None:
    document = read_yaml(config / "config.yaml") or {}
    check_inputs({**document, "config_dir": str(config)} if document else document, str(config / "config.yaml"),
                 records_dir=ROOT / "data" / "measured", serving_measurements=ROOT / "data" / "reported" / "serving-measurements.csv")


def refusal(tmp_path: Path, file: str, edit) -> SpecError:
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    path = config / file
    if edit is None:
        path.unlink()
    else:
        text = edit(path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        checked(config)
    assert caught.value.file == str(path)
    return caught.value


def replaced(old: str, new: str):
    def edit(text: str) -> str:
        assert old in text, f"{old!r} is no longer in the file: the test breaks nothing"
        return text.replace(old, new, 1)
    return edit


def duplicate_row(text: str) -> str:
    first, second = re.findall(r"- \{id: ([^,]+),", text)[:2]
    return text.replace(f"- {{id: {second},", f"- {{id: {first},", 1)


@pytest.mark.parametrize("file, edit, key, reason", [
    ("device_assumptions.yaml", replaced(CX7, ""), "device_assumptions.h100-sxm.fabric.scale_out",
     "missing: deployments of up to 64 devices leave this 8-device domain; give the link past it"),
    ("device_assumptions.yaml", replaced("value: 400, unit: Gb/s", "value: 1e-300, unit: Gb/s"),
     "device_assumptions.h100-sxm.fabric.scale_out.bandwidth.value", "1e-300 Gb/s is out of range (at least 1000 bytes/s)"),
    ("devices.yaml", replaced("value: 989.5, unit: TFLOP/s", "value: 1e-12, unit: TFLOP/s"),
     "devices.h100-sxm.dense_flops.bf16.value", "1e-12 TFLOP/s is out of range (at least 1e+06 FLOP/s)"),
    ("devices.yaml", replaced("hbm_capacity: {value: 80, unit: GB,", "hbm_capacity: {value: 1e-300, unit: GB,"),
     "devices.h100-sxm.hbm_capacity.value", "1e-300 GB is out of range (at least 0.01 bytes)"),
    ("validation.yaml", replaced("fp4: fp4, int4: bf16}", "fp4: fp44, int4: bf16}"), "compute_precision.formats.fp4",
     "'fp44' is not a precision a dense rate is given at (known: fp32, bf16, fp16, fp8, int8, fp4)"),
    ("validation.yaml", replaced("nvfp4: fp4,", "nvfp4: fp44,"), "weight_formats.modes.nvfp4", "storage format 'fp44' is not understood"),
    ("device_assumptions.yaml", None, "", "file not found"),
    ("devices.yaml", replaced("source: nvidia-h100-nvlink}", "source: nvidia-h100-nvlnk}"),
     "devices.h100-sxm.scale_up.bandwidth.source", "source 'nvidia-h100-nvlnk' is not listed under 'sources'"),
    ("devices.yaml", lambda text: re.sub(r"\n  nvidia-h100: [^\n]*", "", text, count=1),  # no longer listed
     "devices.h100-sxm.hbm_capacity.source", "source 'nvidia-h100' is not listed under 'sources'"),
    ("devices.yaml", replaced("    name: H100 SXM\n", '    name: "H100\\nSXM"\n'), "devices.h100-sxm.name",
     "'H100\\nSXM' must be one line of printable text"),
    ("config.yaml", replaced("reference_device: h100-sxm", "reference_device: h100-sxn"), "tables.in_text.reference_device",
     "'h100-sxn' does not exist in "),
    ("validation.yaml", replaced("b300_sxm: {device: b300,", "b300_sxm: {device: b30,"), "systems.b300_sxm.device",
     "device 'b30' is not in the catalogue (did you mean b300"),
    ("config.yaml", replaced("devices: [h100-sxm, h200-sxm, b200, mi300x]", "devices: [h100-sxm, h201-sxm]"),
     "tables.table3.devices[1]", "'h201-sxm' does not exist in "),
    ("config.yaml", replaced("    devices: [h100-sxm, h200-sxm, b200, mi300x]\n  table8", "    devices: [b200, b2000]\n  table8"),
     "tables.capacity.devices[1]", "'b2000' does not exist in "),
    ("techniques.yaml", duplicate_row, "configurations.rows[1].id", "'bf16' is given twice (rows 0 and 1)"),
    ("config.yaml", lambda text: "", "", "missing required field 'config_dir'"),
    ("tiers.yaml", lambda text: "", "", "the file is empty"),
    ("validation.yaml", lambda text: "", "", "the file is empty"),
    ("validation.yaml", replaced("engines: {trtllm: {fp8:", "engines: {trtllmx: {fp8:"), "stored_kv_format.engines.trtllmx",
     "engine 'trtllmx' is not known (known: vllm, sglang, trtllm)"),
    ("validation.yaml", replaced("engines: {trtllm: {fp8:", "engines: {trtllm: {fp88:"), "stored_kv_format.engines.trtllm",
     "storage format 'fp88' is not understood"),
])
def test_a_bad_edit_is_refused_before_any_job(tmp_path, file, edit, key, reason):
    error = refusal(tmp_path, file, edit)
    assert error.key == key and error.reason.startswith(reason), str(error)
    assert "\n" not in str(error)


EMPTY_CONFIG_DIR = "empty: name the folder of the spec files (devices.yaml, models.yaml, ...), for example config"


@pytest.mark.parametrize("value, reason", [
    ("", EMPTY_CONFIG_DIR),
    (" ", EMPTY_CONFIG_DIR),
    ("config/devices.yaml", "'config/devices.yaml' is not a folder (the folder of the spec files, devices.yaml, "
                            "models.yaml, ...)"),
])
def test_a_config_dir_that_names_no_folder_is_refused_at_its_key(tmp_path, monkeypatch, value, reason):
    """An empty config_dir read the spec files from wherever the workflow ran, and a file named in it was blamed on
    devices.yaml: both stop at the key, of the config file that gives it or of --config."""
    monkeypatch.chdir(ROOT)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(replaced("config_dir: config", f"config_dir: {value!r}")((CONFIG / "config.yaml").read_text(
        encoding="utf-8")), encoding="utf-8")
    for given_in, file in ((str(config_file), str(config_file)), ("--config", "config/config.yaml")):
        with pytest.raises(SpecError) as caught:
            check_inputs({**read_yaml(CONFIG / "config.yaml"), "config_dir": value}, file)
        assert (caught.value.file, caught.value.key, caught.value.reason) == (given_in, "config_dir", reason)


def test_a_fabric_that_holds_every_deployment_needs_no_scale_out(tmp_path):
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    path = config / "device_assumptions.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("domain: {value: 8, unit: count, source: hgx-8-gpu-cx7}\n" + CX7,
                                 "domain: {value: 64, unit: count, source: hgx-8-gpu-cx7}\n", 1), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != text
    checked(config)


def test_an_unknown_id_in_a_config_file_suggests_the_closest(tmp_path):
    error = refusal(tmp_path, "config.yaml", replaced("reference_device: h100-sxm", "reference_device: h100-sxn"))
    assert error.reason.split(" (", 1)[1].startswith("did you mean h100-sxm")


REFUSED_ROW = "nvidia_deepseek_r1_nvfp4_nvidia_deepseek_r1_nvfp4_b200_sxm_trtllm_agg_4000x1000_c224_tp4_epnone_1"
MEASUREMENTS = ROOT / "data" / "reported" / "serving-measurements.csv"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The checked inputs, and a stamp folder in which the measurements are validated once for the module."""
    stamps = tmp_path_factory.mktemp("stamps")
    checked = check_inputs({**read_yaml(CONFIG / "config.yaml"), "config_dir": str(CONFIG)}, str(CONFIG / "config.yaml"),
                           serving_measurements=MEASUREMENTS, stamp_dir=stamps)
    return checked, stamps


def notebook_check(inputs, parameters: dict) -> None:
    checked, stamps = inputs
    config = {**read_yaml(CONFIG / "config.yaml"), "config_dir": str(CONFIG), **parameters}
    check_notebook_parameters(config, str(CONFIG / "config.yaml"), checked.catalog, CONFIG / "paper" / "printed.yaml",
                              MEASUREMENTS, checked.validation, stamps)


@pytest.mark.parametrize("parameter, value, reason", [
    ("notebook_batch", -3, "must be >= 1 (got -3)"),
    ("notebook_batch", 8.5, "must be of type integer"),
    ("notebook_tpot_max_ms", 0, "must be > 0"),
    ("notebook_tpot_max_ms", "fast", "must be of type number (got str 'fast')"),
    ("notebook_model", "llama-9", "model 'llama-9' is not in the catalogue (did you mean llama-3-8b"),
    ("notebook_device", "b300x", "device 'b300x' is not in the catalogue (did you mean b300"),
    ("notebook_where", "Table 9", "'Table 9' is not a place of the paper"),
    ("notebook_point_id", "no-such-row", "'no-such-row' is not the id of a row of"),
    ("notebook_moe_point_id", REFUSED_ROW, f"row {REFUSED_ROW!r} of"),
])
def test_a_notebook_parameter_that_names_nothing_is_refused_naming_the_command_line(inputs, parameter, value, reason):
    with pytest.raises(SpecError) as caught:
        notebook_check(inputs, {parameter: value})
    assert (caught.value.file, caught.value.key) == ("--config", parameter)
    assert caught.value.reason.startswith(reason) and "\n" not in str(caught.value), str(caught.value)


def test_every_known_notebook_parameter_passes(inputs):
    notebook_check(inputs, {
        "notebook_model": "llama-3-8b", "notebook_device": "h100-sxm", "notebook_batch": 8, "notebook_context": 64000,
        "notebook_gpus": 2, "notebook_isl": 2048, "notebook_osl": 512, "notebook_tpot_max_ms": 30.0,
        "notebook_where": "Table 5",
        "notebook_point_id": "2026_04_06_llama_3_1_70b_h200_sxm_trtllm_fp8_agg_1024x8192_c128_tp4_ep1_507",
        "notebook_moe_point_id": "2026_03_25_deepseek_r1_h200_sxm_trtllm_fp8_agg_1024x8192_c64_tp8_0_ep8_0_1240"})


def test_the_check_before_any_job_refuses_an_unknown_notebook_parameter_and_names_the_file_that_holds_one(inputs, tmp_path):
    stamps = inputs[1]
    document = {**read_yaml(CONFIG / "config.yaml"), "config_dir": str(CONFIG)}
    with pytest.raises(SpecError, match=r"^--config: \(top level\): unknown field\(s\): \('notebook_foo' was unexpected\)"):
        check_inputs({**document, "notebook_foo": 3}, str(CONFIG / "config.yaml"), stamp_dir=stamps)
    # a parameter the config file itself holds is named with that file
    config = tmp_path / "config.yaml"
    config.write_text((CONFIG / "config.yaml").read_text(encoding="utf-8") + "notebook_batch: 0\n", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        check_inputs({**read_yaml(config), "config_dir": str(CONFIG)}, str(config), stamp_dir=stamps)
    assert (caught.value.file, caught.value.key) == (str(config), "notebook_batch")
