"""config/validation.yaml: how reported serving measurements map onto the catalogue, and what the data leaves out.

Every entry is an assumption with its source: which catalogue device a system's GPU is, which catalogue model a
checkpoint's architecture is, which weight format a GEMM quantization mode stores, the KV format (not recorded; the
narrowest plausible one, so that a bound stays a bound), and the documented diagnoses of points measured below
their bound (words only, like the reproduction audit's documented mismatches).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.engines import ENGINES
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import known_ids, read_yaml, validate
from kvwall.units import UnitError, dtype_bytes


#: The validation map's file name in a config directory.
VALIDATION_FILE = "validation.yaml"


@dataclass(frozen=True)
class BelowBound:
    """A documented diagnosis of points measured below their bound: which points (by column value) and why."""

    where: Mapping[str, str]
    diagnosis: str
    why: str
    source: str


@dataclass(frozen=True)
class ValidationMap:
    """The assumptions that turn a measured serving row into a deployment of the catalogue."""

    file: str
    devices: Mapping[str, str]  # system -> device id
    models: Mapping[str, str]  # model_path -> model id
    blank_weight_format: str
    weight_formats: Mapping[str, str]  # gemm_quant_mode -> weight format
    compute_precision: Mapping[str, str]  # weight format -> precision of the dense rate its GEMMs run at
    kv_format: str
    tokens_per_step: int
    offset_pseudo_count: int  # points a lookup offset's mean is shrunk with (kvwall.validation.offsets)
    below_bound: tuple[BelowBound, ...] = ()
    stored_kv_default: str = "bf16"  # the KV format an engine stores where stored_kv_format names none
    stored_kv_formats: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))  # engine -> weight format -> KV format
    families: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # model id -> family (model_type)
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)


#: The precisions a dense rate is given at (the names of dense_flops in devices.schema.yaml).
PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "fp4")


def _format(name: str, file: Path, key: str) -> str:
    try:
        dtype_bytes(name)
    except UnitError as error:
        raise SpecError(file, key, str(error)) from None
    return name


def load_validation_map(path: str | Path, catalog: Catalog) -> ValidationMap:
    """Read and check ``path``: every device, model, format and source it names must exist."""
    path = Path(path)
    document = read_yaml(path)
    validate(document, "validation", path)
    sources = document["sources"]

    def source(node: Mapping, key: str) -> str:
        if node["source"] not in sources:
            raise SpecError(path, f"{key}.source", f"source {node['source']!r} is not listed under 'sources'")
        return sources[node["source"]]

    for system, node in document["systems"].items():
        source(node, f"systems.{system}")
        if node["device"] not in catalog.devices:
            raise SpecError(path, f"systems.{system}.device", f"device {node['device']!r} is not in the catalogue ({known_ids(node['device'], catalog.devices)})")
    for model_path, node in document["models"].items():
        source(node, f"models.{model_path}")
        if node["model"] not in catalog.models:
            raise SpecError(path, f"models.{model_path}.model", f"model {node['model']!r} is not in the catalogue ({known_ids(node['model'], catalog.models)})")
    families = document["families"]
    source(families, "families")
    for model_id in families["models"]:
        if model_id not in catalog.models:
            raise SpecError(path, f"families.models.{model_id}", f"model {model_id!r} is not in the catalogue ({known_ids(model_id, catalog.models)})")
    for model_path, node in document["models"].items():
        if node["model"] not in families["models"]:
            raise SpecError(path, "families.models", f"model {node['model']!r} (models.{model_path}) has no family")
    formats = document["weight_formats"]
    source(formats, "weight_formats")
    below = []
    for index, node in enumerate(document.get("below_bound", ())):
        key = f"below_bound[{index}]"
        source(node, key)
        where = node["where"]
        if "model" in where and where["model"] not in catalog.models:
            raise SpecError(path, f"{key}.where.model", f"model {where['model']!r} is not in the catalogue ({known_ids(where['model'], catalog.models)})")
        if "device" in where and where["device"] not in catalog.devices:
            raise SpecError(path, f"{key}.where.device", f"device {where['device']!r} is not in the catalogue ({known_ids(where['device'], catalog.devices)})")
        below.append(BelowBound(MappingProxyType(dict(where)), node["diagnosis"], node.get("why", ""), sources[node["source"]]))
    blank = _format(formats["blank"], path, "weight_formats.blank")
    modes = {m: _format(f, path, f"weight_formats.modes.{m}") for m, f in formats["modes"].items()}
    precision = document["compute_precision"]
    source(precision, "compute_precision")
    for name in sorted({*formats["modes"].values(), formats["blank"]} - set(precision["formats"])):
        raise SpecError(path, "compute_precision.formats", f"weight format {name!r} has no compute precision")
    for name, rate in precision["formats"].items():
        if rate not in PRECISIONS:
            raise SpecError(path, f"compute_precision.formats.{name}",
                            f"{rate!r} is not a precision a dense rate is given at (known: {', '.join(PRECISIONS)})")
    source(document["kv_format"], "kv_format")
    source(document["tokens_per_step"], "tokens_per_step")
    source(document["offset_pseudo_count"], "offset_pseudo_count")
    stored = document["stored_kv_format"]
    source(stored, "stored_kv_format")
    for engine, by_weight in stored["engines"].items():
        if engine not in ENGINES:
            raise SpecError(path, f"stored_kv_format.engines.{engine}",
                            f"engine {engine!r} is not known (known: {', '.join(ENGINES)})")
        for weight_format in by_weight:
            _format(weight_format, path, f"stored_kv_format.engines.{engine}")
    return ValidationMap(
        file=str(path),
        devices=MappingProxyType({s: n["device"] for s, n in document["systems"].items()}),
        models=MappingProxyType({p: n["model"] for p, n in document["models"].items()}),
        blank_weight_format=blank,
        weight_formats=MappingProxyType(modes),
        compute_precision=MappingProxyType(dict(precision["formats"])),
        kv_format=_format(document["kv_format"]["value"], path, "kv_format.value"),
        tokens_per_step=int(document["tokens_per_step"]["value"]),
        offset_pseudo_count=int(document["offset_pseudo_count"]["value"]),
        stored_kv_default=_format(stored["default"], path, "stored_kv_format.default"),
        stored_kv_formats=MappingProxyType({
            engine: MappingProxyType({w: _format(f, path, f"stored_kv_format.engines.{engine}.{w}") for w, f in by_weight.items()})
            for engine, by_weight in stored["engines"].items()}),
        below_bound=tuple(below),
        families=MappingProxyType(dict(families["models"])),
        sources=MappingProxyType(dict(sources)),
    )
