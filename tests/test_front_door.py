"""The front door: every input the workflow reads is checked before any job, hostile files are refused without
hanging or running code, and a failed job loses no committed artifact.

Each case breaks one thing in a temporary copy of config/ and asserts the SpecError names the file and the key;
the workflow cases run Snakemake on a temporary copy of the repository and check the one line it prints, that no
traceback is shown, and that every committed file is as it was.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kvwall.cli.front_door import check_inputs
from kvwall.cli.main import main
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import read_yaml
from kvwall.inputs.reader import MAX_BYTES, parse_yaml, read_json, refuse_templates
from kvwall.render import markdown_escape

from test_bad_input import CHECKED_STAMPS, file_hashes

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def root(tmp_path, monkeypatch):
    """config/ and data/measured/ in a temporary folder, which is the working directory."""
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def refused(file: str, old: str | None, new: str) -> SpecError:
    """Replace ``old`` in ``file`` by ``new`` (the whole file when ``old`` is None) and run the front door."""
    path = Path(file)
    text = path.read_text(encoding="utf-8")
    if old is None:
        text = new
    else:
        assert old in text, f"{old!r} is not in {file}"
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        check_inputs(read_yaml("config/config.yaml"), "config/config.yaml")
    assert caught.value.file == file, caught.value
    assert "\n" not in str(caught.value)
    return caught.value


def test_the_committed_inputs_pass(root):
    inputs = check_inputs(read_yaml("config/config.yaml"), "config/config.yaml")
    assert inputs.records == ("data/measured/amd-epyc-2c-2026-11-29.json",)


# ---- files the jobs read, checked before them ---------------------------------------------------------------------

@pytest.mark.parametrize("file, old, new, key", [
    ("config/tiers.yaml", "tier_fraction: {value: ", "tier_fraction: {value: 7", "scenarios."),
    ("config/measure.yaml", "model: ", "model: no-such-", "model"),
    ("config/measure.yaml", "fits: [hf-sdpa, vllm-fa2]", "fits: [hf-sdpa, no-such-fit]", "reported.fits"),
    ("config/workloads.yaml", "  w4:", "  w9:", "workloads.w4"),
    ("config/techniques.yaml", "  cachegen:", "  cachegen2:", "techniques.cachegen"),
    ("config/paper/printed.yaml", "llama-2-13b: {kv_bytes_per_token", "llama-2-14b: {kv_bytes_per_token", "groups[0].cells.llama-2-14b"),
    ("config/paper/printed.yaml", "artifact: derived/table3_ridge", "artifact: derived/table3_ridges", "groups[1].artifact"),
])
def test_cross_file_references_are_checked_first(root, file, old, new, key):
    assert refused(file, old, new).key.startswith(key)


def test_every_device_has_the_compute_precision(root):
    path = Path("config/assumptions.yaml")
    path.write_text(path.read_text().replace("compute_precision:\n    value: bf16", "compute_precision:\n    value: fp16"))
    error = refused("config/devices.yaml", "devices:", "devices:")
    assert (error.key, error.reason) == ("devices.h100-sxm.dense_flops",
                                         "no 'fp16' rate, the compute_precision of config/assumptions.yaml")


@pytest.mark.parametrize("file", ["config/tiers.yaml", "config/measure.yaml", "config/paper/printed.yaml"])
def test_a_missing_required_file_is_an_error(root, file):
    os.remove(file)
    with pytest.raises(SpecError) as caught:
        check_inputs(read_yaml("config/config.yaml"), "config/config.yaml")
    assert (caught.value.file, caught.value.reason) == (file, "file not found")


def test_a_bad_measured_record_is_refused(root):
    path = "data/measured/amd-epyc-2c-2026-11-29.json"
    Path(path).write_text(Path(path).read_text().replace('"date": ', '"date": 1, "x": ', 1))
    with pytest.raises(SpecError) as caught:
        check_inputs(read_yaml("config/config.yaml"), "config/config.yaml")
    assert caught.value.file == path


# ---- values checked after conversion to base units -----------------------------------------------------------------

@pytest.mark.parametrize("file, old, new, key, reason", [
    ("config/devices.yaml", "value: 3.35, unit: TB/s", "value: 1e300, unit: TB/s", "devices.h100-sxm.hbm_bandwidth.value",
     "1e+300 TB/s is out of range (at most 1e+18 bytes/s)"),
    ("config/models.yaml", "n_layers: {value: 80, unit: count}", "n_layers: {value: 1e300, unit: count}",
     "models.llama-3-70b.n_layers.value", "1e+300 count is out of range (at most 1e+15 count)"),
    ("config/workloads.yaml", "context: {value: 128000,", "context: {value: 0.5,", "workloads.w1.context.value",
     "0.5 tokens is not a whole number of tokens"),
    ("config/assumptions.yaml", "  attention_flops_at_full_context:\n    value: 1\n    unit: ratio",
     "  attention_flops_at_full_context:\n    value: 1\n    unit: GB", "assumptions.attention_flops_at_full_context.unit", "unit 'GB' measures bytes, expected ratio"),
    ("config/techniques.yaml", "kv_bits: {value: 2, unit: bit}", "kv_bits: {value: 2, unit: GB}", ".kv_bits.unit",
     "unit 'GB' is not understood here (expected 'bit')"),
    ("config/reported/kv_slopes.yaml", "fit.hf-sdpa.slope: {value: 16.34, unit: ms/GiB", "fit.hf-sdpa.slope: {value: 16.34, unit: GB/s",
     "values.fit.hf-sdpa.slope.unit", "unit 'GB/s' does not measure s/byte"),
])
def test_values_are_checked_in_base_units(root, file, old, new, key, reason):
    error = refused(file, old, new)
    assert key in error.key and error.reason == reason, error


def test_dense_layers_cannot_exceed_the_layers(root):
    error = refused("config/models.yaml", "dense_layers: {value: 1,", "dense_layers: {value: 1000,")
    assert error.key.endswith(".moe.dense_layers") and "exceeds n_layers" in error.reason


@pytest.mark.parametrize("old, new, key", [
    ("table8: {model: llama-3-70b}", "table8: {model: all}", "tables.table8.model"),
    ("config_dir: config\n", "config_dir: config\nconfig_dri: config\n", ""),
    ("  table8: {model: llama-3-70b}", "  table8: {model: llama-3-70b, modle: x}", "tables.table8"),
])
def test_workflow_config_names_one_model_and_no_unknown_keys(root, old, new, key):
    assert refused("config/config.yaml", old, new).key == key


def test_an_id_ending_in_a_newline_is_not_a_safe_name(root):
    error = refused("config/links.yaml", "  nvlink-4:\n", '  "nvlink-4\\n":\n')
    assert error.key == "links.'nvlink-4\\n'" and "is not a safe name" in error.reason


# ---- the hardened reader ------------------------------------------------------------------------------------------

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9))


@pytest.mark.parametrize("text, key, reason", [
    (ALIAS_BOMB, "line 1", "anchors and aliases (&name, *name) are not accepted in input files"),
    ("a: 1\n? [b, c]\n: 2\n", "(top level) (line 2)", "a key must be a plain name, not a list or mapping"),
    ("a: " + "[" * 40 + "]" * 40 + "\n", "line 1", "nested deeper than 32 levels"),
])
def test_hostile_yaml_is_refused_with_the_line(tmp_path, text, key, reason):
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        read_yaml(path)
    assert (caught.value.file, caught.value.key, caught.value.reason) == (str(path), key, reason)


class PythonSpecLoader(yaml.SafeLoader):
    """PyYAML's own loader in Python, reading 70e9 as a number as kvwall's reader does."""


PythonSpecLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                                       list("-+0123456789"))


@pytest.mark.parametrize("path", sorted(p.relative_to(REPO) for p in (REPO / "config").rglob("*.yaml")), ids=str)
def test_the_reader_reads_every_config_file_as_pyyaml_does(path):
    """kvwall's reader parses on libyaml's events and composes them itself: the same documents as PyYAML in Python."""
    text = (REPO / path).read_text(encoding="utf-8")
    assert parse_yaml(text, path) == yaml.load(text, Loader=PythonSpecLoader)


def test_twenty_thousand_nested_brackets_are_refused_without_recursing(tmp_path):
    """libyaml's scanner stops at 1,000 levels of flow nesting, before the composer counts them."""
    path = tmp_path / "hostile.yaml"
    path.write_text("a: " + "[" * 20000 + "]" * 20000 + "\n")
    with pytest.raises(SpecError) as caught:
        read_yaml(path)
    assert caught.value.key.startswith("line 1") and "nest" in caught.value.reason


