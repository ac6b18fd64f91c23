"""Every subcommand explains itself and ends its help naming its documentation page; the shipped --specs example and
`kvwall template` load as written."""

import argparse

import pytest

from kvwall.cli.documentation import PAGES
from kvwall.cli.main import build_parser, main
from kvwall.cli.template import template
from kvwall.inputs.loader import load_catalog, load_user_specs


def _subcommands():
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices)


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_description_and_help_for_every_option(name):
    parser = _subcommands()[name]
    assert parser.description and len(parser.description) > 60
    assert [a.dest for a in parser._actions if not a.help] == []


#: The page each command's help names: the README (the documentation's home page), then docs/, one page per user and
#: per reference topic.
DOCUMENTED = {
    "kvwall": "README.md", "kvwall footprint": "docs/serving.md", "kvwall crossover": "docs/serving.md",
    "kvwall regime": "docs/serving.md", "kvwall fit": "docs/serving.md", "kvwall list": "docs/serving.md",
    "kvwall import": "docs/importing.md", "kvwall plan": "docs/planning.md", "kvwall validate": "docs/validation.md",
    "kvwall measure": "docs/measure.md", "kvwall template": "docs/contributors.md", "kvwall diff": "docs/contributors.md",
    "kvwall build": "docs/contributors.md", "kvwall benchmark": "docs/benchmark.md",
}


def _last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_help_ends_naming_its_documentation_page(name, root):
    page = DOCUMENTED[f"kvwall {name}"]
    assert _last_line(_subcommands()[name].format_help()) == f"Documentation: {page}"
    assert PAGES[f"kvwall {name}"] == page
    if (root / "docs").is_dir():  # the pages are written beside the command; once there, each named page exists
        assert (root / page).is_file(), page


def test_kvwall_help_and_build_help_name_their_pages(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0 and _last_line(capsys.readouterr().out) == "Documentation: README.md"
    assert main(["build", "--help"]) == 0  # printed by kvwall itself: every other argument is Snakemake's
    out = capsys.readouterr().out
    assert out.startswith("usage: kvwall build [SNAKEMAKE ARGUMENTS]\n")
    assert out.endswith("With no argument but --cores N, a build that finds no file changed since the last such build "
                        "succeeded says so and\nreturns without starting Snakemake.\n\nDocumentation: docs/contributors.md\n")


def test_every_page_named_is_a_page_of_a_command(root):
    assert dict(PAGES) == DOCUMENTED
    assert set(PAGES) == {"kvwall", *(f"kvwall {name}" for name in _subcommands())}
    assert (root / PAGES["kvwall"]).is_file()


def test_shipped_example_is_the_template(root):
    assert (root / "examples/my-hardware.yaml").read_text(encoding="utf-8") == template(["device", "model"])


@pytest.mark.parametrize("kinds", [["device"], ["model"], ["model", "device"]])
def test_template_loads_as_a_specs_file(root, tmp_path, kinds):
    path = tmp_path / "mine.yaml"
    path.write_text(template(kinds), encoding="utf-8")
    catalog = load_user_specs(path, load_catalog(root / "config"))
    assert ("my-accelerator" in catalog.devices) == ("device" in kinds)
    assert ("my-model" in catalog.models) == ("model" in kinds)


def test_readme_specs_example(root, monkeypatch, capsys):
    monkeypatch.chdir(root)
    assert main(["regime", "--specs", "examples/my-hardware.yaml", "--model", "llama-3-70b", "--device",
                 "my-accelerator", "--batch", "8", "--context", "1M", "--json"]) == 0
    assert '"device": "my-accelerator"' in capsys.readouterr().out


def test_the_example_model_matches_its_own_parameter_count(root, monkeypatch, capsys):
    # 40 layers of a 5120-wide GQA block (40 q, 8 KV heads of 128) and a 13824-wide gated FFN, a 152064-token
    # vocabulary with an untied head: 12.57e9 parameters, the nominal count, so no plausibility warning
    monkeypatch.chdir(root)
    assert main(["regime", "--specs", "examples/my-hardware.yaml", "--model", "my-model", "--device",
                 "my-accelerator", "--batch", "8", "--context", "1M"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_benchmark_adds_the_template_device_and_model(root, tmp_path):
    from kvwall.cli.benchmark import add_device_and_model

    (tmp_path / "config").mkdir()
    for name in ("devices.yaml", "models.yaml", "links.yaml", "assumptions.yaml", "workloads.yaml", "techniques.yaml"):
        (tmp_path / "config" / name).write_text((root / "config" / name).read_text(encoding="utf-8"), encoding="utf-8")
    add_device_and_model(tmp_path)
    catalog = load_catalog(tmp_path / "config")
    assert catalog.devices["my-accelerator"].hbm_capacity == 144e9  # 144 GB, decimal
    assert catalog.models["my-model"].n_kv_heads == 8
