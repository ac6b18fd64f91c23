"""The README and the documentation site: short where a newcomer starts, every link and anchor resolving, and every
artifact reachable from the pages (docs/, built with MkDocs from the same Markdown)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from docs_pages import PAGES, ROOT, page, words
from kvwall.cli import house
from kvwall.cli.house import README_LINES


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_readme_is_short():
    assert len(page("README.md").splitlines()) <= README_LINES


def test_the_benchmark_reads_the_house_as_the_tests_do(monkeypatch):
    monkeypatch.setattr(house, "docs_build_strict", lambda repo: True)  # built strict by test_the_site_builds_strict
    found = house.house_of(ROOT)
    assert found == house.House(len(page("README.md").splitlines()), True, 0)


def test_the_readme_gives_the_two_quick_start_commands_ci_runs():
    readme, ci = page("README.md"), page(".ci/run")
    build, test = re.findall(r"^python3 -m pip install (uv==[\d.]+) && (uv run --frozen [^#\n]+?)\s+#", readme, re.M)
    assert build[1] == "uv run --frozen snakemake --cores 4" and test[1] == "uv run --frozen pytest"
    assert f'UV_VERSION={build[0].split("==")[1]}' in ci and ci.rstrip().endswith(test[1])


def test_every_page_of_docs_is_in_the_navigation():
    config = yaml.safe_load(page("mkdocs.yml"))
    served = {"index.md", "CANONICAL-NUMBERS.md"}
    assert sorted(set(_nav_pages(config["nav"])) - served) == sorted(Path(name).name for name in PAGES[1:])


def test_every_page_the_readme_links_exists():
    linked = re.findall(r"\]\((docs/[^)#]+)", page("README.md"))
    assert linked and all((ROOT / target).is_file() for target in linked)
    assert {Path(name).name for name in PAGES[1:]} <= {Path(target).name for target in linked}


def test_the_readmes_audit_example_is_a_row_of_the_audit():
    example = page("README.md").split("## A reviewer", 1)[1].split("```\n", 2)[1]
    header, row = example.splitlines()[:2]
    audit = page("tables/audit/reproduction.md").splitlines()
    assert header in audit and row in audit and "| match |" in row


def test_the_readmes_errors_and_shares_are_the_built_tables():
    error = pd.read_csv(ROOT / "tables/derived/serving_estimate_error.csv").set_index(["scheme", "quantity", "backend", "mode"])
    summary = pd.read_csv(ROOT / "tables/derived/plan_ranking_summary.csv").set_index(["estimate", "limit"])

    def median(scheme, quantity):
        return error.loc[(scheme, quantity, "all", "agg"), "median_error"]

    def top1(estimate):
        return summary.loc[(estimate, "median"), "top1_agreement"]

    new, measured = "leave one model out, with offsets", "grouped 5-fold, with offsets"
    assert (f"the estimate's TPOT median error is {median(new, 'TPOT'):.1%} leaving one model out (TTFT "
            f"{median(new, 'TTFT'):.0%}), and {median(measured, 'TPOT'):.1%} for a model measured at other lengths (TTFT "
            f"{median(measured, 'TTFT'):.0%})") in words("README.md")
    assert (f"the plan's first layout is the measured one in {top1('calibrated with offsets, leave one model out'):.1%} "
            f"and {top1('calibrated with offsets, held out'):.1%} of the measured groups, where a second measurement of "
            f"the same points agrees in {top1('a second measurement'):.1%}") in words("README.md")


def test_the_validation_pages_transfer_numbers_are_the_built_tables():
    transfer = pd.read_csv(ROOT / "tables/derived/serving_transfer.csv").set_index("terms")["median_error"]
    estimate, latent_own = transfer["the estimate's costs"], transfer["latent attention's efficiency"]
    models = pd.read_csv(ROOT / "tables/derived/serving_transfer_models.csv").set_index("model")
    latent = models[models["cache"].eq("latent")]["measured_over_estimate"]
    others = latent.drop("deepseek-r1")
    prose = words("docs/validation.md")
    assert (f"with them the median error is {estimate:.1%}, without all four "
            f"{transfer['without the costs per layer, per sequence, weight format and GEMM width']:.1%}, and without "
            f"one of them {transfer['without the cost per layer']:.1%}, {transfer['without the cost per sequence']:.1%}, "
            f"{transfer[chr(119) + 'ithout the weight formats' + chr(39) + ' costs']:.1%} or "
            f"{transfer['without the cost of narrow GEMMs']:.1%}") in prose
    constants = pd.read_csv(ROOT / "tables/derived/serving_engine_constants.csv").set_index(["backend", "constant"])
    half = constants.xs("half_rate_columns", level="constant")["value"]
    assert (f"vLLM's fit halving it at {half['vllm']:.0f} columns, SGLang's at {half['sglang']:.0f}, TensorRT-LLM's "
            f"at {half['trtllm']:.0f})") in prose
    assert f"Latent attention's own efficiency makes it worse ({latent_own:.1%})" in prose
    parallelism = transfer["attention's parallelism"]
    assert f"makes it worse too ({parallelism:.1%})" in prose
    assert (f"the latent models run {others.min():.2f}-{others.max():.2f}x slower than the constants price them except "
            f"DeepSeek-R1 ({latent['deepseek-r1']:.2f}x)") in prose
    moe = transfer["MoE weights' efficiency"]
    assert f"MoE weights' own efficiency makes it worse as well ({moe:.1%})" in prose
    assert min(latent_own, parallelism, moe) > estimate
    claims = pd.read_csv(ROOT / "tables/derived/serving_format_claim_costs.csv")
    pooled = claims[(claims["backend"] == "all") & (claims["weight_format_wide"] == "all")
                    & (claims["regime_wide"] == "weight-bound")].iloc[0]
    assert (f"over the {pooled['pairs']} weight-bound format pairs narrower weights bought a median "
            f"{pooled['median_measured_speedup']:.2f}x, and the estimate held out predicts "
            f"{pooled['median_held_out_speedup']:.2f}x") in prose


def test_every_table_is_linked_with_its_caption():
    captions = yaml.safe_load(page("workflow/report/tables.yaml"))
    listed = dict(re.findall(r"^- \[\w+\]\(\.\./tables/(\w+/\w+)\.(?:md|csv)\)(.*)$", page("docs/artifacts.md"), re.M))
    built = {path.relative_to(ROOT / "tables").with_suffix("").as_posix() for path in (ROOT / "tables").glob("*/*.md")}
    assert set(listed) == built
    for table, caption in listed.items():
        assert caption == ": " + " ".join(captions[table]["caption"].split()), table


def test_every_figure_is_shown_on_a_page():
    shown = {name for name in PAGES for name in re.findall(r"\]\(\.\./figures/(\w+\.png)\)", page(name))}
    assert shown == {path.name for path in (ROOT / "figures").glob("*.png")}


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    """`mkdocs build --strict`: a link, an anchor or a page that does not resolve, or a page left out of the
    navigation, fails the build."""
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, env=environment, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr
    site = tmp_path / "site"
    assert 'href="planning/"' in (site / "index.html").read_text(encoding="utf-8")  # the README is the home page
    assert 'src="fig1_kv_footprint.png"' in (site / "figures" / "index.html").read_text(encoding="utf-8")
    assert (site / "figures" / "fig1_kv_footprint.png").read_bytes() == (ROOT / "figures" / "fig1_kv_footprint.png").read_bytes()
