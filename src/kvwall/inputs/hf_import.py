"""A published Hugging Face ``config.json`` as a config/models.yaml entry (``kvwall import``, ``--hf-config``).

The config's fields are read with their types checked (kvwall.inputs.hf_fields) and each architecture family's cache
layout and weights by kvwall.inputs.hf_layouts, as the family's reference implementation reads them; every value
keeps the config key it was read from as its source, and a default the config leaves out is stated as the
reference's. A multimodal wrapper's ``text_config`` is read. A model type kvwall does not name is read by the
convention its keys follow (kvwall.inputs.hf_keys), with one warning naming it, where every key it gives is read or
known not to matter. What cannot be modelled is refused with one ImportRefused naming the file, the key and the
reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from pathlib import Path
from typing import Any, Mapping

from kvwall.inputs.catalog import Catalog
from kvwall.inputs.errors import ImportRefused, SpecError
from kvwall.inputs.hf_fields import ConfigFields, Read
from kvwall.inputs.hf_keys import NOT_MODELLED, convention, refused_key, unknown_keys
from kvwall.inputs.hf_layouts import MODELLED_TYPES, Layout, family_of, read_layout
from kvwall.inputs.loader import load_user_specs
from kvwall.inputs.quantization import PartLayout, checkpoint_formats
from kvwall.inputs.reader import read_json
from kvwall.inputs.specs import Model, Sourced

__all__ = ["ImportRefused", "ImportedModel", "read_config", "load_imported", "entry_lines", "source_lines", "document_text"]

#: The longest id the catalogue accepts (the safe-name pattern of common.schema.yaml).
LONGEST_ID = 64


@dataclass
class ImportedModel:
    """A models.yaml entry (``entry``) with its source ids and texts, its derived parameter count, and notes."""

    model_id: str
    hf_id: str
    entry: dict
    sources: dict
    params_derived: float
    notes: list = field(default_factory=list)
    model_type: str = ""  # the language model's architecture, as the config names it
    convention: str = ""  # the family and the reading it was read by (kvwall.inputs.hf_keys)
    warnings: list = field(default_factory=list)  # one line where an unnamed architecture is read by convention
    unread: list = field(default_factory=list)  # its keys in no table of kvwall.inputs.hf_keys


def hf_id_from_path(path: str | Path) -> str | None:
    """``org/model`` from a file named ``org--model_config.json``; None for a plain config.json."""
    match = re.fullmatch(r"([^/]+?)--(.+)_config\.json", Path(path).name)
    return f"{match[1]}/{match[2]}" if match else None


def model_id_from_hf(hf_id: str) -> str:
    """A catalogue id from a Hugging Face address: the model name lowercased, a leading 'Meta-' dropped, fitted to
    the catalogue's longest id (fitted_id)."""
    name = hf_id.split("/")[-1].lower()
    return fitted_id(re.sub(r"^meta-", "", name).replace("_", "-"))


def fitted_id(name: str, suffix: str = "") -> str:
    """``name`` + ``suffix`` as a safe id of at most LONGEST_ID characters: where it is longer, ``name`` is cut and
    ends in six hex digits of its hash, so that two long names stay apart."""
    if len(name) + len(suffix) <= LONGEST_ID:
        return name + suffix
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    keep = LONGEST_ID - len(suffix) - len(digest) - 1
    return f"{name[:keep].rstrip('.-_')}-{digest}{suffix}"


def _read_json(path: Path) -> dict:
    """A config file through the hardened reader (kvwall.inputs.reader): a JSON object, or one ImportRefused."""
    try:
        document = read_json(path, constants=True)
    except SpecError as err:
        raise ImportRefused(path, err.key or "(file)", err.reason) from None
    if not isinstance(document, dict):
        raise ImportRefused(path, "(file)", "not a JSON object")
    return document


def _language_model(path: Path, config: dict) -> tuple[dict, str, str, str, str, list[str]]:
    """The language model's keys (a multimodal wrapper's ``text_config``), their prefix, model type, the family
    it is read as and the reading (its family's own, or a convention), and the warning where its model type is not one kvwall names: such a config is read
    by the convention its keys follow (kvwall.inputs.hf_keys) unless one of its keys could change the cache and is
    not understood, which is refused by name."""
    if config.get("text_config") is not None and not isinstance(config["text_config"], dict):
        raise ImportRefused(path, "text_config", f"must be an object (got {type(config['text_config']).__name__})")
    text, prefix = (config["text_config"], "text_config.") if isinstance(config.get("text_config"), dict) else (config, "")
    model_type = text.get("model_type") or config.get("model_type")
    if not isinstance(model_type, str):
        raise ImportRefused(path, prefix + "model_type", f"must name the architecture (got {model_type!r})")
    for key, why in NOT_MODELLED.items():
        if text.get(key) is not None:
            raise ImportRefused(path, prefix + key, why)
    if model_type in MODELLED_TYPES:
        return text, prefix, model_type, family_of(model_type), family_of(model_type), []
    refused = refused_key(text)
    if refused is not None:
        raise ImportRefused(path, prefix + refused[0], f"{refused[1]} (model_type {model_type!r} is not one kvwall "
                                                       "names, so each key must be read by convention)")
    family, names = convention(text)
    warning = (f"model_type {model_type!r} is not one kvwall names: read as a {family} model by {names}, "
               "every key read or known not to matter")
    return text, prefix, model_type, family, f"{family} by {names}", [warning]