def test_oversized_and_special_files_are_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * MAX_BYTES)
    with pytest.raises(SpecError, match="larger than 4 MiB"):
        read_yaml(big)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        read_yaml(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        read_yaml("/dev/zero")


def test_json_without_nan_or_infinity(tmp_path):
    path = tmp_path / "record.json"
    path.write_text('{"a": NaN}')
    with pytest.raises(SpecError, match="NaN is not a JSON number"):
        read_json(path)


@pytest.mark.parametrize("document, key", [
    ({"__use_yte__": True, "config_dir": "config"}, "__use_yte__"),
    ({"config_dir": "?__import__('os').system('true')"}, "config_dir"),
    ({"tables": {"?if True": {"a": 1}}}, "tables.?if True"),
])
def test_yte_templates_are_refused(document, key):
    with pytest.raises(SpecError) as caught:
        refuse_templates(document, "config/config.yaml")
    assert caught.value.key == key


# ---- names and text that cannot break a table ---------------------------------------------------------------------

def test_markdown_cells_escape_html_and_line_breaks():
    assert markdown_escape("a|b\nc <script>x</script> &amp; <0.1, w_q < w") == (
        "a\\|b c &lt;script>x&lt;/script> &amp;amp; <0.1, w_q < w")


# ---- the workflow: refused before Snakemake evaluates or writes anything -------------------------------------------

def repository_copy(folder: Path) -> Path:
    """The checkout without its history, environment and build state, but for the stamps of input files already
    checked (their unchanged bytes are not validated again; an edited file is)."""
    root = folder / "repo"
    shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".git", ".venv", ".snakemake", "__pycache__", "logs", "*.egg-info"))
    if (REPO / CHECKED_STAMPS).is_dir():
        shutil.copytree(REPO / CHECKED_STAMPS, root / CHECKED_STAMPS)
    return root


