"""Bad input stops with one message naming the file, the key and the reason, before anything is written.

Each test copies config/ to a temporary folder and breaks one thing. A few representative cases also run the
workflow on a temporary copy of the repository and check that Snakemake fails with that one line and leaves every
file as it was.
"""

import csv
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import load_catalog, load_workflow_config, read_yaml
from kvwall.inputs.reported import load_reported

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config"


def break_config(folder: Path, file: str, old: str, new: str) -> Path:
    """Copy config/ into ``folder`` and replace the first ``old`` of ``file`` by ``new``."""
    config = folder / "config"
    shutil.copytree(CONFIG, config)
    path = config / file
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {file}: the test no longer breaks anything"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return config


def load_everything(config: Path) -> None:
    """What the workflow loads before any rule runs."""
    catalog = load_catalog(config)
    load_workflow_config(read_yaml(config / "config.yaml"), catalog, str(config / "config.yaml"))
    load_reported(config / "reported")


def spec_error(tmp_path: Path, file: str, old: str, new: str) -> SpecError:
    config = break_config(tmp_path, file, old, new)
    with pytest.raises(SpecError) as caught:
        load_everything(config)
    assert caught.value.file == str(config / file)
    return caught.value


def test_unbroken_config_loads(tmp_path):
    load_everything(break_config(tmp_path, "devices.yaml", "devices:", "devices:"))


def test_missing_field(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "    hbm_bandwidth: {value: 8.0, unit: TB/s, source: nvidia-b200}\n", "")
    assert (error.key, error.reason) == ("devices.b200", "missing required field 'hbm_bandwidth'")


def test_misspelt_field(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "    hbm_capacity: {value: 192", "    hbm_capacty: {value: 192")
    assert error.key == "devices.b200"
    assert error.reason == "missing required field 'hbm_capacity'; found unknown field(s) 'hbm_capacty' instead (misspelt?)"


def test_wrong_type(tmp_path):
    error = spec_error(tmp_path, "models.yaml", "n_layers: {value: 80, unit: count}", "n_layers: {value: eighty, unit: count}")
    assert (error.key, error.reason) == ("models.llama-3-70b.n_layers.value", "must be of type number (got str 'eighty')")


def test_a_count_in_scientific_notation_loads_and_a_fraction_does_not(tmp_path):
    catalog = load_catalog(break_config(tmp_path / "a", "models.yaml", "n_layers: {value: 80, unit: count}", "n_layers: {value: 8e1, unit: count}"))
    assert catalog.models["llama-3-70b"].n_layers == 80
    error = spec_error(tmp_path / "b", "models.yaml", "n_layers: {value: 80, unit: count}", "n_layers: {value: 80.5, unit: count}")
    assert (error.key, error.reason) == ("models.llama-3-70b.n_layers.value", "80.5 count is not a whole number of count")


def test_zero_size(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "hbm_capacity: {value: 192, unit: GB, source: nvidia-b200}",
                       "hbm_capacity: {value: 0, unit: GB, source: nvidia-b200}")
    assert (error.key, error.reason) == ("devices.b200.hbm_capacity.value", "must be > 0 (got 0)")


def test_negative_size(tmp_path):
    error = spec_error(tmp_path, "links.yaml", "{value: 64, unit: GB/s", "{value: -64, unit: GB/s")
    assert (error.key, error.reason) == ("links.pcie-gen5-x16.bandwidth.value", "must be > 0 (got -64)")


def test_zero_count(tmp_path):
    error = spec_error(tmp_path, "workloads.yaml", "batch: {value: 32,", "batch: {value: 0,")
    assert (error.key, error.reason) == ("workloads.w2.batch.value", "must be >= 1 (got 0)")


def test_number_that_is_not_finite(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "value: 3.35, unit: TB/s", "value: .inf, unit: TB/s")
    assert (error.key, error.reason) == ("devices.h100-sxm.hbm_bandwidth.value", "must be a finite number (got inf)")


