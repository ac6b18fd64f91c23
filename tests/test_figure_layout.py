"""Every figure's labels: no text or legend overlaps another, crosses a line, an edge or a hatching, straddles an axes
border or leaves the figure; every legend entry stands for something drawn, no two entries look alike (CIEDE2000),
no text shows raw TeX; on today's catalogue and on one grown by a device and a model. Colours are keyed to ids, so
growing the catalogue changes no existing entry's colour; every figure prints its evidence class."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from matplotlib.figure import Figure

from kvwall.canonical.document import numbers_by_id
from kvwall.figures import FIGURES, draw
from kvwall.figures.inputs import FigureInputs
from kvwall.figures import legibility
from kvwall.figures.colour_difference import ciede2000, colour_difference
from kvwall.figures.layout import collisions, place
from kvwall.figures.measured_kv_slope import kv_slope_figure
from kvwall.figures.style import ID_STYLES, id_color, id_marker, settle
from kvwall.figures.tier import four_constraints, timeline
from kvwall.inputs.loader import load_catalog
from kvwall.inputs.reported import load_reported
from kvwall.measure.config import load_measure_config
from kvwall.measure.record import read_records
from kvwall.model.decode_costs import COSTS
from kvwall.tier.inputs import load_tiers

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

#: A device and a model with published numbers that the catalogue does not hold (NVIDIA H20 datasheet: 96 GB HBM3,
#: 4.0 TB/s, 148 TFLOP/s dense BF16, 296 dense FP8; Mistral-Large-2407 config.json).
H20 = {
    "name": "H20",
    "hbm_capacity": {"value": 96, "unit": "GB", "source": "test-nvidia-h20"},
    "hbm_bandwidth": {"value": 4.0, "unit": "TB/s", "source": "test-nvidia-h20"},
    "package": {"description": "Monolithic", "partitions": {"value": 1, "unit": "count", "source": "test-nvidia-h20"}},
    "dense_flops": {"bf16": {"value": 148, "unit": "TFLOP/s", "source": "test-nvidia-h20"},
                    "fp8": {"value": 296, "unit": "TFLOP/s", "source": "test-nvidia-h20"}},
}
MISTRAL_LARGE = {
    "name": "Mistral-Large-2407",
    "source": "test-mistral-large-2407",
    "attention": {"kind": "full"},
    **{key: {"value": value, "unit": "count"} for key, value in (
        ("n_layers", 88), ("n_q_heads", 96), ("n_kv_heads", 8), ("head_dim", 128), ("hidden_size", 12288),
        ("intermediate_size", 28672), ("vocab_size", 32768), ("params_nominal", 122.6e9))},
}


def grown_config(directory: Path) -> Path:
    """A copy of config/ with H20 and Mistral-Large-2407 appended to the catalogue and to the paper's selections, under
    ids no catalogue entry has (test-h20, test-mistral-large-2407), so that a contributor who adds the H20 to config/ breaks nothing here."""
    shutil.copytree(ROOT / "config", directory)
    for file, section, key, entry, source in (
        ("devices.yaml", "devices", "test-h20", H20, "NVIDIA H20 datasheet"),
        ("models.yaml", "models", "test-mistral-large-2407", MISTRAL_LARGE,
         "https://huggingface.co/mistralai/Mistral-Large-Instruct-2407/blob/main/config.json"),
    ):
        path = directory / file
        specs = yaml.safe_load(path.read_text())
        specs["sources"][entry.get("source", "test-nvidia-h20")] = source
        specs[section][key] = entry
        path.write_text(yaml.safe_dump(specs, sort_keys=False, allow_unicode=True))
    workflow = yaml.safe_load((directory / "config.yaml").read_text())
    for table, kind, added in (("table1", "models", "test-mistral-large-2407"), ("table3", "devices", "test-h20"),
                               ("capacity", "models", "test-mistral-large-2407"), ("capacity", "devices", "test-h20")):
        workflow["tables"][table][kind].append(added)
    (directory / "config.yaml").write_text(yaml.safe_dump(workflow, sort_keys=False))
    return directory


def figure_inputs(config_dir: Path) -> FigureInputs:
    config = yaml.safe_load((config_dir / "config.yaml").read_text())
    config["config_dir"] = str(config_dir)
    return FigureInputs.load(config)


@pytest.fixture(scope="module")
def today():
    return figure_inputs(ROOT / "config")


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    inputs = figure_inputs(grown_config(tmp_path_factory.mktemp("grown") / "config"))
    assert "test-h20" in inputs.selections["table3_devices"] and "test-mistral-large-2407" in inputs.selections["table1_models"]
    return inputs


def other_figures() -> dict[str, Figure]:
    """Figure 3.1, the tier timeline and the measured figure, as the workflow draws them."""
    catalog = load_catalog(ROOT / "config")
    tiers = load_tiers(ROOT / "config" / "tiers.yaml", catalog)
    numbers = numbers_by_id(json.loads((ROOT / "canonical-numbers.json").read_text(encoding="utf-8")))
    settings = load_measure_config(ROOT / "config" / "measure.yaml", catalog)
    records = read_records(sorted((ROOT / "data" / "measured").glob("*.json")))
    return {
        "fig3_1_four_constraints": four_constraints.draw(numbers, tiers),
        "tier_sustainability_vs_hiding": timeline.draw(tiers),
        "measured_kv_slope": kv_slope_figure(records, load_reported(catalog.files["reported"]), settings.reported_platform,
                                             settings.reported_fits),
    }


@pytest.fixture(scope="module")
def drawn_today(today):
    return {name: draw(name, today) for name in FIGURES} | other_figures()


@pytest.mark.parametrize("name", [*FIGURES, "fig3_1_four_constraints", "tier_sustainability_vs_hiding", "measured_kv_slope"])
def test_no_label_collides_today(drawn_today, name):
    assert collisions(drawn_today[name]) == []


@pytest.mark.parametrize("name", FIGURES)
def test_no_label_collides_with_a_device_and_a_model_added(grown, name):
    figure = draw(name, grown)
    assert collisions(figure) == [] and legibility.problems(figure) == []


@pytest.mark.parametrize("name", [*FIGURES, "fig3_1_four_constraints", "tier_sustainability_vs_hiding", "measured_kv_slope"])
def test_every_figure_is_legible_today(drawn_today, name):
    assert legibility.problems(drawn_today[name]) == []


def test_ciede2000_matches_the_published_test_pairs():
    # Sharma, Wu and Dalal (2005), Table 1: pairs 1, 7 and 17 with their ΔE00 to four decimals
    assert round(ciede2000((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485)), 4) == 2.0425
    assert round(ciede2000((50.0, 0.0, 0.0), (50.0, -1.0, 2.0)), 4) == 2.3669
    assert round(ciede2000((50.0, 2.5, 0.0), (73.0, 25.0, -18.0)), 4) == 27.1492
    assert colour_difference("#ffffff", "#ffffff") == 0.0
    assert round(colour_difference("#000000", "#ffffff")) == 100  # L* from 0 to 100, no chroma


def test_the_legibility_check_sees_an_empty_entry_alike_styles_and_raw_tex():
    figure = Figure(figsize=(4, 3))
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1], color="#c6dbef", label="weight-bound")
    ax.plot([0, 1], [1, 0], color="#d9d9d9", label="capacity-bound")  # ΔE00 10.0 from the first, the same line
    ax.plot([], [], "s", mfc="white", color="#1f4e79", label="fewer fit than in flight")  # drawn in no panel
    ax.legend()
    ax.set_ylabel("R_inf (tokens/s)")
    ax.set_xlabel("$R_\\infty$ at 10^6 tokens")  # mathtext is fine; the caret outside it is not
    ax.set_title("ridge I* and floor 2g/w_kv")
    settle(figure)
    problems = legibility.problems(figure)
    assert "legend entry 'fewer fit than in flight' stands for nothing drawn" in problems
    assert any(p.startswith("legend entries 'weight-bound' and 'capacity-bound' look alike") for p in problems)
    assert sum("shows TeX markup" in p for p in problems) == 3
    assert not legibility.RAW_TEX.search("H100 SXM: 80 GB, gpt-oss-120b, W1, W4, 2-bit floor")


def test_h100_and_h200_run_the_same_dense_bf16_rate(catalog):
    # both datasheets print BF16 Tensor Core 1,979 TFLOPS with sparsity: dense is half, 989.5 (same tensor cores, clock)
    assert catalog.devices["h100-sxm"].dense_flops["bf16"] == catalog.devices["h200-sxm"].dense_flops["bf16"] == 989.5e12
    assert catalog.devices["h200-sxm"].dense_flops["fp8"] == 1979e12


def test_every_figure_prints_its_evidence_class(drawn_today):
    expected = {name: entry.evidence for name, entry in FIGURES.items()} | {
        "fig3_1_four_constraints": "derived; reported where marked",
        "tier_sustainability_vs_hiding": "derived",
        "measured_kv_slope": "measured, reported",
    }
    for name, figure in drawn_today.items():
        (tag,) = figure.findobj(lambda artist: artist.get_gid() == "evidence")
        assert tag.get_text() == f"evidence: {expected[name]}", name


def test_the_collision_check_sees_a_crossed_an_overlapping_and_an_escaping_label():
    figure = Figure(figsize=(4, 3))
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1], label="diagonal")
    ax.text(0.5, 0.5, "on the line", ha="center", va="center")
    ax.text(0.1, 0.9, "first")
    ax.text(0.1, 0.9, "second")
    ax.text(0.98, 0.2, "runs past the right border")
    problems = settle(figure) and collisions(figure)
    assert "line 'diagonal' crosses text 'on the line'" in problems
    assert "text 'first' overlaps text 'second'" in problems
    assert any("'runs past the right border' straddles" in p for p in problems)


def test_place_moves_a_label_off_a_line():
    figure = Figure(figsize=(4, 3))
    ax = figure.subplots()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.axhline(0.5)
    label = ax.annotate("point", (0.5, 0.5), textcoords="offset points", xytext=(0, 0), ha="center", va="center")
    settle(figure)
    assert collisions(figure)
    assert place(label, [(0, 0, "center", "center"), (0, 4, "center", "bottom")])
    assert collisions(figure) == [] and label.get_verticalalignment() == "bottom"


def test_colours_and_markers_are_keyed_to_ids():
    assert id_color("llama-3-70b") == ID_STYLES["llama-3-70b"][0] == "#9467bd"
    assert id_color("mistral-large-2407") == id_color("mistral-large-2407")  # a hash, not a position
    assert id_color("mistral-large-2407") not in {color for color, _ in ID_STYLES.values()}
    assert id_marker("mistral-large-2407") == id_marker("mistral-large-2407")


def test_adding_a_model_and_a_device_changes_no_other_colour(today, grown):
    def line_colors(inputs):
        figure = draw("fig1_kv_footprint", inputs)
        return {line.get_gid(): line.get_color() for line in figure.findobj(lambda a: (a.get_gid() or "").startswith("footprint "))}

    before, after = line_colors(today), line_colors(grown)
    assert before and all(after[gid] == color for gid, color in before.items())
    assert set(after) - set(before) == {"footprint test-mistral-large-2407"}

    def roof_colors(inputs):
        figure = draw("fig3_roofline", inputs)
        return {line.get_gid(): line.get_color() for line in figure.findobj(lambda a: (a.get_gid() or "").startswith("roof "))}

    before, after = roof_colors(today), roof_colors(grown)
    assert len(before) == 4 and all(after[gid] == color for gid, color in before.items())
    assert set(after) - set(before) == {"roof test-h20"}


@pytest.fixture(scope="module")
def serving_figures(catalog, committed_validation):
    """The validation figures, drawn as the workflow draws them from the reported serving measurements."""
    from importlib import import_module

    from kvwall.figures.serving import COST_SHARES_FIGURE, SERVING_FIGURES, cost_shares

    rows, _, result = committed_validation
    figures = {name: import_module(f"kvwall.figures.serving.{module}").draw(result, rows, catalog)
               for name, module in SERVING_FIGURES.items()}
    shares = pd.read_csv(ROOT / "tables" / "derived" / f"{COST_SHARES_FIGURE}.csv")
    return {**figures, COST_SHARES_FIGURE: cost_shares.draw(shares, catalog)}


def test_no_label_collides_in_the_validation_figures(serving_figures):
    assert {name: collisions(figure) + legibility.problems(figure) for name, figure in serving_figures.items()} == {
        name: [] for name in serving_figures}


def test_the_validation_figures_name_models_devices_and_engines(serving_figures):
    titles = [ax.get_title() for ax in serving_figures["serving_tpot_against_bound"].axes]
    assert titles and all(" on " in t and "-" not in t.split(" on ")[1].split(",")[0] for t in titles)
    assert any("SGLang" in t or "vLLM" in t or "TensorRT-LLM" in t for t in titles)
    assert [ax.get_title(loc="left") for ax in serving_figures["serving_cost_shares"].axes] == [
        "SGLang", "TensorRT-LLM", "vLLM"]
    claim = serving_figures["serving_format_claim"].axes[0]
    assert claim.get_xlim() == claim.get_ylim() and claim.get_aspect() == 1.0  # the identity line at 45 degrees


def test_a_negative_remainder_runs_past_the_measurement_and_is_printed(catalog):
    from matplotlib.patches import Rectangle

    from kvwall.figures.serving import cost_shares

    # The costs of one bar sum to 0.5 + 0.3 + 0.4 = 1.2 of the measured TPOT: a remainder of -0.2, drawn from 1 to 1.2;
    # the other's sum to 0.7, its remainder 0.3 from 0.7 to 1.
    shares = pd.DataFrame({"backend": ["vllm", "vllm"], "device": ["h100-sxm", "b200"], "mode": ["agg", "agg"],
                           "points": [10, 20], "median_tpot_ms": [10.0, 12.0],
                           **{f"share_{name}": [0.0, 0.0] for name in COSTS},
                           "remainder": [-0.2, 0.3]})
    shares.loc[0, ["share_weights", "share_kv", "share_prefill"]] = [0.5, 0.3, 0.4]
    shares.loc[1, ["share_weights", "share_fixed"]] = [0.6, 0.1]
    figure = cost_shares.draw(shares, catalog)
    ax = figure.axes[0]
    hatched = {(round(p.get_x(), 6), round(p.get_width(), 6), p.get_hatch()) for p in ax.patches
               if isinstance(p, Rectangle) and p.get_hatch()}
    assert hatched == {(1.0, 0.2, "xx"), (0.7, 0.3, "//")}
    assert sorted(t.get_text() for t in ax.texts) == ["+30%", "\N{MINUS SIGN}20%"]
    assert ax.get_xlim()[1] >= 1.2 and collisions(figure) + legibility.problems(figure) == []
