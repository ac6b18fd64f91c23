"""Views of the checked catalogue: the entries one kind of job reads, saved once per build for every job to load.

The workflow checks every input once, before any job (kvwall.cli.front_door). It then saves, for each kind of job, a
view: the catalogue restricted to the models and devices those jobs read (those the paper's frame names, or the
whole catalogue: kvwall.cli.front_door.workflow_views), with the resolved selections and the reported values beside
it. A job loads its view in milliseconds, without parsing YAML or validating schemas again, and a
rule lists its view as an input: a view is rewritten only where its bytes change, so a device added outside the
paper's selections reruns the jobs whose view holds it (the catalogue tables) and none of the paper's.
"""

from __future__ import annotations

import copyreg
import os
import pickle
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.specs import Reported


def _read_only(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


# The catalogue's read-only mappings pickle as the dicts they wrap.
copyreg.pickle(MappingProxyType, lambda mapping: (_read_only, (dict(mapping),)))


@dataclass(frozen=True)
class View:
    """The catalogue a job reads, the workflow's resolved selections (kvwall.inputs.loader.load_workflow_config) and
    the reported values of config/reported/ (kvwall.inputs.reported)."""

    catalog: Catalog
    selections: Mapping
    reported: Mapping[str, Reported]


def restricted(catalog: Catalog, models: Iterable[str] | None = None, devices: Iterable[str] | None = None) -> Catalog:
    """``catalog`` holding only the named models and devices (all of a collection where None), in catalogue order;
    the evaluation's model and device stay, since every job may ask for them."""

    def keep(collection: Mapping, ids: Iterable[str] | None, always: str) -> Mapping:
        if ids is None:
            return collection
        wanted = {*ids, always}
        return MappingProxyType({k: v for k, v in collection.items() if k in wanted})

    return replace(catalog, models=keep(catalog.models, models, catalog.evaluation.model),
                   devices=keep(catalog.devices, devices, catalog.evaluation.device))


def selected_ids(selections: Mapping) -> tuple[set[str], set[str]]:
    """The model and device ids the paper's selections name (load_workflow_config's keys ending in models or
    devices, and its single model and device)."""
    models, devices = set(), set()
    for key, value in selections.items():
        ids = (value,) if isinstance(value, str) else value
        if key.endswith(("_models", "_model")):
            models.update(ids)
        elif key.endswith(("_devices", "_device")):
            devices.update(ids)
    return models, devices


def save_view(view: View, path: str | Path, sources: Iterable[str | Path]) -> bool:
    """Write ``view`` to ``path`` unless the file already holds the same bytes; True where it was written.

    A written view takes the modification time of the newest of ``sources`` (the files it was read from), so that
    Snakemake, which compares modification times, finds it exactly as new as the inputs it stands for.
    """
    path = Path(path)
    data = pickle.dumps(view, protocol=5)
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    newest = max(os.stat(source).st_mtime_ns for source in sources)
    os.utime(partial, ns=(newest, newest))
    os.replace(partial, path)
    return True


def load_view(path: str | Path) -> View:
    """The view a workflow saved at ``path`` (a file of this build's own, never one from elsewhere)."""
    view = pickle.loads(Path(path).read_bytes())
    if not isinstance(view, View):
        raise TypeError(f"{path} holds no catalogue view")
    return view


def save_views(views: Mapping[str, View], sources: Iterable[str | Path], folder: str | Path) -> dict[str, str]:
    """Save each view under ``folder`` as <name>.pickle (only where its bytes changed); their paths by name."""
    sources = list(sources)
    paths = {name: f"{folder}/{name}.pickle" for name in views}
    for name, view in views.items():
        save_view(view, paths[name], sources)
    return paths