def read_config(path: str | Path, quant_path: str | Path | None = None, hf_id: str | None = None,
                model_id: str | None = None) -> ImportedModel:
    """Import one config.json (and a quantized checkpoint's hf_quant_config.json) as a models.yaml entry."""
    path = Path(path)
    config = _read_json(path)
    if "quantization" in config and "model_type" not in config:
        raise ImportRefused(path, "quantization", "a quantization companion, not a model config (give it with its config.json)")
    hf_id = hf_id or hf_id_from_path(path)
    if hf_id is None:
        raise ImportRefused(path, "(file name)", "no Hugging Face id: name the file org--model_config.json or give --hf-id")
    if quant_path is None:
        candidate = path.with_name(path.name.replace("_config.json", "_hf_quant_config.json"))
        quant_path = candidate if candidate.exists() and candidate != path else None
    quant = _read_json(Path(quant_path)) if quant_path else None
    text, prefix, model_type, family, read_as, warnings = _language_model(path, config)
    f = ConfigFields(path, text, prefix)
    model_id = model_id or model_id_from_hf(hf_id)

    given_layers = f.count("num_hidden_layers") if f.has("num_hidden_layers") else None
    d, n_q, V = f.read("hidden_size"), f.read("num_attention_heads"), f.read("vocab_size")
    if given_layers is None and family != "mamba hybrid":
        f.count("num_hidden_layers")  # refuses: the count is needed
    layout = read_layout(f, model_type, family, given_layers, d.value, n_q.value)
    L = layout.n_layers or f.read("num_hidden_layers")
    tied = _tied(path, config, text)
    params = layout.layer_params + (1 if tied else 2) * V.value * d.value

    entry: dict = {"name": hf_id.split("/")[-1], "hf_id": hf_id, "source": model_id}
    notes = [*warnings, *layout.notes]
    moe = layout.moe.fields if layout.moe is not None else None
    ffn_only = sum(int(g.fields["layers"].value) for g in layout.groups if g.kind == "none")
    parts = PartLayout.of(int(L.value), int(moe["dense_layers"].value) if moe else None,
                          bool(moe and moe["shared_experts"].value), tied, ffn_only,
                          int(moe["dense_beside"].value) if moe and "dense_beside" in moe else 0)
    formats = checkpoint_formats(path, config, quant, parts)
    entry["weight_format"] = formats.entry
    if formats.kv is not None:
        entry["kv_format"] = formats.kv
    notes.append(f"weight_format read from {formats.read_from}")
    notes += formats.notes
    entry["attention"] = layout.attention
    entry["n_layers"] = L
    entry["n_q_heads"] = n_q
    entry["n_kv_heads"] = layout.n_kv_heads
    entry["head_dim"] = layout.head_dim
    entry["hidden_size"] = d
    entry["intermediate_size"] = layout.intermediate_size
    entry["vocab_size"] = V
    if f.has("max_position_embeddings"):
        entry["max_context"] = f.read("max_position_embeddings")
    if tied:
        entry["tied_embeddings"] = True
    if layout.moe is not None:
        entry["moe"] = dict(layout.moe.fields)
    sources = _Sources(model_id, f"https://huggingface.co/{hf_id}/blob/main/config.json", prefix)
    entry = sources.cite(entry, layout)
    return ImportedModel(model_id, hf_id, entry, sources.texts, float(params), notes, model_type, read_as, warnings,
                         unknown_keys(text))


def _tied(path: Path, config: Mapping, text: Mapping) -> bool:
    value = config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
    if value is not None and not isinstance(value, bool):
        raise ImportRefused(path, "tie_word_embeddings", f"must be true or false (got {value!r})")
    return bool(value)


#: The unit each entry field is written in (counts otherwise).
_TOKEN_FIELDS = ("window", "span", "max_context")


