"""Shared fixtures: the repository's catalogue and workflow selections, loaded once."""

from pathlib import Path

import pytest
import yaml

from kvwall.inputs.loader import load_catalog, load_workflow_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(ROOT / "config")


@pytest.fixture(scope="session")
def selections(catalog):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    return load_workflow_config(config, catalog)


@pytest.fixture(scope="session")
def llama70(catalog):
    return catalog.models["llama-3-70b"]
