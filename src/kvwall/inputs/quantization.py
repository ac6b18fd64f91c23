"""The storage format of each part of a checkpoint's weights, and its KV cache format, from its quantization config.

Read from a ModelOpt ``hf_quant_config.json`` (``quantization``: ``quant_algo``, ``exclude_modules``, per-module
``quantized_layers`` under ``MIXED_PRECISION``, ``kv_cache_quant_algo``) or the config's ``quantization_config``
(transformers' ``quant_method: fp8`` or ``mxfp4`` with ``modules_to_not_convert``; compressed-tensors and ModelOpt
``config_groups`` with ``num_bits``, ``type`` and ``group_size``, and ``ignore``; ``kv_cache_scheme``); without either,
every part is in ``torch_dtype``. An exclusion names modules by glob (``model.layers.*.self_attn``), by regular
expression (``re:.*shared_experts.*``) or by name; each is read as the parts it names (attention or mixing layers,
dense MLP, shared experts, routed experts, router, embedding, LM head) in the layers it names, and a part is kept
unquantized where the list names it in every layer that has it.

Conventions, as the engines and the checkpoints of the corpus have them: the embedding (a lookup table, not a linear
layer), the router and the LM head stay unquantized unless a per-module list quantizes them (transformers never
converts the output head, get_keys_to_not_convert; every corpus checkpoint excludes its router or keeps it outside
its linear layers). A part the list names only in part (some projections, some layers) keeps the quantized format,
so the weight bytes stay a lower bound, and the answer says so.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from kvwall.inputs.errors import ImportRefused
from kvwall.inputs.specs import (ATTENTION, DENSE_MLP, EMBEDDING, EXPERTS, LM_HEAD, PART_NAMES, ROUTER, SHARED_EXPERTS,
                                 WEIGHT_PARTS)
from kvwall.units import DTYPE_BYTES

#: Quantization algorithms (ModelOpt quant_algo, kv_cache_quant_algo) as kvwall.units names their formats.
ALGORITHMS = {"FP8": "fp8", "FP8_BLOCK": "fp8", "NVFP4": "fp4", "W4A16_NVFP4": "fp4", "MXFP4": "mxfp4", "INT8": "int8"}
#: transformers' quant_method values that quantize every linear layer not excluded to one format.
METHODS = {"fp8": "fp8", "mxfp4": "mxfp4"}
#: Unquantized dtypes (torch_dtype) as kvwall.units names them.
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
#: Parts that stay unquantized unless a per-module list quantizes them.
NEVER_CONVERTED = (EMBEDDING, ROUTER, LM_HEAD)
#: Modules an exclusion list may name that belong to no part kvwall prices: norms, biases of norms, the
#: multi-token-prediction head, vision towers and projectors.
UNPRICED = re.compile(r"norm|eh_proj|mtp|vision|visual|mm_projector|embed_vision")
#: Output projections: an attention exclusion that names one of them with the others names the whole attention.
OUTPUT_PROJECTIONS = ("o_proj", "out_proj", "wo", "dense")


def _refused(file, key: str, reason: str):
    return ImportRefused(file, key, reason)


@dataclass(frozen=True)
class PartLayout:
    """What the importer knows of a model's layers: how many there are, how many hold each part, and which parts the
    model has (kvwall.inputs.specs.Model.weight_parts)."""

    n_layers: int
    dense_layers: int  # the first layers whose MLP is dense (every layer of a dense model)
    parts: tuple[str, ...]
    part_layers: Mapping[str, int]  # layers holding each layered part

    @classmethod
    def of(cls, n_layers: int, dense_layers: int | None, shared: bool, tied: bool, ffn_only_layers: int = 0,
           dense_beside: int = 0) -> "PartLayout":
        """The layout of a dense model (``dense_layers`` None) or an MoE one, ``dense_beside`` of its MoE layers with
        a dense MLP beside the experts; a hybrid stack's ``ffn_only_layers`` hold its MLPs, its other layers its
        attention or state."""
        moe = dense_layers is not None
        dense = n_layers if not moe else (ffn_only_layers - (n_layers - dense_layers) if ffn_only_layers else dense_layers)
        mixing = n_layers - ffn_only_layers
        counts = {ATTENTION: mixing, DENSE_MLP: dense + dense_beside}
        if moe:
            counts.update({EXPERTS: n_layers - dense_layers, ROUTER: n_layers - dense_layers})
            if shared:
                counts[SHARED_EXPERTS] = n_layers - dense_layers
        absent = {part for part in (DENSE_MLP,) if not dense} | ({LM_HEAD} if tied else set())
        parts = tuple(p for p in WEIGHT_PARTS if (p in counts or p in (EMBEDDING, LM_HEAD)) and p not in absent)
        return cls(n_layers, dense_layers if moe else n_layers, parts, counts)


@dataclass(frozen=True)
class CheckpointFormats:
    """The format of every part a model has, the KV format the checkpoint states (None where it states none),
    where they were read, and what a reader should know (parts named only in part)."""

    weights: dict[str, str]
    kv: str | None
    read_from: str
    notes: tuple[str, ...] = field(default=())

    @property
    def entry(self) -> str | dict[str, str]:
        """The models.yaml ``weight_format``: one name where every part shares it, else a mapping by part."""
        formats = set(self.weights.values())
        return formats.pop() if len(formats) == 1 else dict(self.weights)


def _dtype(config: Mapping, file) -> str:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    for node, prefix in ((config, ""), (text, "text_config.")):
        for key in ("torch_dtype", "dtype"):
            name = node.get(key)
            if name and not isinstance(name, str):
                raise _refused(file, prefix + key, f"must be a dtype name (got {type(name).__name__})")
            if name:
                return DTYPES.get(name, name)
    return DTYPES["bfloat16"]


def _mapping(node, file, key: str) -> Mapping:
    """An object the config gives at ``key`` (an absent one is empty), refused unless it is an object."""
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise _refused(file, key, f"must be an object (got {type(node).__name__})")
    return node


def _text_of(node, file, key: str) -> str:
    """A name the config gives at ``key``, refused unless it is a text."""
    if not isinstance(node, str):
        raise _refused(file, key, f"must be a name (got {type(node).__name__} {str(node)[:40]!r})")
    return node


def _algorithm(name, file, key: str) -> str:
    if str(name).upper() not in ALGORITHMS:
        raise _refused(file, key, f"quantization algorithm {name!r} is not read (known: {', '.join(ALGORITHMS)})")
    return ALGORITHMS[str(name).upper()]


def _group_format(weights: Mapping, file, key: str) -> str:
    """A compressed-tensors weights scheme as a storage format: float 8 -> fp8, float 4 -> fp4 (NVFP4), int 8 -> int8,
    symmetric int 4 in groups of 32 or 128 -> int4-g32, int4-g128."""
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    if (kind, bits) == ("float", 8):
        return "fp8"
    if (kind, bits) == ("float", 4):
        return "fp4"
    if (kind, bits) == ("int", 8):
        return "int8"
    if (kind, bits) == ("int", 4) and weights.get("symmetric", True) and f"int4-g{weights.get('group_size')}" in DTYPE_BYTES:
        return f"int4-g{weights['group_size']}"
    raise _refused(file, key, f"weights of {bits} bits, type {kind!r}, group {weights.get('group_size')!r}"
                              f"{'' if weights.get('symmetric', True) else ', asymmetric'} are not a format kvwall knows")


def _layers_named(token: str, layout: PartLayout) -> set[int] | None:
    """The layer indices a pattern's ``layers.<token>`` names (None: every layer); indices past the model's layers
    (a multi-token-prediction layer) are dropped."""
    if token in ("*", ".*", r"\d+", "[0-9]+"):
        return None
    return {i for i in range(layout.n_layers) if fnmatch.fnmatchcase(str(i), token)}


def _parts_named(rest: str) -> tuple[set[str], bool]:
    """The parts a module name or pattern (after its layer) names, and whether it names them whole: an attention
    only by its container (``self_attn``) or with its output projection, any other part by any of its modules."""
    if UNPRICED.search(rest):
        return set(), False
    if re.search(r"shared_expert", rest):
        return {SHARED_EXPERTS}, True
    if re.search(r"experts", rest):
        return {EXPERTS}, True
    if re.search(r"(^|\.)(gate|router)($|\.|\*)|e_score_correction_bias", rest):
        return {ROUTER}, True
    if re.search(r"self_attn|linear_attn|(^|\.|\*)attn($|\.|\*)|mixer|attention", rest):
        container = re.search(r"(self_attn|linear_attn|attn|mixer|attention)(\*|\.\*|\.\*\*)?$", rest) is not None
        return {ATTENTION}, container or any(p in rest for p in OUTPUT_PROJECTIONS)
    if re.search(r"mlp|ffn|gate_proj|up_proj|down_proj|w1|w2|w3", rest):
        return {DENSE_MLP}, True
    return set(), False


def _named(pattern: str, layout: PartLayout) -> list[tuple[str, set[int] | None, bool]]:
    """(part, layers or None for all, whole) for every part an exclusion or a quantized-module name names."""
    text = pattern[3:] if pattern.startswith("re:") else pattern
    if UNPRICED.search(text):
        return []
    if re.fullmatch(r"(.*\.)?(lm_head|head)\*?", text) or text in ("lm_head", "head"):
        return [(LM_HEAD, None, True)]
    if re.search(r"embed_tokens|word_embeddings|(^|\.)wte($|\.)", text):
        return [(EMBEDDING, None, True)]
    match = re.search(r"layers\.(\\d\+|\[0-9\]\+|[^.]+?)(\*?)(\..*|\*)?$", text)
    if match is None:
        parts, whole = _parts_named(text)
        return [(part, None, whole) for part in parts]
    token = match[1] + match[2]
    rest = (match[3] or "").lstrip(".")
    layers = _layers_named(token, layout)
    if layers is not None and not layers:
        return []
    if rest in ("", "*"):  # a whole layer: every part it holds
        chosen = layers if layers is not None else set(range(layout.n_layers))
        dense = {i for i in chosen if i < layout.dense_layers}
        moe = chosen - dense
        found = [(ATTENTION, chosen, True)]
        found += [(DENSE_MLP, dense, True)] if dense else []
        found += [(part, moe, True) for part in (EXPERTS, ROUTER, SHARED_EXPERTS) if moe and part in layout.parts]
        return found
    parts, whole = _parts_named(rest)
    return [(part, layers, whole) for part in parts]


def _excluded(patterns, layout: PartLayout, file, key: str) -> tuple[set[str], list[str]]:
    """The parts an exclusion list keeps unquantized, and a note per part it names only in part."""
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise _refused(file, key, "must be a list of module names or patterns")
    layers: dict[str, set[int]] = {}
    everywhere, partial = set(), set()
    for pattern in patterns:
        for part, named, whole in _named(pattern, layout):
            if part not in layout.parts:
                continue
            if not whole:
                partial.add(part)
                continue
            if named is None:
                everywhere.add(part)
            else:
                layers.setdefault(part, set()).update(named)
    excluded = everywhere | {part for part, named in layers.items()
                             if len(named) >= layout.part_layers.get(part, layout.n_layers)}
    def which(part: str) -> str:
        return " and ".join(what for what, named in (("modules", part in partial), ("layers", part in layers)) if named)

    notes = [f"{key} names the {PART_NAMES[part]} only in part (some of its {which(part)}); kvwall holds one format "
             "per part and keeps the quantized one, so its weight bytes stay a lower bound"
             for part in WEIGHT_PARTS if part in layout.parts and part not in excluded and (part in partial or part in layers)]
    return excluded, notes


def _per_module(quantized: Mapping, layout: PartLayout, file, key: str) -> tuple[dict[str, str], list[str]]:
    """The format of each part a MIXED_PRECISION ``quantized_layers`` map quantizes (its narrowest, noted where the
    part's modules differ)."""
    found: dict[str, set[str]] = {}
    for module, scheme in _mapping(quantized, file, key).items():
        algorithm = _algorithm(scheme.get("quant_algo") if isinstance(scheme, dict) else None, file, f"{key}.{module}.quant_algo")
        for part, _, _ in _named(module, layout):
            found.setdefault(part, set()).add(algorithm)
    formats, notes = {}, []
    for part, names in found.items():
        if part not in layout.parts:
            continue
        formats[part] = min(names, key=lambda f: DTYPE_BYTES[f])
        if len(names) > 1:
            notes.append(f"{key}: the {PART_NAMES[part]} is stored as {', '.join(sorted(names))} in different modules; "
                         f"kvwall keeps the narrowest, {formats[part]}")
    return formats, notes


def _kv(quant: Mapping | None, q: Mapping | None, file) -> tuple[str | None, str | None]:
    """The KV cache format a checkpoint states, and the key it was read from."""
    if quant is not None and _mapping(quant.get("quantization"), file, "hf_quant_config.json: quantization").get("kv_cache_quant_algo"):
        return (_algorithm(quant["quantization"]["kv_cache_quant_algo"], file, "quantization.kv_cache_quant_algo"),
                "hf_quant_config.json: quantization.kv_cache_quant_algo")
    if isinstance(q, dict):
        if q.get("kv_cache_quant_algo"):
            return _algorithm(q["kv_cache_quant_algo"], file, "quantization_config.kv_cache_quant_algo"), \
                "quantization_config.kv_cache_quant_algo"
        scheme = q.get("kv_cache_scheme")
        if isinstance(scheme, str):
            return _algorithm(scheme, file, "quantization_config.kv_cache_scheme"), "quantization_config.kv_cache_scheme"
        if isinstance(scheme, dict):
            return _group_format(scheme, file, "quantization_config.kv_cache_scheme"), "quantization_config.kv_cache_scheme"
    return None, None


def checkpoint_formats(file: str | Path, config: Mapping, quant: Mapping | None, layout: PartLayout) -> CheckpointFormats:
    """Every part's storage format and the KV format of a checkpoint (module docstring)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    q = config.get("quantization_config") or text.get("quantization_config")
    if q is not None and not isinstance(q, dict):
        raise _refused(file, "quantization_config", f"must be an object (got {type(q).__name__})")
    base = _dtype(config, file)
    quantized, patterns, per_module, where = None, ([], ""), None, "torch_dtype"
    if quant is not None and _mapping(quant.get("quantization"), file, "hf_quant_config.json: quantization").get("quant_algo"):
        node, prefix = quant["quantization"], "hf_quant_config.json: quantization"
        where = f"{prefix}.quant_algo"
        if str(node["quant_algo"]).upper() == "MIXED_PRECISION":
            per_module = (node.get("quantized_layers") or {}, f"{prefix}.quantized_layers")
        else:
            quantized = _algorithm(node["quant_algo"], file, "quantization.quant_algo")
        patterns = (node.get("exclude_modules") or [], f"{prefix}.exclude_modules")
    elif isinstance(q, dict):
        prefix = "quantization_config"
        if str(q.get("quant_algo", "")).upper() == "MIXED_PRECISION":
            per_module, where = (q.get("quantized_layers") or {}, f"{prefix}.quantized_layers"), f"{prefix}.quant_algo"
        elif q.get("quant_algo"):
            quantized, where = _algorithm(q["quant_algo"], file, f"{prefix}.quant_algo"), f"{prefix}.quant_algo"
        elif q.get("config_groups"):
            groups = _mapping(q["config_groups"], file, f"{prefix}.config_groups")
            formats = {_group_format(_mapping(_mapping(g, file, f"{prefix}.config_groups.{name}").get("weights"), file,
                                              f"{prefix}.config_groups.{name}.weights"), file, f"{prefix}.config_groups.weights")
                       for name, g in groups.items()}
            if len(formats) > 1:
                raise _refused(file, f"{prefix}.config_groups", f"groups of different formats {sorted(formats)} are not read")
            quantized, where = formats.pop(), f"{prefix}.config_groups.weights.num_bits"
        elif _text_of(q.get("quant_method", ""), file, f"{prefix}.quant_method") in METHODS:
            quantized, where = METHODS[q["quant_method"]], f"{prefix}.quant_method"
        else:
            raise _refused(file, f"{prefix}.quant_method", f"quant_method {q.get('quant_method')!r} is not read")
        excluded_key = next((k for k in ("ignore", "modules_to_not_convert", "exclude_modules") if q.get(k)), None)
        patterns = (q.get(excluded_key) or [], f"{prefix}.{excluded_key}") if excluded_key else ([], "")
    notes = []
    excluded, partial_notes = _excluded(patterns[0], layout, file, patterns[1]) if patterns[0] else (set(), [])
    notes += partial_notes
    if per_module is not None:
        formats, module_notes = _per_module(per_module[0], layout, file, per_module[1])
        notes += module_notes
        weights = {part: base if part in excluded else formats.get(part, base) for part in layout.parts}
    elif quantized is not None:
        weights = {part: base if part in excluded or part in NEVER_CONVERTED else quantized for part in layout.parts}
    else:
        weights = {part: base for part in layout.parts}
    kv, kv_where = _kv(quant, q, file)
    read_from = where + (f"; KV from {kv_where}" if kv_where else "")
    return CheckpointFormats(weights, kv, read_from, tuple(notes))