def test_unit_not_understood(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "value: 3.35, unit: TB/s", "value: 3.35, unit: TB/sec")
    assert error.key == "devices.h100-sxm.hbm_bandwidth.unit"
    assert error.reason.startswith("unit 'TB/sec' is not understood (known units: ")


def test_unit_of_the_wrong_dimension(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "value: 3.35, unit: TB/s", "value: 3.35, unit: TB")
    assert (error.key, error.reason) == ("devices.h100-sxm.hbm_bandwidth.unit", "unit 'TB' measures bytes, expected bytes/s")


def test_a_fabric_of_no_devices_or_a_scale_out_link_in_bytes(tmp_path):
    error = spec_error(tmp_path / "domain", "device_assumptions.yaml", "domain: {value: 8, unit: count, source: hgx-8-gpu-cx7}",
                       "domain: {value: 0, unit: count, source: hgx-8-gpu-cx7}")
    assert (error.key, error.reason) == ("device_assumptions.h100-sxm.fabric.domain.value", "must be >= 1 (got 0)")
    error = spec_error(tmp_path / "unit", "device_assumptions.yaml", "{value: 400, unit: Gb/s, source: hgx-8-gpu-cx7}",
                       "{value: 400, unit: GB, source: hgx-8-gpu-cx7}")
    assert (error.key, error.reason) == ("device_assumptions.h100-sxm.fabric.scale_out.bandwidth.unit",
                                         "unit 'GB' measures bytes, expected bytes/s")


def test_count_with_a_unit(tmp_path):
    error = spec_error(tmp_path, "models.yaml", "n_layers: {value: 80, unit: count}", "n_layers: {value: 80, unit: layers}")
    assert (error.key, error.reason) == ("models.llama-3-70b.n_layers.unit", "unit 'layers' is not understood here (expected 'count')")


def test_storage_format_not_understood(tmp_path):
    error = spec_error(tmp_path, "assumptions.yaml", "value: bf16\n    source: sok-setup\n    note: \"Baseline KV",
                       "value: bf17\n    source: sok-setup\n    note: \"Baseline KV")
    assert error.key == "assumptions.kv_dtype.value"
    assert error.reason.startswith("storage format 'bf17' is not understood")


@pytest.mark.parametrize("name", ["../b200", "B200 SXM", "b200/pinned", "a..b"])
def test_name_that_is_not_a_safe_file_name(tmp_path, name):
    error = spec_error(tmp_path, "devices.yaml", "  b200:\n", f"  {name}:\n")
    assert error.key == f"devices.{name}"
    assert error.reason.startswith(f"{name!r} is not a safe name")


def test_reference_to_a_model_that_does_not_exist(tmp_path):
    error = spec_error(tmp_path, "workloads.yaml", "model: llama-3-70b", "model: llama-4-70b")
    assert error.key == "evaluation.model"
    assert error.reason.startswith("model 'llama-4-70b' does not exist in") and "llama-3-70b" in error.reason


def test_reference_to_a_device_that_does_not_exist(tmp_path):
    error = spec_error(tmp_path, "workloads.yaml", "device: b200", "device: b400")
    assert error.key == "evaluation.device"
    assert error.reason.startswith("device 'b400' does not exist in")


def test_workflow_config_naming_a_model_that_does_not_exist(tmp_path):
    error = spec_error(tmp_path, "config.yaml", "models: [llama-3-8b,", "models: [llama-3-9b,")
    assert error.key == "tables.table4.models[0]"
    assert error.reason.startswith("'llama-3-9b' does not exist in")


@pytest.mark.parametrize("old, new, key", [
    ("models: [llama-2-13b, mixtral-8x7b,", "models: [llama-2-13b, llama-2-13b,", "tables.table1.models"),
    ("batches: [1, 8, 32,", "batches: [1, 8, 8,", "tables.table4.batches"),
])
def test_workflow_config_naming_a_row_twice(tmp_path, old, new, key):
    error = spec_error(tmp_path, "config.yaml", old, new)
    assert error.key == key and error.reason.endswith("has non-unique elements")