def snakemake(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--workflow-profile", "none", "--cores", "1", *args], cwd=root,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_yte_config_runs_no_code(tmp_path):
    root = repository_copy(tmp_path)
    marker = tmp_path / "ran"
    config = root / "config/config.yaml"
    config.write_text("__use_yte__: true\n" + config.read_text().replace(
        "config_dir: config", f"config_dir: ?__import__('pathlib').Path({str(marker)!r}).touch() or 'config'"))
    done = snakemake(root, "-n")
    assert done.returncode != 0 and not marker.exists()
    assert done.stderr.strip().splitlines() == ["kvwall: bad input: config/config.yaml: __use_yte__: a template key: "
                                                "config files hold plain values, never expressions"]


def kvwall_build(root: Path, *args: str) -> subprocess.CompletedProcess:
    script = shutil.which("kvwall", path=str(Path(sys.executable).parent))
    return subprocess.run([script, "build", "--workflow-profile", "none", "--cores", "1", *args], cwd=root,
                          capture_output=True, text=True, timeout=600)


def test_kvwall_build_refuses_a_yte_configfile_before_snakemake_reads_it(root, capsys):
    """Plain Snakemake would run this file's expression while parsing --configfile, before any workflow code."""
    marker = root / "ran"
    (root / "mine.yaml").write_text(f"__use_yte__: true\nconfig_dir: ?__import__('pathlib').Path({str(marker)!r}).touch()\n")
    assert main(["build", "-n", "--workflow-profile", "none", "--cores", "1", "--configfile", "mine.yaml"]) == 2
    assert not marker.exists()
    assert capsys.readouterr().err.strip().splitlines() == [
        "kvwall: bad input: mine.yaml: __use_yte__: a template key: config files hold plain values, never expressions"]
    (root / "mine.yaml").write_text("base: &b {config_dir: config}\nagain: *b\n")
    status = main(["build", "-n", "--workflow-profile", "none", "--cores", "1", "--configfile", "config/config.yaml",
                   "mine.yaml"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert err.startswith("kvwall: bad input: mine.yaml: ") and "alias" in err


@pytest.mark.parametrize("text, line", [
    ("__use_yte__: true\ncores: ?__import__('pathlib').Path({marker!r}).touch() or 1\n",
     "{profile}: __use_yte__: a template key: config files hold plain values, never expressions"),
    ("cores: 1\ncores: 2\n", "{profile}: cores: given twice (lines 1 and 2)"),
    ("cores: [\n", "{profile}: line 2, column 1: not valid YAML: did not find expected node content"),
])
def test_kvwall_build_checks_a_profile_before_snakemake_reads_it(tmp_path, capsys, text, line):
    """Snakemake reads a profile's own file with YTE while it parses its arguments, before any workflow code."""
    marker, profile = tmp_path / "ran", tmp_path / "profile" / "config.yaml"
    profile.parent.mkdir()
    profile.write_text(text.format(marker=str(marker)))
    assert main(["build", "-n", "--workflow-profile", "none", "--profile", str(profile.parent)]) == 2
    assert not marker.exists()
    assert capsys.readouterr().err.strip().splitlines()[-1] == "kvwall: bad input: " + line.format(profile=profile)


@pytest.mark.slow
def test_kvwall_build_runs_snakemake_on_a_plain_configfile(tmp_path, monkeypatch, capsys):
    root = repository_copy(tmp_path)
    done = kvwall_build(root, "-n", "--forceall", "tables/derived/table1_kv_per_token.csv", "--configfile", "config/config.yaml")
    assert done.returncode == 0, done.stderr
    assert "table1_kv_per_token.csv" in done.stdout + done.stderr
    # --configfile takes every path after it: a target there is read as a config file, and refused as one (in this
    # process: the refusal comes before Snakemake runs)
    monkeypatch.chdir(root)
    assert main(["build", "--workflow-profile", "none", "--cores", "1", "-n", "--configfile", "config/config.yaml",
                 "tables/derived/table1_kv_per_token.csv"]) == 2
    assert capsys.readouterr().err.strip() == ("kvwall: bad input: tables/derived/table1_kv_per_token.csv: (top level): "
                                               "a config file holds keys and their values, not a single value or a list")
    assert main(["build", "--workflow-profile", "none", "--cores", "1", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: kvwall build [SNAKEMAKE ARGUMENTS]")


@pytest.mark.slow
def test_a_failed_job_changes_no_committed_artifact(tmp_path):
    """A forced job-level failure (a table builder that raises) in a real build: the artifacts it would replace (its
    family's two tables, three files each), and every other committed file, stay as they were; the console names the
    restore in one line. The next build runs the failed job again (the artifacts put back are not taken as built
    from the inputs it failed on), and once the cause is gone it builds them."""
    root = repository_copy(tmp_path)
    module = root / "src/kvwall/tables/accounting.py"
    source = module.read_text()
    module.write_text(source + "\n\ndef accounting(catalog, selections):\n    raise RuntimeError('forced')\n")
    (root / "config/config.yaml").touch()
    before = {k: v for k, v in file_hashes(root).items() if k.startswith(("tables/", "figures/", "CANONICAL"))}

    def build():
        return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "tables/derived/table8_accounting.csv"],
                              cwd=root, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(root / "src")})

    for _ in range(2):
        done = build()
        assert done.returncode != 0
        assert "kvwall: a job failed; 6 artifact(s) it would have replaced are kept as they were" in done.stderr
        after = {k: v for k, v in file_hashes(root).items() if k.startswith(("tables/", "figures/", "CANONICAL"))}
        assert after == before
    module.write_text(source)
    done = build()
    assert done.returncode == 0, done.stderr
    assert "tables_accounting" in done.stdout + done.stderr
    assert {k: v for k, v in file_hashes(root).items() if k.startswith(("tables/", "figures/", "CANONICAL"))} == before


# ---- the command line: contexts and batches checked as the files are -----------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["footprint", "--model", "llama-3-70b", "--context", "inf"], "kvwall: --context 'inf': must be a whole number of tokens, at most 1e+12"),
    (["footprint", "--model", "llama-3-70b", "--context", "1e400"], "kvwall: --context '1e400': must be a whole number of tokens, at most 1e+12"),
    (["footprint", "--model", "llama-3-70b", "--context", "0.5"], "kvwall: --context '0.5': must be a whole number of tokens, at most 1e+12"),
    (["crossover", "--model", "llama-3-70b", "--device", "b200", "--batch", "9" * 400], "must be at most 1e+15"),
])
def test_command_line_numbers_are_bounded(capsys, argv, message):
    with pytest.raises(SystemExit) if argv[0] == "crossover" else contextlib.nullcontext():  # argparse exits
        status = main([*argv, "--config", str(REPO / "config")])
        assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "Traceback" not in "\n".join(err)


