"""kvwall plan's frontier beside the measured points (kvwall.plan.frontiers, kvwall.figures.plan_frontier)."""

import numpy as np
import pandas as pd
import pytest

from kvwall.figures import legibility
from kvwall.figures.layout import collisions
from kvwall.figures.plan_frontier import ENGINE_MARKERS, draw
from kvwall.figures.style import save
from kvwall.plan.frontiers import LENGTHS, PANELS, chosen, frontier_panels

#: Rendering and searching four models' frontiers: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow


def test_the_panels_are_the_best_measured_model_system_and_format_one_per_model():
    def point(model, device, fmt, isl=1024, mode="agg"):
        return {"model": model, "device": device, "weight_format": fmt, "isl": isl, "osl": 1024, "mode": mode}
    rows = ([point("a", "h100", "fp8")] * 3 + [point("a", "b200", "fp8")] * 5 + [point("b", "b200", "fp4")] * 4
            + [point("c", "b200", "fp8", isl=8192)] * 9 + [point("d", "b200", "fp8", mode="disagg")] * 9)
    assert chosen(pd.DataFrame(rows)) == [("a", "b200", "fp8"), ("b", "b200", "fp4")]


@pytest.fixture(scope="module")
def panels(catalog, committed_validation):
    from kvwall.plan.calibrated import read_plan_calibration

    rows, vmap, result = committed_validation
    fits = {engine: read_plan_calibration(catalog, engine) for engine in ("sglang", "trtllm", "vllm")}
    return catalog, frontier_panels(result.understood.assign(tpot_ms=rows["silicon_tpot_ms"]), catalog, vmap, fits)


def test_each_frontier_trades_tokens_per_user_for_tokens_per_gpu(panels):
    _, found = panels
    assert len(found) == PANELS and len({p.model for p in found}) == PANELS
    for p in found:
        assert np.all(np.diff(p.frontier_per_user) < 0) and np.all(np.diff(p.frontier_per_gpu) > 0), p.model
        assert p.measured and set(p.measured) <= set(ENGINE_MARKERS)
        # every measured engine's calibrated frontier too, slower than the datasheet's where it is fastest per user
        assert set(p.calibrated) == set(p.measured), p.model
        for engine, edge in p.calibrated.items():
            per_user = np.array([q.tokens_per_second_per_user for q in edge.points])
            per_gpu = np.array([q.tokens_per_second_per_device for q in edge.points])
            assert np.all(np.diff(per_user) < 0) and np.all(np.diff(per_gpu) > 0), (p.model, engine)
            assert per_user[0] < p.frontier_per_user[0] and edge.low < 1.0 < edge.high


def test_the_calibrated_frontiers_band_is_the_held_out_error_the_plan_prints(panels, root):
    _, found = panels
    errors = pd.read_csv(root / "tables/derived/serving_estimate_error.csv").set_index(
        ["scheme", "quantity", "backend", "mode"])
    for p in found:  # the best-measured models: the offsets hold each, so the band is grouped 5-fold's with offsets
        for engine, edge in p.calibrated.items():
            row = errors.loc[("grouped 5-fold, with offsets", "TPOT", engine, "agg")]
            assert edge.scheme == "grouped 5-fold, with offsets"
            assert (edge.low, edge.high) == (row["measured_over_estimate_p10"], row["measured_over_estimate_p90"])


def test_the_figure_is_legible_and_saves_the_same_bytes_twice(panels, tmp_path):
    catalog, found = panels
    figure = draw(found, catalog)
    assert collisions(figure) + legibility.problems(figure) == []
    assert all(f"{LENGTHS[0]:,} in / {LENGTHS[1]:,} out" in ax.get_title() for ax in figure.axes if ax.get_title())
    save(figure, [tmp_path / "a.svg", tmp_path / "a.png"])
    save(draw(found, catalog), [tmp_path / "b.svg", tmp_path / "b.png"])
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_the_table_holds_every_frontier_point_of_every_panel_in_stretches_of_one_layout(panels):
    from kvwall.tables.plan_frontier import plan_frontier

    catalog, found = panels
    table = plan_frontier(found, catalog, LENGTHS)
    table.check_key()
    every = pd.DataFrame(table.rows)
    rows = every[every["estimate"] == "datasheet"]
    assert rows["points"].sum() == sum(len(p.points) for p in found) and len(rows) < rows["points"].sum() / 10
    assert rows["band_low"].isna().all()
    for p in found:
        for engine, edge in p.calibrated.items():  # a row per layout of the calibrated frontier, with its band
            theirs = every[(every["model_id"] == p.model) & (every["estimate"] == f"{engine}, calibrated")]
            assert theirs["points"].sum() == len(edge.points) and theirs["layout"].is_unique
            assert (theirs["band_low"] == edge.low).all() and (theirs["band_high"] == edge.high).all()
        mine = rows[(rows["model_id"] == p.model) & (rows["device_id"] == p.device)]
        labels = [q.deployment.label for q in p.points]
        assert [label for label, n in zip(mine["layout"], mine["points"]) for _ in range(n)] == labels
        assert (mine["layout"].to_numpy()[1:] != mine["layout"].to_numpy()[:-1]).all()  # a stretch ends where the layout changes
        assert np.allclose(mine["first_per_user"], 1e3 / mine["first_tpot_ms"])
        assert np.allclose(mine["last_per_gpu"], mine["last_batch"] / (mine["last_tpot_ms"] / 1e3 * mine["devices"]))
        assert mine["first_per_user"].iloc[0] == p.frontier_per_user[0] and mine["last_per_gpu"].iloc[-1] == p.frontier_per_gpu[-1]
        assert (mine["devices"] <= p.devices).all() and set(mine["isl"]) == {LENGTHS[0]}
