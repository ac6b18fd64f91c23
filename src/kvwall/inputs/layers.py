"""Per-layer cache kinds of a models.yaml entry (``attention: {kind: layers, groups: [...]}``) as a LayerStack.

Each group names its kind (full, window, chunked, latent, state, none), its layer count and the dimensions that size its
cache; the state dtype of state layers is an assumption (config/assumptions.yaml ``state_dtype``), bound when the
catalogue is assembled.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Mapping

from kvwall.inputs.specs import CHUNKED, FULL, LATENT, NONE, STATE, WINDOW, LayerGroup, LayerStack, Model, Sourced

#: The dimensions each kind needs, beside ``layers``, with the unit each is written in.
GROUP_FIELDS = {
    FULL: {"n_q_heads": "count", "n_kv_heads": "count", "head_dim": "count"},
    WINDOW: {"n_q_heads": "count", "n_kv_heads": "count", "head_dim": "count", "span": "tokens"},
    CHUNKED: {"n_q_heads": "count", "n_kv_heads": "count", "head_dim": "count", "span": "tokens"},
    LATENT: {"n_q_heads": "count", "kv_lora_rank": "count", "qk_rope_head_dim": "count"},
    STATE: {"state_elements": "count"},
    NONE: {},
}


def read_layers(node: Mapping, key: str, reader, default_source: str, provenance: dict, n_layers: int) -> LayerStack:
    """Build the LayerStack of one entry, recording each value's provenance under ``attention.groups[i].name``."""
    from kvwall.inputs.loader import SpecError

    groups = []
    for i, group in enumerate(node["groups"]):
        where = f"{key}.attention.groups[{i}]"
        kind = group["kind"]
        fields = {"layers": "count", **GROUP_FIELDS[kind]}
        unexpected = sorted(set(group) - set(fields) - {"kind"})
        if unexpected:
            raise SpecError(reader.file, f"{where}.{unexpected[0]}", f"not a dimension of a {kind} layer (expected {', '.join(fields)})")
        values = {}
        for name, dimension in fields.items():
            if name not in group:
                raise SpecError(reader.file, where, f"missing required field {name!r} of a {kind} layer")
            sourced = reader.quantity(group[name], f"{where}.{name}", dimension, default_source)
            provenance[f"attention.groups[{i}].{name}"] = sourced
            values[name] = sourced.value if name in ("span", "state_elements") else int(sourced.value)
        if kind in (FULL, WINDOW, CHUNKED) and values["n_q_heads"] % values["n_kv_heads"]:
            raise SpecError(reader.file, f"{where}.n_kv_heads", f"{values['n_kv_heads']} does not divide n_q_heads {values['n_q_heads']}")
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