def test_reference_to_a_source_that_is_not_listed(tmp_path):
    error = spec_error(tmp_path, "links.yaml", "source: nvlink-4}", "source: nvlink-5}")
    assert (error.key, error.reason) == ("links.nvlink-4.bandwidth.source", "source 'nvlink-5' is not listed under 'sources'")


def test_duplicate_key(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "  mi300x:\n", "  b200:\n")
    assert error.key == "devices.b200"
    assert error.reason.startswith("given twice (lines ")


def test_duplicate_field(tmp_path):
    error = spec_error(tmp_path, "links.yaml", "    name: NVLink 4\n", "    name: NVLink 4\n    name: NVLink 5\n")
    assert error.key == "links.nvlink-4.name"


def test_invalid_yaml(tmp_path):
    error = spec_error(tmp_path, "devices.yaml", "hbm_capacity: {value: 192, unit: GB, source: nvidia-b200}",
                       "hbm_capacity: {value: 192, unit: GB, source: nvidia-b200")
    assert error.key.startswith("line ")
    assert error.reason.startswith("not valid YAML: ")


def test_empty_file(tmp_path):
    error = spec_error(tmp_path, "links.yaml", (CONFIG / "links.yaml").read_text(), "")
    assert (error.key, error.reason) == ("", "the file is empty")


def test_missing_file(tmp_path):
    config = break_config(tmp_path, "links.yaml", "links:", "links:")
    (config / "techniques.yaml").unlink()
    with pytest.raises(SpecError) as caught:
        load_everything(config)
    assert (caught.value.file, caught.value.reason) == (str(config / "techniques.yaml"), "file not found")


@pytest.mark.parametrize("file, old, new, key, reason", [
    ("assumptions.yaml", "    source: kvwall\n    note: \"Model FLOP", "    source: {id: kvwall}\n    note: \"Model FLOP",
     "assumptions.prefill_mfu.source", "must be of type string (got dict {'id': 'kvwall'})"),
    ("assumptions.yaml", "    value: 1\n    unit: ratio\n    source: kvwall", "    value: 1\n    unit: [ratio]\n    source: kvwall",
     "assumptions.moe_uniform_routing.unit", "must be of type string (got list ['ratio'])"),
    ("techniques.yaml", "    lossless: \"yes\"\n    source: radixattention\n", "    lossless: \"yes\"\n    source: radix\n",
     "techniques.radixattention-w3.source", "source 'radix' is not listed under 'sources'"),
])
def test_a_field_of_an_entry_is_refused_at_its_key(tmp_path, file, old, new, key, reason):
    error = spec_error(tmp_path, file, old, new)
    assert (error.key, error.reason) == (key, reason)


def test_a_whole_float_where_a_count_is_expected_is_refused(tmp_path):
    from kvwall.measure.config import load_measure_config

    config = break_config(tmp_path, "measure.yaml", "      repeats: 3\n", "      repeats: 3.0\n")
    with pytest.raises(SpecError) as error:
        load_measure_config(config / "measure.yaml", load_catalog(config), "quick")
    assert (error.value.key, error.value.reason) == ("sweeps.quick.cpu.repeats", "must be of type integer (got float 3.0)")


def test_a_system_name_ending_in_a_line_break_is_refused(tmp_path):
    from kvwall.inputs.validation_map import load_validation_map

    config = break_config(tmp_path, "validation.yaml", "  h100_sxm: {device", '  "h100_sxm\\n": {device')
    with pytest.raises(SpecError) as error:
        load_validation_map(config / "validation.yaml", load_catalog(config))
    assert (error.value.key, error.value.reason) == ("systems.'h100_sxm\\n'", "'h100_sxm\\n' is not of the form ^[a-z0-9_]{1,32}\\Z")


def test_bad_reported_value(tmp_path):
    error = spec_error(tmp_path, "reported/literature.yaml", "source: kivi\n", "source: kivi-2\n")
    assert error.key.startswith("values.")


