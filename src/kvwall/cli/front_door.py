"""Every input of the workflow, loaded and cross-checked once, before any job is scheduled (workflow/rules/common.smk).

Each file goes through the loader its jobs use (catalogue, workflow config, reported values, the serving assumptions
of deployments, tiers, both measure modes, every measured record, the printed numbers, the validation map and the
reported serving measurements), so a value a job would refuse is refused here first; then the references the code
relies on across files are checked. A missing file is an error like any other.
"""

from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from kvwall.canonical.measured import FIT_FIELDS, PLATFORM_IDS
from kvwall.canonical.tiers import FITS
from kvwall.cli.notebook_parameters import check_notebook_parameters, given_in, without_notebook_parameters
from kvwall.formats import FORMATS
from kvwall.inputs.catalog import Catalog
from kvwall.inputs.deployment import load_serving_inputs
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import DEVICE_ASSUMPTIONS_FILE, load_catalog, load_workflow_config, read_yaml, validate
from kvwall.inputs.published_params import PUBLISHED_PARAMS_FILE, load_published_params
from kvwall.inputs.reader import read_json
from kvwall.inputs.reported import Reported, load_reported
from kvwall.inputs.serving import SERVING_MEASUREMENTS, check_serving_measurements
from kvwall.inputs.stamps import mark_passed, passed, stamp_name
from kvwall.inputs.validation_map import VALIDATION_FILE, ValidationMap, load_validation_map
from kvwall.inputs.views import View, restricted, selected_ids
from kvwall.measure.config import MODES, MeasureConfig, load_measure_config
from kvwall.measure.record import read_record
from kvwall.render import to_csv
from kvwall.tables import ARTIFACTS, builder
from kvwall.tier.inputs import TierSpecs, load_tiers
from kvwall.units import dimension_of
from kvwall.validation.below_bound import UndocumentedBelowBound
from kvwall.validation.estimate_error import uncalibrated_engines
from kvwall.validation.run import validate_file

PRINTED_FILE = "paper/printed.yaml"
TIERS_FILE = "tiers.yaml"
MEASURE_FILE = "measure.yaml"
RECORDS_DIR = "data/measured"

#: Workloads the tables and figures read by id (tables.comparison, tables.in_text, figures.roofline, figures.reuse),
#: with the field each needs beyond batch and context.
REQUIRED_WORKLOADS = {"w1": None, "w2": None, "w3": "shared_prefix", "w4": "reuse_gap"}
#: The technique whose codec W4's fetch uses (tables.in_text.reuse, figures.reuse).
CODEC_TECHNIQUE = "cachegen"
#: The dimension of each reported fit field (canonical.measured.FIT_FIELDS) and platform value the figures read.
FIT_DIMENSIONS = {"intercept": "s", "slope": "s/byte", "points": "count", "r-squared": "ratio",
                  "fixed-path-bandwidth": "bytes/s", "kv-bandwidth": "bytes/s"}


@dataclass(frozen=True)
class Inputs:
    """Everything the workflow reads, checked."""

    catalog: Catalog
    selections: dict
    reported: Mapping[str, Reported]
    tiers: TierSpecs
    measure: Mapping[str, MeasureConfig]  # mode -> settings
    records: tuple[str, ...]  # the measured record files
    validation: ValidationMap


def _check_catalog(catalog: Catalog) -> None:
    for workload_id, needed in REQUIRED_WORKLOADS.items():
        workload = catalog.workloads.get(workload_id)
        if workload is None:
            raise SpecError(catalog.files["workloads"], f"workloads.{workload_id}", "missing: the tables and figures read this workload")
        if needed and not getattr(workload, needed):
            raise SpecError(catalog.files["workloads"], f"workloads.{workload_id}.{needed}", f"missing: {workload_id} needs a {needed}")
    if CODEC_TECHNIQUE not in catalog.techniques:
        raise SpecError(catalog.files["techniques"], f"techniques.{CODEC_TECHNIQUE}", "missing: W4's fetch uses its codec")
    precision = catalog.assumptions.compute_precision
    for device_id, device in catalog.devices.items():
        if precision not in device.dense_flops:
            raise SpecError(catalog.files["devices"], f"devices.{device_id}.dense_flops",
                            f"no {precision!r} rate, the compute_precision of {catalog.files['assumptions']}")


#: A reported value read as a quoted text, or as a number of any dimension.
TEXT, ANY = "text", "any"


