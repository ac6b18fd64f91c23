"""Read config/*.yaml into a Catalog, validating each file against its JSON Schema first.

Every problem stops the load with one SpecError naming the file, the key and the reason, before anything is
built. Schemas live in the package (``kvwall/inputs/schemas``) so that ``kvwall --specs`` works wherever it is installed;
``workflow/schemas`` points at the same files.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from referencing import Registry, Resource

from kvwall.inputs.catalog import Assumptions, Catalog, Configuration, Evaluation
from kvwall.inputs.device_assumptions import read_fabric, with_assumptions
from kvwall.inputs.index_storage import INDEX_STORAGE
from kvwall.inputs.layers import bind_state_dtype, read_layers
from kvwall.inputs.errors import SpecError
from kvwall.inputs.reader import key_path, parse_yaml, read_yaml
from kvwall.inputs.schema_library import jsonschema
from kvwall.inputs.engines import AUTO, COMPUTED_BY_SGLANG, ENGINES, PARAMETERS, PROMPT_BUDGETS
from kvwall.inputs.specs import (PART_NAMES, WEIGHT_PARTS, Device, Domain, Fabric, FullAttention, LatentAttention, Link, MixtureOfExperts, Model,
                                 ScaleUpLink, SlidingWindowAttention, Sourced, Technique, WeightFormats, Workload)
from kvwall.units import UnitError, dimension_of, dtype_bytes, to_base

#: The spec files of a catalogue, by collection, relative to the config directory.
SPEC_FILES = {
    "devices": "devices.yaml",
    "models": "models.yaml",
    "links": "links.yaml",
    "assumptions": "assumptions.yaml",
    "workloads": "workloads.yaml",
    "techniques": "techniques.yaml",
}

#: The largest value accepted in each base dimension, after conversion: far above any real device, model or
#: workload, and far enough below the float range that no product the model forms overflows.
LARGEST = {
    "bytes": 1e18, "bytes/s": 1e18, "FLOP/s": 1e21, "count": 1e15, "tokens": 1e12, "tokens/s": 1e12, "s": 1e9,
    "ratio": 1e6, "s/byte": 1.0, "FLOP/B": 1e9,
}
#: The smallest positive value accepted in a base dimension, after conversion: far below any real link, tensor core,
#: storage format or latency (a kilobyte per second, a megaflop per second, a hundredth of a byte, a picosecond), so
#: that a unit typed wrong by many orders of magnitude is refused.
SMALLEST = {"bytes/s": 1e3, "FLOP/s": 1e6, "bytes": 1e-2, "s": 1e-12}
#: The pattern of an id (safe_id in common.schema.yaml).
SAFE_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}\Z"
#: The pattern of a name printed in tables and messages (label in common.schema.yaml).
LABEL_PATTERN = r"^[^\x00-\x1f\x7f]+\Z"
#: Dimensions whose values count things and so must be whole numbers.
WHOLE = ("count", "tokens")
#: The dimension of each numeric assumption of config/assumptions.yaml.
ASSUMPTION_DIMENSIONS = {
    "tokens_per_k": "tokens", "prefill_mfu": "ratio", "attention_flops_at_full_context": "ratio", "moe_uniform_routing": "ratio",
    "collective_latency": "s", "hbm_bandwidth_efficiency": "ratio",
    **{parameter: "ratio" for parameter, _ in PARAMETERS.values()},
    **{parameter: "tokens" for parameter, _ in PROMPT_BUDGETS.values()},
}
#: Device numbers no datasheet states (kvwall.inputs.device_assumptions); optional.
DEVICE_ASSUMPTIONS_FILE = "device_assumptions.yaml"

#: The folder of reported values (kvwall.inputs.reported), relative to the config directory.
REPORTED_FOLDER = "reported"


@cache
def _registry() -> Registry:
    folder = resources.files("kvwall.inputs") / "schemas"
    entries = []
    for item in folder.iterdir():
        if item.name.endswith(".schema.yaml"):
            entries.append((item.name, Resource.from_contents(parse_yaml(item.read_text(encoding="utf-8"), item.name))))
    return Registry().with_resources(entries)


def schema(name: str) -> dict:
    """The JSON Schema called ``name`` (for example ``devices``)."""
    return _registry()[f"{name}.schema.yaml"].contents


def _reason(error: jsonschema.ValidationError) -> str:
    v, value = error.validator, error.instance
    if v == "required":
        missing = [name for name in error.validator_value if name not in (value or {})]
        return f"missing required field {missing[0]!r}" if missing else error.message
    if v == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field(s):")
    if v in ("exclusiveMinimum", "minimum"):
        bound = error.validator_value
        return f"must be {'>' if v == 'exclusiveMinimum' else '>='} {bound} (got {value!r})"
    if v == "type":
        return f"must be of type {error.validator_value} (got {type(value).__name__} {value!r})"
    if v == "pattern" and error.validator_value == LABEL_PATTERN:
        return f"{value!r} must be one line of printable text"
    if v == "pattern" and error.validator_value != SAFE_ID_PATTERN:
        return f"{value!r} is not of the form {error.validator_value}"
    if v == "pattern" or (v == "not" and isinstance(value, str)):
        return f"{value!r} is not a safe name (lowercase letters, digits, '.', '_' and '-'; at most 64 characters)"
    if v in ("enum", "const"):
        allowed = error.validator_value if v == "enum" else [error.validator_value]
        if list(error.absolute_path)[-1:] == ["unit"]:
            return f"unit {value!r} is not understood here (expected {' or '.join(map(repr, allowed))})"
        return f"{value!r} is not one of {allowed}"
    return error.message


def _first_non_finite(node: Any, path: tuple = ()) -> tuple[tuple, float] | None:
    """The key path and value of the first NaN or infinity in a parsed document (YAML .nan, .inf, 1e999)."""
    if isinstance(node, float) and not math.isfinite(node):
        return path, node
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        found = _first_non_finite(child, (*path, key))
        if found:
            return found
    return None


def _unknown_fields(errors: list, path) -> list[str]:
    """Field names an additionalProperties error reports at ``path``: a misspelt name beside a 'missing' one."""
    names = []
    for error in errors:
        if error.validator == "additionalProperties" and list(error.absolute_path) == list(path):
            names += [k for k in error.instance if k not in error.schema.get("properties", {})]
    return names


#: JSON Schema's validator with "integer" meaning an int: jsonschema also counts a whole float (3.0, 1e300) as one,
#: which the code that counts with it (range, a block size, a seed) cannot take.
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)),
)


def validate(document: Any, schema_name: str, file: str | Path) -> None:
    """Validate a parsed document against a schema; raise the most relevant problem as a SpecError."""
    if document is None:
        raise SpecError(file, "", "the file is empty")
    non_finite = _first_non_finite(document)
    if non_finite:
        raise SpecError(file, key_path(non_finite[0]), f"must be a finite number (got {non_finite[1]})")
    validator = _Validator(schema(schema_name), registry=_registry())
    errors = list(validator.iter_errors(document))
    error = jsonschema.exceptions.best_match(errors)
    if error is None:
        return
    # A name that fails propertyNames is reported against the mapping; name the offending key itself.
    path = list(error.absolute_path)
    if error.validator in ("pattern", "not") and "propertyNames" in error.schema_path and isinstance(error.instance, str):
        if error.instance not in (path[-1:] or [None]):
            path.append(error.instance)
    reason = _reason(error)
    if error.validator == "required":
        unknown = _unknown_fields(errors, error.absolute_path)
        if unknown:
            reason += f"; found unknown field(s) {', '.join(map(repr, unknown))} instead (misspelt?)"
    raise SpecError(file, key_path(path), reason)


#: The keywords a row schema may hold for validate_rows to check each column's distinct values once: none of them
#: relates one field of a row to another.
_PER_FIELD_KEYWORDS = {"type", "required", "properties"}


def validate_rows(rows: list[dict], schema_name: str, file: str | Path) -> None:
    """validate() for a list of rows of one table (a CSV's), checked column by column: where the schema's ``items``
    relates no field to another (_PER_FIELD_KEYWORDS), a table is valid exactly when every distinct set of keys meets
    ``required`` and every distinct value of a column meets that column's schema, so each is checked once; anything
    refused is validated again whole, so that the error named is validate()'s."""
    whole = schema(schema_name)
    items = whole.get("items", {})
    if set(items) - _PER_FIELD_KEYWORDS or set(whole) - {"$schema", "$id", "$defs", "type", "minItems", "items"}:
        validate(rows, schema_name, file)
        return
    validator = _Validator(whole, registry=_registry())
    column_schemas = {name: validator.evolve(schema=sub) for name, sub in items.get("properties", {}).items()}
    row_shape = validator.evolve(schema={key: items[key] for key in ("type", "required") if key in items})
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        validate(rows, schema_name, file)
        return
    distinct: dict[str, dict] = {}
    for row in rows:
        for name, value in row.items():
            distinct.setdefault(name, {}).setdefault((type(value), value), value)
    values = [(name, value) for name, seen in distinct.items() for value in seen.values()]
    sound = (len(rows) >= whole.get("minItems", 0)
             and not any(isinstance(value, float) and not math.isfinite(value) for _, value in values)
             and all(row_shape.is_valid(dict.fromkeys(shape)) for shape in {tuple(row) for row in rows})
             and all(column_schemas[name].is_valid(value) for name, value in values if name in column_schemas))
    if not sound:
        validate(rows, schema_name, file)


def checked_base(value: float, unit: str, dimension: str | None, file: str | Path, key: str) -> float:
    """``value`` in ``unit`` converted to its base unit, refused unless finite, at most LARGEST for its dimension
    and, for counts and tokens, whole."""
    try:
        base = to_base(value, unit, dimension)
    except UnitError as err:
        raise SpecError(file, f"{key}.unit", str(err)) from None
    measured = dimension or dimension_of(unit)
    largest = LARGEST.get(measured, math.inf)
    if not math.isfinite(base) or abs(base) > largest:
        raise SpecError(file, f"{key}.value", f"{value} {unit} is out of range (at most {largest:g} {measured})")
    if 0 < abs(base) < SMALLEST.get(measured, 0):
        raise SpecError(file, f"{key}.value", f"{value} {unit} is out of range (at least {SMALLEST[measured]:g} {measured})")
    if measured in WHOLE and base != int(base):
        raise SpecError(file, f"{key}.value", f"{value} {unit} is not a whole number of {measured}")
    return base


class QuantityReader:
    """Turns the {value, unit, source} nodes of one validated file into Sourced values, checking units and source ids."""

    def __init__(self, file: str | Path, document: Mapping, evidence: str):
        self.file, self.sources, self.evidence = str(file), document.get("sources", {}), evidence

    def source(self, source_id: str, key: str) -> str:
        if source_id not in self.sources:
            raise SpecError(self.file, key, f"source {source_id!r} is not listed under 'sources'")
        return self.sources[source_id]

    def quantity(self, node: Mapping, key: str, dimension: str, default_source: str | None = None) -> Sourced:
        source_id = node.get("source", default_source)
        if source_id is None:
            raise SpecError(self.file, key, "no source: give 'source' here or on the entry")
        value = checked_base(node["value"], node["unit"], dimension, self.file, key)
        return Sourced(value, node["value"], node["unit"], self.source(source_id, f"{key}.source"), self.evidence)


def _load(path: Path, schema_name: str) -> tuple[Mapping, QuantityReader]:
    document = read_yaml(path)
    validate(document, schema_name, path)
    return document, QuantityReader(path, document, document["evidence"])


def _devices(document: Mapping, reader: QuantityReader) -> dict[str, Device]:
    devices = {}
    for device_id, entry in document["devices"].items():
        key = f"devices.{device_id}"
        prov = {
            "hbm_capacity": reader.quantity(entry["hbm_capacity"], f"{key}.hbm_capacity", "bytes"),
            "hbm_bandwidth": reader.quantity(entry["hbm_bandwidth"], f"{key}.hbm_bandwidth", "bytes/s"),
            "partitions": reader.quantity(entry["package"]["partitions"], f"{key}.package.partitions", "count"),
        }
        if "die_to_die_bandwidth" in entry["package"]:
            prov["die_to_die_bandwidth"] = reader.quantity(
                entry["package"]["die_to_die_bandwidth"], f"{key}.package.die_to_die_bandwidth", "bytes/s"
            )
        flops = {}
        for precision, node in entry["dense_flops"].items():
            prov[f"dense_flops.{precision}"] = reader.quantity(node, f"{key}.dense_flops.{precision}", "FLOP/s")
            flops[precision] = prov[f"dense_flops.{precision}"].value
        d2d = prov.get("die_to_die_bandwidth")
        scale_up = None
        if "scale_up" in entry:
            node = entry["scale_up"]
            prov["scale_up.bandwidth"] = reader.quantity(node["bandwidth"], f"{key}.scale_up.bandwidth", "bytes/s")
            if "links" in node:
                prov["scale_up.links"] = reader.quantity(node["links"], f"{key}.scale_up.links", "count")
            scale_up = ScaleUpLink(node["name"], prov["scale_up.bandwidth"].value,
                                   int(prov["scale_up.links"].value) if "links" in node else None, node["direction"])
        fabric = _spec_fabric(entry, key, prov, reader) if "fabric" in entry else None
        devices[device_id] = Device(
            id=device_id,
            name=entry["name"],
            package=entry["package"]["description"],
            hbm_capacity=prov["hbm_capacity"].value,
            hbm_bandwidth=prov["hbm_bandwidth"].value,
            partitions=int(prov["partitions"].value),
            die_to_die_bandwidth=d2d.value if d2d else None,
            dense_flops=MappingProxyType(flops),
            scale_up=scale_up,
            fabric=fabric,
            provenance=MappingProxyType(prov),
        )
    return devices


def _spec_fabric(entry: Mapping, key: str, prov: dict, reader: QuantityReader) -> Fabric:
    """The fabric a device's own system datasheet states (a --specs device): its scale-up domain and scale-out link."""
    if "scale_up" not in entry:
        raise SpecError(reader.file, f"{key}.fabric", "a fabric needs the device's scale-up link (scale_up)")
    return read_fabric(entry["fabric"], key, prov, reader)


_MODEL_COUNTS = ("n_layers", "n_q_heads", "n_kv_heads", "head_dim", "hidden_size", "intermediate_size", "vocab_size")
_MOE_COUNTS = ("routed_experts", "experts_per_token", "shared_experts", "expert_intermediate_size", "dense_layers")


def _models(document: Mapping, reader: QuantityReader) -> dict[str, Model]:
    models = {}
    for model_id, entry in document["models"].items():
        key, default = f"models.{model_id}", entry["source"]
        reader.source(default, f"{key}.source")
        prov = {name: reader.quantity(entry[name], f"{key}.{name}", "count", default) for name in _MODEL_COUNTS}
        prov["params_nominal"] = reader.quantity(entry["params_nominal"], f"{key}.params_nominal", "count", default)
        n = {name: int(prov[name].value) for name in _MODEL_COUNTS}
        if n["n_q_heads"] % n["n_kv_heads"]:
            raise SpecError(reader.file, f"{key}.n_kv_heads", f"{n['n_kv_heads']} does not divide n_q_heads {n['n_q_heads']}")
        attention_node = entry["attention"]
        if attention_node["kind"] == "mla":
            for name in ("kv_lora_rank", "qk_rope_head_dim", "index_head_dim", "q_lora_rank"):
                if name in attention_node:
                    prov[f"attention.{name}"] = reader.quantity(attention_node[name], f"{key}.attention.{name}", "count", default)
            optional = {name: int(prov[f"attention.{name}"].value) for name in ("index_head_dim", "q_lora_rank")
                        if f"attention.{name}" in prov}
            if optional.get("index_head_dim", 0) % INDEX_STORAGE.block:
                raise SpecError(reader.file, f"{key}.attention.index_head_dim", f"{optional['index_head_dim']} is not a "
                                f"multiple of {INDEX_STORAGE.block}, the values the engines store per fp32 scale")
            attention = LatentAttention(
                n["n_layers"], n["n_q_heads"], int(prov["attention.kv_lora_rank"].value),
                int(prov["attention.qk_rope_head_dim"].value), **optional)
        elif attention_node["kind"] == "sliding_window":
            prov["attention.window"] = reader.quantity(attention_node["window"], f"{key}.attention.window", "tokens", default)
            prov["attention.window_layers"] = reader.quantity(
                attention_node["window_layers"], f"{key}.attention.window_layers", "count", default)
            window_layers = int(prov["attention.window_layers"].value)
            if window_layers > n["n_layers"]:
                raise SpecError(reader.file, f"{key}.attention.window_layers", f"{window_layers} exceeds n_layers {n['n_layers']}")
            attention = SlidingWindowAttention(n["n_layers"], n["n_q_heads"], n["n_kv_heads"], n["head_dim"], window_layers,
                                               prov["attention.window"].value)
        elif attention_node["kind"] == "layers":
            attention = read_layers(attention_node, key, reader, default, prov, n["n_layers"])
        else:
            attention = FullAttention(n["n_layers"], n["n_q_heads"], n["n_kv_heads"], n["head_dim"])
        if "max_context" in entry:
            prov["max_context"] = reader.quantity(entry["max_context"], f"{key}.max_context", "tokens", default)
        moe = None
        if "moe" in entry:
            for name in _MOE_COUNTS:
                prov[f"moe.{name}"] = reader.quantity(entry["moe"][name], f"{key}.moe.{name}", "count", default)
            for name in ("expert_matrices", "latent_size", "dense_beside"):
                if name in entry["moe"]:
                    prov[f"moe.{name}"] = reader.quantity(entry["moe"][name], f"{key}.moe.{name}", "count", default)
            moe = MixtureOfExperts(*(int(prov[f"moe.{name}"].value) for name in _MOE_COUNTS),
                                   expert_matrices=int(prov["moe.expert_matrices"].value) if "moe.expert_matrices" in prov else 3,
                                   latent_size=int(prov["moe.latent_size"].value) if "moe.latent_size" in prov else 0,
                                   dense_beside=int(prov["moe.dense_beside"].value) if "moe.dense_beside" in prov else 0)
            if moe.experts_per_token > moe.routed_experts:
                raise SpecError(reader.file, f"{key}.moe.experts_per_token", "exceeds routed_experts")
            if moe.dense_layers > n["n_layers"]:
                raise SpecError(reader.file, f"{key}.moe.dense_layers", f"{moe.dense_layers} exceeds n_layers {n['n_layers']}")
            if moe.dense_beside > n["n_layers"] - moe.dense_layers:
                raise SpecError(reader.file, f"{key}.moe.dense_beside", "exceeds the layers with routed experts")
        kv_format = entry.get("kv_format")
        if kv_format is not None:
            _check_format(kv_format, reader.file, f"{key}.kv_format")
        models[model_id] = Model(
            id=model_id,
            name=entry["name"],
            attention=attention,
            params_nominal=prov["params_nominal"].value,
            tied_embeddings=entry.get("tied_embeddings", False),
            moe=moe,
            hf_id=entry.get("hf_id"),
            kv_format=kv_format,
            max_context=prov["max_context"].value if "max_context" in prov else None,
            provenance=MappingProxyType(prov),
            **n,
        )
        if "weight_format" in entry:
            formats = _weight_formats(entry["weight_format"], models[model_id], reader.file, f"{key}.weight_format")
            models[model_id] = replace(models[model_id], weight_format=formats)
    return models


def _check_format(storage_format: str, file: str, key: str) -> None:
    try:
        dtype_bytes(storage_format)
    except UnitError as err:
        raise SpecError(file, key, str(err)) from None


def _weight_formats(node: str | Mapping, model: Model, file: str, key: str) -> WeightFormats:
    """A models.yaml ``weight_format``: one format for every part, or a mapping giving each part the model has."""
    if isinstance(node, str):
        _check_format(node, file, key)
        return WeightFormats.uniform(node)
    parts = model.weight_parts
    for part, storage_format in node.items():
        if part not in parts:
            raise SpecError(file, f"{key}.{part}", f"{model.name} has no {PART_NAMES[part]} (its parts: {', '.join(parts)})")
        _check_format(storage_format, file, f"{key}.{part}")
    missing = [part for part in parts if part not in node]
    if missing:
        raise SpecError(file, key, f"no format for the {PART_NAMES[missing[0]]} (give every part of {', '.join(parts)})")
    return WeightFormats(**{part: node.get(part) for part in WEIGHT_PARTS})


def _links(document: Mapping, reader: QuantityReader) -> dict[str, Link]:
    links = {}
    for link_id, entry in document["links"].items():
        bandwidth = reader.quantity(entry["bandwidth"], f"links.{link_id}.bandwidth", "bytes/s")
        links[link_id] = Link(link_id, entry["name"], bandwidth.value, MappingProxyType({"bandwidth": bandwidth}))
    return links


def _assumptions(document: Mapping, reader: QuantityReader) -> Assumptions:
    prov, values = {}, {}
    for name, node in document["assumptions"].items():
        key = f"assumptions.{name}"
        if isinstance(node["value"], str):
            if name.endswith("dtype") or name == "compute_precision":
                _check_format(node["value"], reader.file, f"{key}.value")
            if name == "engine" and node["value"] not in ENGINES:
                raise SpecError(reader.file, f"{key}.value", f"engine {node['value']!r} is not one of {', '.join(ENGINES)}")
            if name in ASSUMPTION_DIMENSIONS and (name not in COMPUTED_BY_SGLANG or node["value"] != AUTO):
                computed = f" (only {' and '.join(COMPUTED_BY_SGLANG)} may be {AUTO!r})" if node["value"] == AUTO else ""
                raise SpecError(reader.file, f"{key}.value", f"{node['value']!r} is not a number{computed}")
            values[name] = node["value"]
            prov[name] = Sourced(node["value"], node["value"], node.get("unit", ""), reader.source(node["source"], f"{key}.source"), reader.evidence)
        else:
            quantity = {"value": node["value"], "unit": node.get("unit", "ratio"), "source": node["source"]}
            if name not in ASSUMPTION_DIMENSIONS:
                raise SpecError(reader.file, key, f"not an assumption kvwall uses (known: {', '.join(ASSUMPTION_DIMENSIONS)})")
            prov[name] = reader.quantity(quantity, key, ASSUMPTION_DIMENSIONS[name])
            values[name] = prov[name].value
    return Assumptions(
        tokens_per_k=values["tokens_per_k"],
        weight_dtype=values["weight_dtype"],
        kv_dtype=values["kv_dtype"],
        compute_precision=values["compute_precision"],
        state_dtype=values["state_dtype"],
        prefill_mfu=values["prefill_mfu"],
        attention_flops_at_full_context=bool(values["attention_flops_at_full_context"]),
        provenance=MappingProxyType(prov),
    )


def _workloads(document: Mapping, reader: QuantityReader) -> dict[str, Workload]:
    workloads = {}
    for workload_id, entry in document["workloads"].items():
        key = f"workloads.{workload_id}"
        prov = {"batch": reader.quantity(entry["batch"], f"{key}.batch", "count"),
                "context": reader.quantity(entry["context"], f"{key}.context", "tokens")}
        for name, dimension in (("shared_prefix", "tokens"), ("reuse_gap", "s")):
            if name in entry:
                prov[name] = reader.quantity(entry[name], f"{key}.{name}", dimension)
        if "shared_prefix" in prov and prov["shared_prefix"].value >= prov["context"].value:
            raise SpecError(reader.file, f"{key}.shared_prefix", "must be shorter than the context")
        workloads[workload_id] = Workload(
            id=workload_id,
            pattern=entry["pattern"],
            objective=entry["objective"],
            batch=int(prov["batch"].value),
            context=prov["context"].value,
            shared_prefix=prov["shared_prefix"].value if "shared_prefix" in prov else 0.0,
            reuse_gap=prov["reuse_gap"].value if "reuse_gap" in prov else None,
            provenance=MappingProxyType(prov),
        )
    return workloads


def _refuse_bytes_as_bits(entry: Mapping, file: str, key: str) -> None:
    """kv_bits is a width per element: in bit, never a size such as GB that would be read as bytes."""
    if "kv_bits" in entry and entry["kv_bits"]["unit"] != "bit":
        raise SpecError(file, f"{key}.kv_bits.unit", f"unit {entry['kv_bits']['unit']!r} is not understood here (expected 'bit')")


def _techniques(document: Mapping, reader: QuantityReader, baseline_bits: float) -> tuple[dict[str, Domain], dict[str, Technique]]:
    domains = {
        domain_id: Domain(domain_id, d["name"], d["mechanism"], d["scales"], d["lossless"], tuple(d["methods"]))
        for domain_id, d in document["domains"].items()
    }
    techniques = {}
    for technique_id, entry in document["techniques"].items():
        key = f"techniques.{technique_id}"
        if entry["domain"] not in domains and entry["domain"] != "baseline":
            raise SpecError(reader.file, f"{key}.domain", f"domain {entry['domain']!r} is not listed under 'domains'")
        reader.source(entry["source"], f"{key}.source")  # listed, also where no quantity of the entry cites it
        prov = {}
        _refuse_bytes_as_bits(entry, reader.file, key)
        for name, dimension in (("kv_bits", "bytes"), ("retention", "ratio"), ("fragmentation", "ratio"), ("codec", "ratio")):
            if name in entry:
                prov[name] = reader.quantity(entry[name], f"{key}.{name}", dimension, entry["source"])
        techniques[technique_id] = Technique(
            id=technique_id,
            name=entry["name"],
            domain=entry["domain"],
            kv_bits=8.0 * prov["kv_bits"].value if "kv_bits" in prov else baseline_bits,
            retention=prov["retention"].value if "retention" in prov else 1.0,
            sharing_workload=entry.get("sharing_workload"),
            fragmentation=prov["fragmentation"].value if "fragmentation" in prov else 0.0,
            codec=prov["codec"].value if "codec" in prov else 1.0,
            lossless=entry["lossless"],
            provenance=MappingProxyType(prov),
        )
    return domains, techniques


def _configurations(document: Mapping, reader: QuantityReader) -> tuple[int, tuple[float, ...], tuple[Configuration, ...]]:
    node = document["configurations"]
    batch = reader.quantity(node["batch"], "configurations.batch", "count", node["source"])
    contexts = tuple(
        reader.quantity(c, f"configurations.contexts[{i}]", "tokens", node["source"]).value for i, c in enumerate(node["contexts"])
    )
    rows, seen = [], {}
    for i, row in enumerate(node["rows"]):
        if row["id"] in seen:
            raise SpecError(reader.file, f"configurations.rows[{i}].id", f"{row['id']!r} is given twice (rows {seen[row['id']]} and {i})")
        seen[row["id"]] = i
        _refuse_bytes_as_bits(row, reader.file, f"configurations.rows[{i}]")
        bits = reader.quantity(row["kv_bits"], f"configurations.rows[{i}].kv_bits", "bytes", node["source"])
        rows.append(Configuration(row["id"], row["name"], 8.0 * bits.value, float(row["retention"]["value"])))
    return int(batch.value), contexts, tuple(rows)


def _check_new_ids(existing: Mapping, added: Mapping, file: str | Path, collection: str, where: str) -> None:
    for item_id in added:
        if item_id in existing:
            raise SpecError(file, f"{collection}.{item_id}", f"id already defined in {where}")


def load_user_specs(path: str | Path, catalog: Catalog) -> Catalog:
    """Add the devices and models of a user's own YAML file (same format as config/) to a catalogue."""
    document = read_yaml(path)
    if not isinstance(document, dict) or not ({"devices", "models"} & set(document)):
        raise SpecError(path, "", "a spec file must have a 'devices' or a 'models' section (format of config/devices.yaml, config/models.yaml)")
    unknown = set(document) - {"evidence", "sources", "devices", "models"}
    if unknown:
        raise SpecError(path, sorted(unknown)[0], "unknown section (expected evidence, sources, devices, models)")
    devices, models = dict(catalog.devices), dict(catalog.models)
    device_files = dict(catalog.device_files)
    for collection, builder, target in (("devices", _devices, devices), ("models", _models, models)):
        if collection in document:
            part = {k: document[k] for k in ("evidence", "sources", collection) if k in document}
            validate(part, collection, path)
            added = builder(part, QuantityReader(path, part, part["evidence"]))
            _check_new_ids(target, added, path, collection, catalog.files[collection])
            target.update(added)
            if collection == "devices":
                device_files.update({device_id: str(path) for device_id in added})
    models = bind_state_dtype(models, catalog.assumptions.state_bytes_per_element, catalog.assumptions.provenance["state_dtype"])
    files = dict(catalog.files)
    return Catalog(
        devices=MappingProxyType(devices), models=MappingProxyType(models), links=catalog.links, domains=catalog.domains,
        techniques=catalog.techniques, workloads=catalog.workloads, assumptions=catalog.assumptions,
        evaluation=catalog.evaluation, files=MappingProxyType(files), device_files=MappingProxyType(device_files),
    )


def load_catalog(config_dir: str | Path = "config") -> Catalog:
    """Load and cross-check every spec file of a config directory."""
    config_dir = Path(config_dir)
    paths = {name: config_dir / file for name, file in SPEC_FILES.items()}
    docs = {name: _load(path, name) for name, path in paths.items()}
    devices = _devices(*docs["devices"])
    if (config_dir / DEVICE_ASSUMPTIONS_FILE).is_file():
        paths["device_assumptions"] = config_dir / DEVICE_ASSUMPTIONS_FILE
        devices = with_assumptions(devices, *_load(paths["device_assumptions"], "device_assumptions"))
    models = _models(*docs["models"])
    links = _links(*docs["links"])
    assumptions = _assumptions(*docs["assumptions"])
    models = bind_state_dtype(models, assumptions.state_bytes_per_element, assumptions.provenance["state_dtype"])
    workloads = _workloads(*docs["workloads"])
    domains, techniques = _techniques(*docs["techniques"], baseline_bits=assumptions.kv_bits)
    batch, contexts, rows = _configurations(*docs["techniques"])

    evaluation_node = docs["workloads"][0]["evaluation"]
    for name, collection in (("model", models), ("device", devices)):
        if evaluation_node[name] not in collection:
            raise SpecError(paths["workloads"], f"evaluation.{name}", f"{name} {evaluation_node[name]!r} does not exist in {paths[name + 's']} ({known_ids(evaluation_node[name], collection)})")
    for technique_id, technique in techniques.items():
        if technique.sharing_workload is not None:
            workload = workloads.get(technique.sharing_workload)
            if workload is None or not workload.shared_prefix:
                raise SpecError(paths["techniques"], f"techniques.{technique_id}.sharing_workload",
                                f"workload {technique.sharing_workload!r} does not exist in {paths['workloads']} or has no shared_prefix")
    evaluation = Evaluation(evaluation_node["model"], evaluation_node["device"], evaluation_node["placement"], batch, contexts, rows)
    return Catalog(
        devices=MappingProxyType(devices), models=MappingProxyType(models), links=MappingProxyType(links),
        domains=MappingProxyType(domains), techniques=MappingProxyType(techniques), workloads=MappingProxyType(workloads),
        assumptions=assumptions, evaluation=evaluation,
        files=MappingProxyType({**{k: str(v) for k, v in paths.items()}, "reported": str(config_dir / REPORTED_FOLDER)}),
    )


def known_ids(item_id, collection: Mapping) -> str:
    """The ids of ``collection``, the closest to ``item_id`` first where one is close: 'did you mean b200? known: ...'."""
    close = difflib.get_close_matches(str(item_id), list(collection), n=3)
    return f"did you mean {' or '.join(close)}? known: {', '.join(collection)}" if close else f"known: {', '.join(collection)}"


def _selection(value, collection: Mapping, key: str, file: str, where: str) -> tuple[str, ...]:
    if value == "all":
        return tuple(collection)
    for i, item_id in enumerate(value):
        if item_id not in collection:
            raise SpecError(file, f"{key}[{i}]", f"{item_id!r} does not exist in {where} ({known_ids(item_id, collection)})")
    return tuple(value)


def load_workflow_config(config: Mapping, catalog: Catalog, file: str = "config/config.yaml") -> dict:
    """Validate the workflow configuration and resolve its selections ('all' or lists of ids) against the catalogue."""
    validate(config, "config", file)
    tables = config["tables"]

    def pick(kind: str, key: str) -> tuple[str, ...]:
        table, field_name = key.split(".")
        value = tables[table][field_name]
        collection = catalog.models if kind == "models" else catalog.devices
        if isinstance(value, str) and value != "all":
            value = [value]
        return _selection(value, collection, f"tables.{key}", file, catalog.files[kind])

    def one(kind: str, key: str) -> str:
        """A single id ("all" names no one model or device)."""
        table, field_name = key.split(".")
        value = tables[table][field_name]
        collection = catalog.models if kind == "models" else catalog.devices
        if value not in collection:
            raise SpecError(file, f"tables.{key}", f"{value!r} does not exist in {catalog.files[kind]} ({known_ids(value, collection)})")
        return value

    return {
        "table1_models": pick("models", "table1.models"),
        "table3_devices": pick("devices", "table3.devices"),
        "table4_models": pick("models", "table4.models"),
        "table4_batches": tuple(tables["table4"]["batches"]),
        "capacity_models": pick("models", "capacity.models"),
        "capacity_devices": pick("devices", "capacity.devices"),
        "table8_model": one("models", "table8.model"),
        "reference_device": one("devices", "in_text.reference_device"),
        "spread_models": pick("models", "in_text.spread_models"),
    }
