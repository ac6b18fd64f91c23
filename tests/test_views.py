"""Views of the checked catalogue (kvwall.inputs.views): what a job reads, saved where its bytes change."""

import os
import pickle

import pytest
import yaml

from kvwall.cli.front_door import check_inputs, workflow_views
from kvwall.inputs.views import View, load_view, restricted, save_view, selected_ids


@pytest.fixture(scope="module")
def inputs(root):
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    return check_inputs(config, "config/config.yaml")


def test_the_paper_view_holds_what_the_papers_frame_names_and_no_more(inputs):
    views = workflow_views(inputs)
    paper, catalogue = views["paper"].catalog, views["catalogue"].catalog
    models, devices = selected_ids(inputs.selections)
    assert set(inputs.selections["table1_models"]) <= set(paper.models) and "h100-sxm" in paper.devices
    assert inputs.catalog.evaluation.model in paper.models and inputs.catalog.evaluation.device in paper.devices
    assert set(catalogue.models) == set(inputs.catalog.models)
    assert set(paper.models) < set(catalogue.models) and set(paper.devices) <= set(catalogue.devices)
    # the measured leg's model and every tier scenario's model and device are in the paper's frame
    assert inputs.measure["full"].model.id in paper.models
    assert all(s.model.id in paper.models and s.device.id in paper.devices for s in inputs.tiers.scenarios.values())
    # the serving view: the models the measurements map onto, in catalogue order
    serving = views["serving"].catalog
    assert set(serving.models) >= set(inputs.validation.models.values())
    assert list(serving.models) == [m for m in catalogue.models if m in serving.models]
    assert models <= set(paper.models) and devices <= set(paper.devices)


def test_restricting_keeps_the_evaluation_model_and_device_and_the_catalogue_order(catalog):
    view = restricted(catalog, models=["qwen3-32b", "llama-2-13b"], devices=[])
    assert list(view.models) == [m for m in catalog.models if m in {"qwen3-32b", "llama-2-13b", catalog.evaluation.model}]
    assert list(view.devices) == [catalog.evaluation.device]
    assert view.links == catalog.links and view.assumptions == catalog.assumptions


def test_a_view_is_written_once_with_the_time_of_its_newest_source(tmp_path, catalog, selections):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("a"), new.write_text("b")
    os.utime(old, ns=(1_000_000_000, 1_000_000_000))
    os.utime(new, ns=(2_000_000_000, 2_000_000_000))
    path = tmp_path / "views" / "paper.pickle"
    view = View(catalog, selections, {})
    assert save_view(view, path, [old, new]) is True
    assert path.stat().st_mtime_ns == 2_000_000_000
    os.utime(new, ns=(3_000_000_000, 3_000_000_000))
    assert save_view(View(catalog, selections, {}), path, [old, new]) is False  # same bytes: left as it was
    assert path.stat().st_mtime_ns == 2_000_000_000
    loaded = load_view(path)
    assert loaded.catalog.models["llama-3-70b"] == catalog.models["llama-3-70b"]
    assert dict(loaded.catalog.models["llama-3-70b"].provenance) == dict(catalog.models["llama-3-70b"].provenance)
    assert save_view(View(restricted(catalog, [], []), selections, {}), path, [old, new]) is True  # bytes changed
    assert path.stat().st_mtime_ns == 3_000_000_000


def test_a_file_that_holds_no_view_is_refused(tmp_path):
    path = tmp_path / "other.pickle"
    path.write_bytes(pickle.dumps({"not": "a view"}))
    with pytest.raises(TypeError, match="holds no catalogue view"):
        load_view(path)
