"""The parameter counts model cards publish (config/published_params.yaml, spec), by Hugging Face id: what the
derived counts of imported configs are held against (tables/derived/import_corpus)."""

from __future__ import annotations

from pathlib import Path

from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import QuantityReader, read_yaml, validate
from kvwall.inputs.specs import Sourced

PUBLISHED_PARAMS_FILE = "published_params.yaml"


def load_published_params(path: str | Path) -> dict[str, Sourced]:
    """Each listed checkpoint's published count, keyed by its Hugging Face id; an id listed twice is an error."""
    document = read_yaml(path)
    validate(document, "published_params", path)
    reader = QuantityReader(path, document, document["evidence"])
    counts: dict[str, Sourced] = {}
    for entry_id, entry in document["counts"].items():
        key = f"counts.{entry_id}"
        if entry["hf_id"] in counts:
            raise SpecError(path, f"{key}.hf_id", f"{entry['hf_id']!r} is listed twice")
        counts[entry["hf_id"]] = reader.quantity(entry["params"], f"{key}.params", "count")
    return counts
