"""Per-layer cache kinds of a models.yaml entry (``attention: {kind: layers, groups: [...]}``) as a LayerStack.

Each group names its kind (full, window, chunked, compressed, latent, state, none), its layer count and the dimensions
that size its cache, and optionally how it departs from the default: one tensor per KV head where keys double as
values (``kv_tensors: 1``), a sparse-attention indexer's keys (``index_head_dim``), the heads a state is split over
under TP (``state_heads``). The state dtype of state layers is an assumption (config/assumptions.yaml
``state_dtype``), bound when the catalogue is assembled.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.errors import SpecError
from kvwall.inputs.specs import (CHUNKED, COMPRESSED, FULL, KEY_VALUE_KINDS, LATENT, NONE, STATE, WINDOW, LayerGroup,
                                 LayerStack, Model, Sourced)

_HEADS = {"n_q_heads": "count", "n_kv_heads": "count", "head_dim": "count"}
#: The dimensions each kind needs, beside ``layers``, with the unit each is written in.
GROUP_FIELDS = {
    FULL: _HEADS,
    WINDOW: {**_HEADS, "span": "tokens"},
    CHUNKED: {**_HEADS, "span": "tokens"},
    COMPRESSED: {**_HEADS, "span": "tokens", "compress_ratio": "count"},
    LATENT: {"n_q_heads": "count", "kv_lora_rank": "count", "qk_rope_head_dim": "count"},
    STATE: {"state_elements": "count"},
    NONE: {},
}
#: The dimensions a kind may give, with their unit; absent, each takes LayerGroup's default.
OPTIONAL_GROUP_FIELDS = {
    FULL: {"kv_tensors": "count", "index_head_dim": "count"},
    WINDOW: {"kv_tensors": "count"},
    CHUNKED: {"kv_tensors": "count"},
    COMPRESSED: {"kv_tensors": "count", "index_head_dim": "count"},
    LATENT: {"index_head_dim": "count"},
    STATE: {"state_heads": "count"},
    NONE: {},
}
#: Fields held as floats (tokens and element counts); the rest are whole counts.
_FLOAT_FIELDS = ("span", "state_elements", "compress_ratio")


def read_layers(node: Mapping, key: str, reader, default_source: str, provenance: dict, n_layers: int) -> LayerStack:
    """Build the LayerStack of one entry, recording each value's provenance under ``attention.groups[i].name``."""
    groups = []
    for i, group in enumerate(node["groups"]):
        where = f"{key}.attention.groups[{i}]"
        kind = group["kind"]
        fields = {"layers": "count", **GROUP_FIELDS[kind]}
        optional = OPTIONAL_GROUP_FIELDS[kind]
        unexpected = sorted(set(group) - set(fields) - set(optional) - {"kind"})
        if unexpected:
            expected = ", ".join([*fields, *optional])
            raise SpecError(reader.file, f"{where}.{unexpected[0]}", f"not a dimension of a {kind} layer (expected {expected})")
        values = {}
        for name, dimension in {**fields, **optional}.items():
            if name not in group:
                if name in optional:
                    continue
                raise SpecError(reader.file, where, f"missing required field {name!r} of a {kind} layer")
            sourced = reader.quantity(group[name], f"{where}.{name}", dimension, default_source)
            provenance[f"attention.groups[{i}].{name}"] = sourced
            values[name] = sourced.value if name in _FLOAT_FIELDS else int(sourced.value)
        if kind in KEY_VALUE_KINDS and values["n_q_heads"] % values["n_kv_heads"]:
            raise SpecError(reader.file, f"{where}.n_kv_heads", f"{values['n_kv_heads']} does not divide n_q_heads {values['n_q_heads']}")
        if values.get("kv_tensors", 2) not in (1, 2):
            raise SpecError(reader.file, f"{where}.kv_tensors", "2 (a key and a value) or 1 (keys double as values)")
        groups.append(LayerGroup(kind, **values))
    total = sum(g.layers for g in groups)
    if total != n_layers:
        raise SpecError(reader.file, f"{key}.attention.groups", f"the groups hold {total} layers, n_layers is {n_layers}")
    try:
        return LayerStack(tuple(groups))
    except ValueError as err:
        raise SpecError(reader.file, f"{key}.attention.groups", str(err)) from None


def bind_state_dtype(models: Mapping[str, Model], state_bytes_per_element: float, state_dtype: Sourced) -> dict[str, Model]:
    """Give every stack with state layers the assumed state dtype, recorded in its provenance."""
    bound = {}
    for model_id, model in models.items():
        if isinstance(model.attention, LayerStack) and model.attention.state_elements:
            attention = replace(model.attention, state_bytes_per_element=state_bytes_per_element)
            model = replace(model, attention=attention, provenance=MappingProxyType({**model.provenance, "state_dtype": state_dtype}))
        bound[model_id] = model
    return bound
