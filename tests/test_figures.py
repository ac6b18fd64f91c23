"""Figures 1-8: the plotted data are the model's values (at the paper's printed rounding where the paper prints
them), and a save done twice gives the same bytes."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from kvwall.figures import FIGURES, draw
from kvwall.figures.inputs import FigureInputs
from kvwall.figures.style import save
from kvwall.model.footprint import kv_bytes_per_token
from kvwall.model.roofline import intensity_long_context_limit
from kvwall.units import dtype_bytes

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def inputs():
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["config_dir"] = str(ROOT / "config")
    return FigureInputs.load(config)


@pytest.fixture(scope="module")
def figures(inputs):
    return {name: draw(name, inputs) for name in FIGURES}


def tagged(figure, gid):
    """Every artist of ``figure`` with the given gid, in drawing order."""
    return figure.findobj(lambda artist: artist.get_gid() == gid)


def test_every_figure_has_a_module_and_a_caption():
    for name in FIGURES:
        assert (ROOT / "workflow" / "report" / f"{name}.rst").is_file(), name


@pytest.mark.slow
def test_fig1_bars_are_table1_bytes_per_token(figures, inputs):
    bars = tagged(figures["fig1_kv_footprint"], "kv_bytes_per_token")
    models = inputs.selections["table1_models"]
    widths = dict(zip(models, (bar.get_width() * 1e6 for bar in bars)))
    assert widths["llama-3-70b"] == 327_680
    for m in models:
        assert widths[m] == pytest.approx(kv_bytes_per_token(inputs.catalog.models[m], 2.0))
    # Table 1 at its printed rounding (MB/token).
    printed = {"llama-2-13b": 0.82, "llama-3-8b": 0.13, "llama-3.1-405b": 0.52, "deepseek-v2": 0.07}
    for m, mb in printed.items():
        assert round(widths[m] / 1e6, 2) == mb


def test_fig2_floors_are_2g_over_w_kv(figures, llama70):
    figure = figures["fig2_arithmetic_intensity"]
    for fmt, floor in (("bf16", 8), ("int8", 16), ("int4", 32), ("int2", 64)):
        (line,) = tagged(figure, f"floor {fmt}")
        assert line.get_ydata()[0] == floor == intensity_long_context_limit(llama70, dtype_bytes(fmt))


def test_fig2_ridges_are_table3(figures):
    figure = figures["fig2_arithmetic_intensity"]
    for device, ridge in (("h100-sxm", 295), ("b200", 281), ("mi300x", 247)):
        (line,) = tagged(figure, f"ridge {device}")
        assert round(line.get_ydata()[0]) == ridge


def test_fig2_curves_tend_to_the_short_and_long_context_limits(figures):
    ax = figures["fig2_arithmetic_intensity"].axes[0]
    curves = {line.get_label(): line.get_ydata() for line in ax.get_lines() if line.get_label().startswith("AI(")}
    assert curves["AI(s, b=1)"][0] == pytest.approx(1.0, rel=1e-2)  # 2b / w_p at s -> 0
    assert curves["AI(s, b=32)"][0] == pytest.approx(32.0, rel=2e-2)
    for values in curves.values():
        assert values[-1] == pytest.approx(8.0, rel=5e-2)  # 2g / w_kv at s -> infinity


def test_fig3_w1_operating_point_is_table5_intensity(figures):
    (line,) = tagged(figures["fig3_roofline"], "w1 b200")
    intensities = line.get_xdata()
    assert len(intensities) == 8  # contexts 2^-4 .. 2^3 times 128k
    assert round(intensities[4], 1) == 2.6  # SoK Table 5, BF16 baseline at 128k
    assert np.all(np.diff(intensities) > 0)  # at b = 1, intensity grows with context towards 2g / w_kv
    attained = line.get_ydata() * 1e12
    assert attained == pytest.approx(intensities * 8.0e12)  # on the bandwidth slope of B200


def test_fig4_crossovers_are_table4_and_section_3_4(figures):
    figure = figures["fig4_regime_map"]
    (traffic,) = tagged(figure, "traffic llama-3-70b b200")
    assert round(traffic.get_ydata()[0] / 100) * 100 == 427_200  # s*(1), Table 4
    batches, values = traffic.get_xdata(), traffic.get_ydata()
    assert np.allclose(values * batches, values[0])  # s*(b) = s*(1) / b
    (capacity,) = tagged(figure, "capacity llama-3-70b b200")
    assert round(capacity.get_ydata()[0] / 1000) == 159  # s_cap on B200, section 3.4
    assert np.all(capacity.get_ydata() == capacity.get_ydata()[0])  # one sequence's capacity: flat in b
    (batch_capacity,) = tagged(figure, "batch capacity llama-3-70b b200")
    assert batch_capacity.get_ydata() == pytest.approx(capacity.get_ydata() / batch_capacity.get_xdata())
    (small,) = tagged(figure, "capacity llama-3-8b h100-sxm")
    assert round(small.get_ydata()[0] / 1000) == 488
    assert not tagged(figure, "capacity llama-3-70b h100-sxm")  # weights exceed 80 GB: nothing to draw
    assert not tagged(figure, "capacity llama-3.1-405b b200")


def test_fig4_marks_every_workload(figures, inputs):
    figure = figures["fig4_regime_map"]
    marked = {a.get_gid().split(" ")[0] for a in figure.findobj(lambda a: (a.get_gid() or "").startswith("W"))}
    assert {w for gid in marked for w in gid.split("+")} == {w.upper() for w in inputs.catalog.workloads}


def test_fig5_speedups_are_table5_and_table7(figures, inputs):
    figure = figures["fig5_speedup"]
    context = inputs.catalog.workloads["w1"].context

    def at_workload(gid):
        (line,) = tagged(figure, gid)
        return float(np.interp(np.log(context), np.log(line.get_xdata()), line.get_ydata()))

    assert round(at_workload("speedup c=8 b=1"), 2) == 1.25
    assert round(at_workload("speedup c=8 b=32"), 2) == 4.82
    assert round(at_workload("speedup c=5.33 b=32"), 2) == 3.78
    assert round(at_workload("speedup c=2 b=32"), 2) == 1.83
    for c in (2, 4, 16 / 3, 8, 16):
        for b in (1, 32):
            (line,) = tagged(figure, f"speedup c={c:.3g} b={b}")
            y = line.get_ydata()
            assert np.all(np.diff(y) > 0) and 1.0 < y[0] and y[-1] < c  # from 1 towards c


def test_fig6_bars_are_the_paper_ceilings(figures, inputs):
    bars = tagged(figures["fig6_placement"], "token_rate_ceiling")
    millions = [round(bar.get_height(), 1) for bar in bars]
    devices = inputs.selections["table3_devices"]
    expected = {"h100-sxm": [10.2], "b200": [24.4, 12.2], "mi300x": [16.2, 2.0]}
    at = 0
    for d in devices:
        n = 1 if inputs.catalog.devices[d].partitions == 1 else 2
        if d in expected:
            assert millions[at : at + n] == expected[d]
        at += n
    assert at == len(bars)


def test_fig7_numeric_quality_is_only_what_is_reported(figures, inputs):
    figure = figures["fig7_speed_quality"]
    (h2o,) = [a for a in tagged(figure, "retention h2o-r0.5") if hasattr(a, "get_segments")]
    (segment,) = h2o.get_segments()
    assert sorted(segment[:, 1]) == [97, 99]
    assert round(segment[0, 0], 2) == 1.83  # Table 7, W2
    assert not tagged(figure, "retention kivi-2bit") and not tagged(figure, "retention kvquant-3bit")
    (kivi,) = tagged(figure, "words kivi-2bit")
    assert round(kivi.get_xdata()[0], 2) == 4.82
    (lossless,) = tagged(figure, "lossless")
    assert list(lossless.get_xdata()) == [1.0, 1.0, 1.0]


def test_fig8_w4_times_are_section_4_5(figures):
    figure = figures["fig8_reuse"]

    def seconds(label):
        (dot,) = tagged(figure, f"w4 {label}")
        return dot.get_xdata()[0]

    assert round(seconds("recompute"), 1) == 25.0
    assert round(seconds("PCIe Gen5 x16"), 2) == 0.66
    assert round(seconds("PCIe Gen5 x16 + 4× codec"), 2) == 0.16
    assert round(seconds("NVLink 4 + 4× codec") * 1e3) == 12
    assert round(seconds("recompute") / seconds("PCIe Gen5 x16")) == 38


def test_saving_twice_gives_the_same_bytes(figures, tmp_path):
    figure = figures["fig6_placement"]
    for fmt in ("svg", "pdf", "png"):
        first, second = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
        save(figure, [first])
        save(figure, [second])
        assert first.read_bytes() == second.read_bytes(), fmt
        assert b"CreationDate" not in first.read_bytes() and b"<dc:date>" not in first.read_bytes()