class _Sources:
    """The source id and text of every number of an entry: ``model.key`` citing the config key it was read from."""

    def __init__(self, model_id: str, url: str, prefix: str):
        self.model_id, self.url, self.prefix = model_id, url, prefix
        self.texts: dict[str, str] = {model_id: url}

    def source(self, read: Read) -> str:
        if "-" in read.key:  # the name of a value computed from keys, not a key
            sid, text = fitted_id(self.model_id, f".{read.key}"), f"{self.url}: {read.formula}"
        else:
            sid = fitted_id(self.model_id, "." + (self.prefix + read.key).replace("_", "-"))
            if read.absent:
                text = f"{self.url}: {self.prefix}{read.key} absent ({read.formula})"
            else:
                text = f"{self.url}: {self.prefix}{read.formula or read.key}"
        if self.texts.setdefault(sid, text) != text:
            raise ValueError(f"source {sid} cited for two readings: {self.texts[sid]!r} and {text!r}")
        return sid

    def quantity(self, name: str, read: Read) -> dict:
        value = read.value if isinstance(read.value, int) or not float(read.value).is_integer() else int(read.value)
        return {"value": value, "unit": "tokens" if name in _TOKEN_FIELDS else "count", "source": self.source(read)}

    def cite(self, entry: dict, layout: Layout) -> dict:
        """The entry with every Read as ``{value, unit, source}``; sources listed as the entry's numbers come: a
        derived head_dim first, the model's sizes, then the attention, its groups and the MoE."""
        if "-" in layout.head_dim.key:
            self.source(layout.head_dim)
        cited = {name: self.quantity(name, value) if isinstance(value, Read) else value for name, value in entry.items()}
        attention = entry["attention"]
        cited["attention"] = {k: self.quantity(k, v) if isinstance(v, Read) else v for k, v in attention.items()}
        if attention["kind"] == "layers":
            cited["attention"]["groups"] = [{"kind": g.kind, **{k: self.quantity(k, v) for k, v in g.fields.items()}}
                                            for g in layout.groups]
        if "moe" in entry:
            cited["moe"] = {k: self.quantity(k, v) for k, v in entry["moe"].items()}
        return cited


def _flow(node: Any) -> str:
    if isinstance(node, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in node.items()) + "}"
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, str):
        plain = node and node.isprintable() and not re.search(r"[:#{}\[\],\"'&*!|>%@`]|^\s|\s$", node)
        return node if plain else json.dumps(node)
    return repr(node)


def source_lines(imported: ImportedModel) -> list[str]:
    """The ``sources:`` lines of an imported entry, two-space indented."""
    return [f"  {sid}: {json.dumps(text)}" for sid, text in imported.sources.items()]


def entry_lines(imported: ImportedModel, params_nominal: float | None = None) -> list[str]:
    """The ``models:`` lines of an imported entry, two-space indented, with the derived count as a comment."""
    lines = [f"  {imported.model_id}:"]
    for note in imported.notes:
        lines.append(f"    # {note}")
    lines.append(f"    # derived parameter count {imported.params_derived / 1e9:.2f}e9 (kvwall import, from the config)")
    for name, value in imported.entry.items():
        if name == "attention" and value["kind"] == "layers":
            lines.append("    attention:")
            lines.append("      kind: layers")
            lines.append("      groups:")
            lines += [f"        - {_flow(group)}" for group in value["groups"]]
        else:
            lines.append(f"    {name}: {_flow(value)}")
    if params_nominal is None:
        lines.append("    # params_nominal: the model card's count is needed here (kvwall import --params-nominal --params-source)")
    else:
        lines.append(f"    params_nominal: {{value: {params_nominal / 1e9:g}e9, unit: count, source: {imported.model_id}.params-nominal}}")
    return lines


def document_text(models: list[tuple[ImportedModel, float | None, str | None]]) -> str:
    """A complete spec file (format of config/models.yaml) holding imported models, each with its nominal parameter
    count and that count's source where given."""
    sources, entries = [], []
    for imported, params_nominal, nominal_source in models:
        sources += source_lines(imported)
        if params_nominal is not None:
            sources.append(f"  {imported.model_id}.params-nominal: {json.dumps(nominal_source)}")
        entries += entry_lines(imported, params_nominal)
    return "\n".join(["evidence: spec", "sources:", *sources, "models:", *entries, ""])


def load_imported(catalog: Catalog, imported: ImportedModel, params_nominal: float | None, nominal_source: str | None,
                  path: str | Path) -> Model:
    """The Model an imported entry loads as, its parameter count derived where no nominal one is given (and so of
    class derived); an entry the loader refuses is reported against the config file."""
    if params_nominal is None:
        params_nominal, nominal_source = imported.params_derived, f"derived by kvwall from {path} (no nominal count given)"
    if imported.model_id in catalog.models:
        imported = replace(imported, model_id=fitted_id(imported.model_id, ".hf"))
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "imported.yaml"
        spec.write_text(document_text([(imported, params_nominal, nominal_source)]), encoding="utf-8")
        try:
            model = load_user_specs(spec, catalog).models[imported.model_id]
        except SpecError as err:
            raise SpecError(path, err.key, err.reason) from None
    if nominal_source.startswith("derived by kvwall"):
        given = model.provenance["params_nominal"]
        derived = Sourced(given.value, given.given, given.unit, given.source, "derived")
        model = replace(model, provenance=MappingProxyType({**model.provenance, "params_nominal": derived}))
    return model