def _reported(reported: Mapping[str, Reported], value_id: str, kind: str, file: str, key: str) -> None:
    """``value_id`` is reported (as a text, as a number of the dimension ``kind``, or as ANY); ``file`` and ``key``
    name what asks for it."""
    if value_id not in reported:
        raise SpecError(file, key, f"names {value_id!r}, which no file of config/reported/ gives")
    value = reported[value_id]
    if kind == TEXT and value.text is None:
        raise SpecError(value.file, f"values.{value_id}", "must be a quoted text")
    if kind not in (TEXT, ANY) and (value.value is None or dimension_of(value.unit) != kind):
        raise SpecError(value.file, f"values.{value_id}.unit", f"unit {value.unit!r} does not measure {kind}")


def _check_reported(reported: Mapping[str, Reported], measure: MeasureConfig, folder: str) -> None:
    """The reported values the measured figure and CANONICAL-NUMBERS §1 read, present and of the right dimension."""
    platform = measure.reported_platform
    _reported(reported, f"{platform}.platform", TEXT, measure.file, "reported.platform")
    _reported(reported, f"{platform}.copy-bandwidth", "bytes/s", measure.file, "reported.platform")
    for value_id in PLATFORM_IDS:
        _reported(reported, value_id, ANY, folder, f"values.{value_id}")
    for fit in dict.fromkeys((*measure.reported_fits, *FITS)):
        _reported(reported, f"fit.{fit}.framework", TEXT, measure.file, "reported.fits")
        for field, _ in FIT_FIELDS:
            _reported(reported, f"fit.{fit}.{field}", FIT_DIMENSIONS[field], measure.file, "reported.fits")


def _check_printed(path: Path, catalog: Catalog, selections: dict) -> None:
    """Every artifact, row, column and format config/paper/printed.yaml names exists in what the workflow builds."""
    file = str(path)
    printed = read_yaml(path)
    validate(printed, "printed", file)
    for g, group in enumerate(printed["groups"]):
        key = f"groups[{g}]"
        if group["artifact"] not in ARTIFACTS:
            raise SpecError(file, f"{key}.artifact", f"{group['artifact']!r} is not a table the workflow builds")
        table = builder(group["artifact"])(catalog, selections)
        columns = {column.name for column in table.columns}
        for name in group["key"]:
            if name not in columns:
                raise SpecError(file, f"{key}.key", f"{group['artifact']} has no column {name!r}")
        rows = {"/".join(row[k] for k in group["key"]) for row in csv.DictReader(io.StringIO(to_csv(table)))}  # as the audit reads them
        for row_key, cells in group["cells"].items():
            if row_key not in rows:
                raise SpecError(file, f"{key}.cells.{row_key}", f"{group['artifact']} has no such row")
            for column, cell in cells.items():
                if column not in columns:
                    raise SpecError(file, f"{key}.cells.{row_key}.{column}", f"{group['artifact']} has no such column")
                if isinstance(cell, dict) and cell["format"] not in FORMATS:
                    raise SpecError(file, f"{key}.cells.{row_key}.{column}.format", f"format {cell['format']!r} is not known")


#: The code whose change can move a bound: every module of the package.
PACKAGE_SOURCES = Path(__file__).resolve().parents[1]


def _below_bound_stamp(files: list[Path]) -> str:
    """The stamp of these inputs and the package's code, as a validation of the measurements reads them."""
    def parts():
        for path in (*files, *sorted(PACKAGE_SOURCES.rglob("*.py"))):
            yield str(path.relative_to(PACKAGE_SOURCES) if path.is_relative_to(PACKAGE_SOURCES) else path.name).encode()
            yield path.read_bytes()
    return stamp_name(parts(), prefix="below-bound-")


def check_below_bound(catalog: Catalog, serving_measurements: str | Path, validation_file: str | Path,
                      stamp_dir: str | Path | None = None) -> None:
    """Every reported point measured below its bound has a documented diagnosis, and every diagnosis a point
    (kvwall.validation.below_bound), checked before any job (workflow/rules/common.smk, after check_inputs) where the
    validation job would stop; an engine with too few understood points for its constants is named in one warning
    line (kvwall.validation.estimate_error.uncalibrated_engines: the build goes on, its points at datasheet rates).
    A stamp in ``stamp_dir`` of the catalogue's files, the measurements, the map and the package's code skips it."""
    files = [Path(f) for name, f in sorted(catalog.files.items()) if Path(f).is_file()]
    files += [Path(serving_measurements), Path(validation_file)]
    stamp = _below_bound_stamp(files)
    if passed(stamp_dir, stamp):
        return
    try:
        _, _, result = validate_file(serving_measurements, validation_file, catalog, stamp_dir)
    except UndocumentedBelowBound as error:
        file, key, reason = str(error).split(": ", 2)
        raise SpecError(file, key, reason) from None
    for reason in uncalibrated_engines(result.understood).values():
        print(f"kvwall: warning: {serving_measurements}: {reason}", file=sys.stderr)
    mark_passed(stamp_dir, stamp)


