"""The corpus of published configs (tests/fixtures/hf-configs) as `kvwall import` reads them: one row per config with
its family, the reading it was read by, cache kinds, KV bytes per token at 8k and 1M tokens, constant state and
parameters against the count its model card publishes (config/published_params.yaml), the keys it holds that no table
of kvwall.inputs.hf_keys names, or the reason it is refused."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from kvwall.inputs.errors import ImportRefused, SpecError
from kvwall.inputs.hf_import import hf_id_from_path, load_imported, read_config
from kvwall.model.footprint import kv_bytes
from kvwall.render import Column, Table, keyed

if TYPE_CHECKING:
    from kvwall.inputs.catalog import Catalog
    from kvwall.inputs.specs import LayerGroup, Model, Sourced

#: The contexts the table gives bytes per token at: 8k and 1M tokens.
CONTEXTS = {"kv_8k": 8192.0, "kv_1m": 1048576.0}


def corpus_configs(folder: str | Path) -> list[Path]:
    """The model configs of a corpus folder (its hf_quant_config.json companions are read with them)."""
    return [p for p in sorted(Path(folder).glob("*_config.json")) if not p.name.endswith("_hf_quant_config.json")]


def _group(g: LayerGroup) -> str:
    """One group as layers x kind with what sizes it: 21 x compressed 128 + 1/4 (1 x 512, K=V) + index 128, a latent's
    index key with its bytes in the engines' format: 78 x latent 576 + index 128 (132 B)."""
    detail = {"window": f" {g.span:g}", "chunked": f" {g.span:g}", "latent": f" {g.latent_dim}",
              "compressed": f" {g.span:g} + 1/{g.compress_ratio:g}"}.get(g.kind, "")
    if g.kind in ("full", "window", "chunked", "compressed"):
        detail += f" ({g.n_kv_heads} x {g.head_dim}{', K=V' if g.kv_tensors == 1 else ''})"
    if g.index_head_dim:
        detail += f" + index {g.index_head_dim}" + (f" ({g.index_bytes_per_token / g.layers:g} B)" if g.kind == "latent" else "")
    return f"{g.layers} x {g.kind}{detail}"


def _row(model: Model, w_kv: float) -> dict:
    state = model.attention.state_bytes
    row = {name: (float(kv_bytes(model, s, w_kv)) - state) / s for name, s in CONTEXTS.items()}
    return {**row, "layers": " + ".join(_group(g) for g in model.attention.groups), "state": state}


@keyed("file")
def import_corpus(catalog: Catalog, configs: list[Path], published: Mapping[str, Sourced]) -> Table:
    """Every config of the corpus imported, or the key and reason it is refused; no config at all is an error."""
    if not configs:
        raise ValueError("the corpus holds no *_config.json (tests/fixtures/hf-configs)")
    w_kv = catalog.assumptions.kv_bytes_per_element
    rows = []
    for path in configs:
        row = {"file": path.name, "hf_id": hf_id_from_path(path) or "", "model_type": "", "read_as": "", "unread": "",
               "refused": ""}
        try:
            imported = read_config(path)
            model = load_imported(catalog, imported, None, None, path)
        except (ImportRefused, SpecError) as err:
            rows.append({**row, "refused": f"{err.key}: {err.reason}"})
            continue
        count = published.get(imported.hf_id)
        rows.append({**row, "model_type": imported.model_type, "read_as": imported.convention,
                     "unread": ", ".join(imported.unread), **_row(model, w_kv), "params": imported.params_derived,
                     "vs_published": None if count is None else imported.params_derived / count.value - 1.0})
    return Table(
        id="import_corpus",
        title="The corpus of published configs as kvwall import reads them",
        caption=f"Each config.json of the corpus with its family (model_type of the language model), the reading it was "
        f"read by (its family's, or for an architecture kvwall does not name the convention its keys follow), its "
        f"layers by "
        f"cache kind (window or chunk span, 1/ratio of a compressed layer's pooled entries, KV heads x head_dim, K=V "
        f"where one tensor is cached, index keys), the KV bytes one token holds averaged over 8k and 1M tokens at "
        f"w_kv = {w_kv:g} B ({catalog.assumptions.kv_dtype}), the constant state per sequence in "
        f"{catalog.assumptions.state_dtype}, and the parameters derived from its architecture against the total its "
        f"model card prints (config/published_params.yaml; a multimodal card's count includes the vision encoder, a "
        f"count of one or two digits is held as printed); the keys it holds that kvwall neither reads nor knows not to "
        f"matter (kvwall.inputs.hf_keys); or the key and reason it is refused.",
        columns=(Column("file", "Config", printed=False), Column("hf_id", "Hugging Face id"),
                 Column("model_type", "Family"), Column("read_as", "Read as"),
                 Column("layers", "Layers by cache kind"),
                 Column("kv_8k", "KV B/token at 8k", "derived", "int", "B"),
                 Column("kv_1m", "KV B/token at 1M", "derived", "int", "B"),
                 Column("state", "State B/sequence", "derived", "int", "B"),
                 Column("params", "Parameters (B)", "derived", "giga2", "count"),
                 Column("vs_published", "vs published", "derived", "percent_signed1", "ratio"),
                 Column("unread", "Keys not understood"), Column("refused", "Refused")),
        rows=tuple(rows),
    )
