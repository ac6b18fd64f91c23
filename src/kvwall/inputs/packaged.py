"""The default catalogue shipped with the package: config/'s spec files (``kvwall/catalogue``, links to them in a
checkout, copies in a built wheel), so that kvwall answers wherever it is installed."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def packaged_config_dir() -> Path:
    """The folder of the shipped spec files, in config/'s format."""
    return Path(str(resources.files("kvwall") / "catalogue"))