def _config_dir(value: str, config_file: str) -> Path:
    """The folder ``config_dir`` names, refused at that key (of the config file, or --config) when empty or not a
    folder: an empty path would read the spec files from wherever the workflow runs."""
    if not value.strip():
        raise SpecError(given_in("config_dir", value, config_file), "config_dir", "empty: name the folder of the spec "
                        "files (devices.yaml, models.yaml, ...), for example config")
    if not Path(value).is_dir():
        raise SpecError(given_in("config_dir", value, config_file), "config_dir", f"{value!r} is not a folder (the "
                        "folder of the spec files, devices.yaml, models.yaml, ...)")
    return Path(value)


def check_inputs(config: Mapping, config_file: str, records_dir: str | Path = RECORDS_DIR,
                 serving_measurements: str | Path = SERVING_MEASUREMENTS, stamp_dir: str | Path | None = None) -> Inputs:
    """Load and cross-check every input the workflow reads; the first problem raises a SpecError.

    ``stamp_dir`` lets the reported serving measurements skip a validation their bytes already passed.
    """
    workflow_config = without_notebook_parameters(config)
    validate(workflow_config, "config", config_file)
    config_dir = _config_dir(config["config_dir"], config_file)
    catalog = load_catalog(config_dir)
    if "device_assumptions" not in catalog.files:  # optional for a catalogue, not for the tables it builds
        raise SpecError(config_dir / DEVICE_ASSUMPTIONS_FILE, "", "file not found")
    selections = load_workflow_config(workflow_config, catalog, config_file)
    _check_catalog(catalog)
    reported = load_reported(catalog.files["reported"])
    if not reported:
        raise SpecError(catalog.files["reported"], "", "no reported values (*.yaml) found")
    load_serving_inputs(catalog)
    tiers = load_tiers(config_dir / TIERS_FILE, catalog)
    measure = {mode: load_measure_config(config_dir / MEASURE_FILE, catalog, mode) for mode in MODES}
    _check_reported(reported, measure["full"], catalog.files["reported"])
    records = tuple(sorted(str(p) for p in Path(records_dir).glob("*.json")))
    for record in records:
        read_json(record)  # refuses special and oversized files before the record reader opens them
        read_record(record)
    _check_printed(config_dir / PRINTED_FILE, catalog, selections)
    validation = load_validation_map(config_dir / VALIDATION_FILE, catalog)
    load_published_params(config_dir / PUBLISHED_PARAMS_FILE)
    check_serving_measurements(serving_measurements, stamp_dir)
    check_notebook_parameters(config, config_file, catalog, config_dir / PRINTED_FILE, serving_measurements, validation,
                              stamp_dir)
    return Inputs(catalog, selections, reported, tiers, measure, records, validation)


def workflow_views(inputs: Inputs) -> dict[str, View]:
    """The views of the catalogue the workflow's jobs read (kvwall.inputs.views), by name:

    - ``paper``: the models and devices the paper's frame names: the selections of config/config.yaml, the measured
      leg's model and devices (config/measure.yaml) and the tier scenarios' (config/tiers.yaml);
    - ``serving``: the models and devices the reported serving measurements map onto (config/validation.yaml);
    - ``catalogue``: every model and device.
    """
    models, devices = selected_ids(inputs.selections)
    for settings in inputs.measure.values():
        models.add(settings.model.id)
        devices.update(settings.device_specs.values())
    for spec in (*inputs.tiers.scenarios.values(), inputs.tiers.economics):
        models.add(spec.model.id)
        devices.add(spec.device.id)
    return {
        "paper": View(restricted(inputs.catalog, models, devices), inputs.selections, inputs.reported),
        "serving": View(restricted(inputs.catalog, set(inputs.validation.models.values()), set(inputs.validation.devices.values())),
                        inputs.selections, inputs.reported),
        "catalogue": View(inputs.catalog, inputs.selections, inputs.reported),
    }


def view_sources(inputs: Inputs, config_file: str) -> list[str]:
    """The files the views are read from: the workflow's config file, the spec files and the reported values."""
    files = inputs.catalog.files
    return [config_file, *(path for name, path in files.items() if name != "reported"),
            *sorted(str(p) for p in Path(files["reported"]).glob("*.yaml"))]
