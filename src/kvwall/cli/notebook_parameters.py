"""The audit notebooks' parameters (``--config notebook_<name>=<value>``, workflow/rules/notebooks.smk), checked before
any job runs: each against its schema (notebook_parameters.schema.yaml), and what it names against the catalogue, the
paper's printed places (config/paper/printed.yaml) and the reported serving rows kvwall understands, so that a
re-derivation of something that does not exist stops with one line naming the parameter, never inside its notebook.

What a notebook refuses of a model or row that exists (one whose formulas it does not write out) it says itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import known_ids, read_yaml, validate
from kvwall.inputs.serving import read_serving_measurements
from kvwall.inputs.validation_map import ValidationMap

PREFIX = "notebook_"
#: Where a parameter came from when the workflow's config file does not hold it.
COMMAND_LINE = "--config"


def notebook_parameters(config: Mapping) -> dict:
    """The notebook parameters of a workflow config (its keys starting with ``notebook_``)."""
    return {key: value for key, value in config.items() if str(key).startswith(PREFIX)}


def without_notebook_parameters(config: Mapping) -> dict:
    """The workflow config the config schema reads: everything but the notebook parameters."""
    return {key: value for key, value in config.items() if not str(key).startswith(PREFIX)}


def given_in(key: str, value, config_file: str | Path) -> str:
    """Where the workflow's config ``key`` of ``value`` was given: the config file when it holds it, else --config."""
    in_file = read_yaml(config_file) if Path(config_file).is_file() else {}
    return str(config_file) if isinstance(in_file, dict) and key in in_file and in_file[key] == value else COMMAND_LINE


def _printed_places(printed_file: str | Path) -> list[str]:
    return list(dict.fromkeys(group["where"] for group in read_yaml(printed_file)["groups"]))


def _check_row(row_id: str, key: str, source: str, catalog: Catalog, measurements: str | Path,
               validation: ValidationMap, stamp_dir: str | Path | None) -> None:
    """``row_id`` is a row of ``measurements`` that kvwall understands (maps and holds against its bound)."""
    from kvwall.validation.points import evaluate  # the model: only where a row is named

    rows = read_serving_measurements(measurements, stamp_dir)
    row = rows[rows["id"] == row_id]
    if row.empty:
        raise SpecError(source, key, f"{row_id!r} is not the id of a row of {measurements}")
    reason = evaluate(row.reset_index(drop=True), catalog, validation, load_serving_inputs(catalog))["reason"].iloc[0]
    if isinstance(reason, str):
        raise SpecError(source, key, f"row {row_id!r} of {measurements} is not one kvwall understands: {reason}")


def check_notebook_parameters(config: Mapping, config_file: str | Path, catalog: Catalog, printed_file: str | Path,
                              measurements: str | Path, validation: ValidationMap,
                              stamp_dir: str | Path | None = None) -> None:
    """Every ``notebook_<name>`` of ``config`` against its schema and what it names; the first problem raises a
    SpecError naming the config file, or --config where the value came from the command line. ``stamp_dir`` lets
    the serving measurements skip a validation their bytes already passed (kvwall.inputs.serving)."""
    for key, value in notebook_parameters(config).items():
        source = given_in(key, value, config_file)
        validate({key: value}, "notebook_parameters", source)
        if key == "notebook_model" and value not in catalog.models:
            raise SpecError(source, key, f"model {value!r} is not in the catalogue ({known_ids(value, catalog.models)})")
        if key == "notebook_device" and value not in catalog.devices:
            raise SpecError(source, key, f"device {value!r} is not in the catalogue ({known_ids(value, catalog.devices)})")
        if key == "notebook_where" and value not in (places := _printed_places(printed_file)):
            raise SpecError(source, key, f"{value!r} is not a place of the paper {printed_file} lists (known: "
                                         f"{', '.join(places)})")
        if key in ("notebook_point_id", "notebook_moe_point_id"):
            _check_row(value, key, source, catalog, measurements, validation, stamp_dir)