# ---- the workflow: one clean line, nothing written, nothing deleted -----------------------------------------------

PREPOPULATED = "tables/derived/table1_kv_per_token.csv"
CHECKED_STAMPS = ".snakemake/kvwall-checked"


def workflow_copy(folder: Path) -> Path:
    """The Snakefile, workflow/, config/ and one table already built, in a temporary repository."""
    root = folder / "repo"
    root.mkdir()
    shutil.copy2(REPO / "Snakefile", root / "Snakefile")
    shutil.copytree(REPO / "workflow", root / "workflow", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(CONFIG, root / "config")
    shutil.copytree(REPO / "data" / "reported", root / "data" / "reported")
    # The stamps of input files already checked, so that the reported measurements are not validated again.
    if (REPO / CHECKED_STAMPS).is_dir():
        shutil.copytree(REPO / CHECKED_STAMPS, root / CHECKED_STAMPS)
    (root / PREPOPULATED).parent.mkdir(parents=True)
    shutil.copy2(REPO / PREPOPULATED, root / PREPOPULATED)
    return root


def file_hashes(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root``, Snakemake's own run log (.snakemake/) aside."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".snakemake" not in p.relative_to(root).parts
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "file, old, new, message",
    [
        ("devices.yaml", "value: 3.35, unit: TB/s", "value: -3.35, unit: TB/s",
         "config/devices.yaml: devices.h100-sxm.hbm_bandwidth.value: must be > 0 (got -3.35)"),
        ("models.yaml", "    n_layers: {value: 80, unit: count}\n", "    n_layers: {value: 80, unit: count\n",
         "config/models.yaml: line "),
        ("workloads.yaml", "device: b200", "device: b400", "config/workloads.yaml: evaluation.device: device 'b400' does not exist"),
        ("config.yaml", "config_dir: config\n", "config_dir: config\nconfig_dir: config\n",
         "config/config.yaml: config_dir: given twice (lines 3 and 4)"),
        # checked only inside jobs before: tiers.yaml, measure.yaml and the references across files
        ("tiers.yaml", "tier_fraction: {value: 0.025,", "tier_fraction: {value: 2.5,",
         "config/tiers.yaml: scenarios."),
        # overflow after conversion, and a unit of the wrong dimension
        ("devices.yaml", "value: 3.35, unit: TB/s", "value: 1e300, unit: TB/s",
         "config/devices.yaml: devices.h100-sxm.hbm_bandwidth.value: 1e+300 TB/s is out of range"),
        # an empty config_dir, which read the spec files from the folder the workflow runs in
        ("config.yaml", "config_dir: config", 'config_dir: ""', "config/config.yaml: config_dir: empty: name the folder"),
        # a semantic gap: "all" where one model is meant
        ("config.yaml", "table8: {model: llama-3-70b}", "table8: {model: all}",
         "config/config.yaml: tables.table8.model: 'all' does not exist"),
        # hostile files: an alias, a complex key (a YTE template: tests/test_front_door.py)
        ("links.yaml", "  nvlink-4:\n", "  nvlink-4: &n\n", "config/links.yaml: line "),
        ("models.yaml", "models:\n", "? [a, b]\n: 1\nmodels:\n", "config/models.yaml: (top level) (line "),
        # the validation map: a system mapped to a device the catalogue lacks, a KV format not understood
        ("validation.yaml", "b300_sxm: {device: b300,", "b300_sxm: {device: b301,",
         "config/validation.yaml: systems.b300_sxm.device: device 'b301' is not in the catalogue"),
        ("validation.yaml", "kv_format: {value: fp8,", "kv_format: {value: fp9,",
         "config/validation.yaml: kv_format.value: storage format 'fp9' is not understood"),
        # a mapped model without the family it is held out with
        ("validation.yaml", "    glm-5: glm_moe_dsa\n", "",
         "config/validation.yaml: families.models: model 'glm-5' (models.zhipuai/GLM-5) has no family"),
        # a fabric without the link past its domain: the deployment search would leave it
        ("device_assumptions.yaml", "      scale_out: {name: ConnectX-7 400 Gb/s, bandwidth: {value: 400, unit: Gb/s, source: hgx-8-gpu-cx7}}\n", "",
         "config/device_assumptions.yaml: device_assumptions.h100-sxm.fabric.scale_out: missing: "),
    ],
)
def test_workflow_stops_with_one_line_and_writes_nothing(tmp_path, forked_snakemake, file, old, new, message):
    root = workflow_copy(tmp_path)
    path = root / "config" / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    before = file_hashes(root)
    done = forked_snakemake(["--cores", "1", "--directory", root, "--snakefile", root / "Snakefile"], cwd=tmp_path)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"kvwall: bad input: {message}"), done.stderr
    assert done.stdout == "", done.stdout
    assert file_hashes(root) == before