def test_json_answers_are_strict_json(capsys):
    assert main(["regime", "--model", "llama-3-70b", "--device", "b200", "--batch", "32", "--context", "128k", "--json",
                 "--config", str(REPO / "config")]) == 0
    json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))


@pytest.mark.slow
def test_a_killed_build_recovers_on_a_plain_rerun(tmp_path):
    """A second build while one runs says so in one line; after a kill, a plain rerun removes the stale lock in one
    line, reruns the interrupted job and leaves every committed artifact as it was."""
    root = repository_copy(tmp_path)
    module = root / "src/kvwall/tables/accounting.py"
    original = module.read_text()
    module.write_text(original + "\nimport time\n\ntime.sleep(600)\n")  # the job hangs when it imports its builder
    before = {k: v for k, v in file_hashes(root).items() if k.startswith(("tables/", "figures/", "CANONICAL"))}
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    target = ["tables/derived/table8_accounting.csv"]
    build = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", *target], cwd=root, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (root / "logs/tables/accounting.log").exists() and not list((root / ".snakemake").glob("incomplete/*")):
            assert time.monotonic() < deadline and build.poll() is None, "the build did not start its job"
            time.sleep(0.2)
        second = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *target], cwd=root, env=env,
                                capture_output=True, text=True, timeout=300)
        assert second.returncode != 0
        assert second.stderr.strip().splitlines()[-1] == (
            "kvwall: another build holds this directory (.snakemake/kvwall-build.lock); wait for it to finish")
    finally:
        os.killpg(build.pid, signal.SIGKILL)
        build.wait()
    module.write_text(original)
    rerun = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *target], cwd=root, env=env,
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "kvwall: removed the lock of a build that was killed (.snakemake/locks)" in rerun.stderr.splitlines()
    after = {k: v for k, v in file_hashes(root).items() if k.startswith(("tables/", "figures/", "CANONICAL"))}
    assert after == before


def test_a_copy_buffer_larger_than_memory_can_hold_is_refused(tmp_path):
    from kvwall.inputs.errors import SpecError
    from kvwall.inputs.loader import load_catalog
    from kvwall.measure.config import load_measure_config

    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config)
    path = config / "measure.yaml"
    text = path.read_text(encoding="utf-8")
    assert "copy_buffer: {value: 512, unit: MiB" in text
    path.write_text(text.replace("copy_buffer: {value: 512, unit: MiB", "copy_buffer: {value: 1, unit: TB", 1), encoding="utf-8")
    with pytest.raises(SpecError) as error:
        load_measure_config(path, load_catalog(config))
    assert error.value.key.endswith("copy_buffer.value") and "16 GiB" in error.value.reason


def test_a_measured_record_is_read_by_the_hardened_reader(tmp_path):
    from kvwall.inputs.errors import SpecError
    from kvwall.measure.record import read_record

    fifo = tmp_path / "record.json"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="not a regular file"):
        read_record(fifo)


@pytest.mark.parametrize("file, old, new, key", [
    ("config/measure.yaml", "repeats: 5", "repeats: 1000000000000000000000000000000", "sweeps.full.cpu.repeats"),
    ("config/device_assumptions.yaml", "domain: {value: 8,", "domain: {value: 1e12,", ".fabric.domain.value"),
    ("data/measured/amd-epyc-2c-2026-11-29.json", '"copy_times_s": [\n', '"copy_times_s": [\n1e300,\n', ".copy_times_s[0]"),
])
def test_a_value_past_any_real_one_is_refused_at_its_key(root, file, old, new, key):
    """Repeats that would never end, a scale-up domain of a trillion devices, a timing of 1e300 s: each is one line at
    its key, before any job."""
    error = refused(file, old, new)
    assert error.key.endswith(key) and "greater than the maximum" in error.reason, error


def test_an_engine_with_too_few_points_for_a_fit_is_named_in_one_warning_line(catalog, tmp_path, capsys):
    import pandas as pd

    from kvwall.cli.front_door import check_below_bound

    # the committed measurements with SGLang's first 12 rows only: the build goes on, naming the engine once
    measured = pd.read_csv(REPO / "data/reported/serving-measurements.csv", dtype=str, keep_default_na=False)
    thin = pd.concat([measured[measured["backend"] != "sglang"], measured[measured["backend"] == "sglang"].head(12)])
    path = tmp_path / "serving-measurements.csv"
    thin.to_csv(path, index=False)
    check_below_bound(catalog, path, REPO / "config/validation.yaml")
    assert capsys.readouterr().err.splitlines() == [
        f"kvwall: warning: {path}: sglang: 12 understood measured points, fewer than the 20 a fit needs: no constants, "
        "its points priced at datasheet rates alone"]
    # the committed measurements fit every engine: no warning
    check_below_bound(catalog, REPO / "data/reported/serving-measurements.csv", REPO / "config/validation.yaml")
    assert capsys.readouterr().err == ""
