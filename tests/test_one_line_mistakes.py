"""A small mistake on the command line is one line with the way out: a misspelt id with the closest ids, an
argument argparse refuses with where the usage is, `kvwall build` arguments Snakemake refuses."""

from pathlib import Path

import pytest

from kvwall.cli.main import main

CONFIG = Path(__file__).resolve().parents[1] / "config"


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("args, start", [
    (["footprint", "--model", "llama-3-7b", "--context", "8k"], "kvwall: unknown model 'llama-3-7b' (did you mean llama-3-70b or llama-3-8b"),
    (["regime", "--model", "llama-3-8b", "--device", "h100-sxn", "--batch", "1", "--context", "8k"],
     "kvwall: unknown device 'h100-sxn' (did you mean h100-sxm"),
])
def test_an_unknown_id_suggests_the_closest(capsys, args, start):
    assert main([*args, "--config", str(CONFIG)]) == 2
    assert one_line(capsys).startswith(start)


@pytest.mark.parametrize("args, line", [
    (["footprint", "--modle", "x"], "kvwall: unrecognized arguments: --modle x (see kvwall --help)"),
    (["regime", "--model", "llama-3-8b", "--device", "b200", "--batch", "x", "--context", "8k"],
     "kvwall regime: argument --batch: 'x' is not a whole number (see kvwall regime --help)"),
    (["import"], "kvwall import: the following arguments are required: PATH (see kvwall import --help)"),
    (["import", "x.json", "--params-nominal", "nan"],
     "kvwall import: argument --params-nominal: 'nan' must be a whole number from 1 to 1e+15 (see kvwall import --help)"),
    (["import", "x.json", "--params-nominal", "8.2"],
     "kvwall import: argument --params-nominal: '8.2' must be a whole number from 1 to 1e+15 (see kvwall import --help)"),
])
def test_an_argument_mistake_is_one_line_with_the_usage_hint(capsys, args, line):
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2 and one_line(capsys) == line


def test_build_cores_that_are_not_a_number_is_one_line(capsys):
    assert main(["build", "--cores", "abc", "-n"]) == 2
    assert one_line(capsys) == "kvwall: build: Error parsing number of cores (--cores, -c): must be integer or 'all'."


def test_build_arguments_snakemake_does_not_know_are_one_line(capsys):
    assert main(["build", "-n", "--cores-typo"]) == 2
    assert one_line(capsys) == "kvwall: build: unrecognized arguments: --cores-typo"