def dry_run_with_cell(tmp_path, run, column: str, value: str) -> tuple[str, list[str], bool]:
    """A refused dry run of a copy whose serving measurements hold ``value`` in ``column`` of their second row: its
    one line of stderr, that row, and whether the copy's files are as they were."""
    root = workflow_copy(tmp_path)
    path = root / "data" / "reported" / "serving-measurements.csv"
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    rows[2][rows[0].index(column)] = value
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    before = file_hashes(root)
    done = run(["-n", "--directory", root, "--snakefile", root / "Snakefile"], cwd=tmp_path)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0], rows[2], file_hashes(root) == before


@pytest.mark.slow
@pytest.mark.parametrize("column, value, message", [
    ("system", "b300 sxm", "line 3 (id minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c128_cfg733): system: 'b300 sxm' is not of the form ^[a-z0-9_]{1,32}\\Z"),
    ("silicon_tpot_ms", "-3", "line 3 (id minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c128_cfg733): silicon_tpot_ms: must be > 0"),
    ("tp_size", "4.5", "line 3 (id minimaxm2_5_b300_vllm_fp8_agg_1024x1024_c128_cfg733): tp_size: must be of type"),
])
def test_a_bad_serving_measurement_stops_a_dry_run(tmp_path, forked_snakemake, column, value, message):
    """The reported serving measurements enter through the front door: a bad cell names the file, line, id, column."""
    line, _, unchanged = dry_run_with_cell(tmp_path, forked_snakemake, column, value)
    assert line.startswith(f"kvwall: bad input: data/reported/serving-measurements.csv: {message}"), line
    assert unchanged


@pytest.mark.slow
def test_a_point_below_its_bound_without_a_diagnosis_stops_a_dry_run(tmp_path, forked_snakemake):
    """What would stop the validation job inside it stops the workflow before any job, naming the map's key."""
    line, row, unchanged = dry_run_with_cell(tmp_path, forked_snakemake, "silicon_tpot_ms", "0.001")  # faster than any bound
    assert line.startswith("kvwall: bad input: config/validation.yaml: below_bound: 1 point(s) measured below "
                           f"their TPOT bound have no diagnosis, first {row[0]} "), line
    assert unchanged


@pytest.mark.slow
def test_a_missing_required_file_stops_the_workflow(tmp_path, forked_snakemake):
    """Deleting config/tiers.yaml used to drop the jobs that read it and exit 0."""
    root = workflow_copy(tmp_path)
    (root / "config" / "tiers.yaml").unlink()
    before = file_hashes(root)
    done = forked_snakemake(["-n", "--forceall", "--directory", root, "--snakefile", root / "Snakefile"], cwd=tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == ["kvwall: bad input: config/tiers.yaml: (top level): file not found"]
    assert file_hashes(root) == before


@pytest.mark.slow
def test_a_checkout_path_with_a_space_is_refused(tmp_path):
    (tmp_path / "with space").mkdir()
    root = workflow_copy(tmp_path / "with space")
    before = file_hashes(root)
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith("kvwall: the checkout path ") and "Traceback" not in done.stderr
    assert file_hashes(root) == before
