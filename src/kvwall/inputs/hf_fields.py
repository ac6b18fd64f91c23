"""The fields of a Hugging Face ``config.json``, read with their types and sizes checked.

Each read names the key it came from (``Read``), so the entry kvwall writes cites every number's key. A field of the
wrong type (a list where a count is expected, an object among ``layer_types``, a boolean for a count), outside the
size any model has (an integer of 10^200) or contradicting another stops with one ImportRefused naming the file,
the key and the reason. A ``null`` reads as an absent key: the default of the model type (the reference
implementation's configuration class, kvwall.inputs.hf_defaults) applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from kvwall.inputs.errors import ImportRefused

#: The largest count a field may hold: far above any model's, the count bound of kvwall.inputs.loader.LARGEST.
LARGEST_COUNT = 10**15


@dataclass(frozen=True)
class Read:
    """A number of the entry and where it comes from: the config key (without the text_config prefix), or the name
    of a value computed from keys with the computation (``formula``), or a key the config leaves out (``absent``:
    the reference's default, named in ``formula``)."""

    value: float
    key: str
    formula: str | None = None
    absent: bool = False


class ConfigFields:
    """One config's keys (a language model's own, or its ``text_config``'s), read with their types checked."""

    def __init__(self, file: Path, config: Mapping, prefix: str = ""):
        self.file, self.config, self.prefix = file, config, prefix

    def refuse(self, key: str, reason: str) -> ImportRefused:
        """The refusal of ``key`` of this config, to raise."""
        return ImportRefused(self.file, self.prefix + key, reason)

    def has(self, key: str) -> bool:
        """Whether ``key`` is given (a null is not)."""
        return self.config.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as given, ``default`` when absent or null."""
        value = self.config.get(key)
        return default if value is None else value

    def count(self, key: str, minimum: int = 1) -> int:
        """A whole number of at least ``minimum`` (booleans, floats and strings refused)."""
        value = self.config.get(key)
        if value is None:
            raise self.refuse(key, f"missing: an integer >= {minimum} is needed")
        return self._count(key, value, minimum)

    def _count(self, key: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(key, f"must be an integer >= {minimum} (got {type(value).__name__} {_short(value)})")
        if not minimum <= value <= LARGEST_COUNT:
            raise self.refuse(key, f"must be an integer from {minimum} to 1e15 (got {_short(value)})")
        return value

    def read(self, key: str, minimum: int = 1) -> Read:
        """``count`` with the key it came from."""
        return Read(self.count(key, minimum), key)

    def read_or(self, key: str, default: int | Read, reference: str, minimum: int = 1) -> Read:
        """The count given at ``key``, or ``default`` where the key is absent or null: the value ``reference`` (the
        model type's configuration class) gives it, recorded as such."""
        if self.has(key):
            return self.read(key, minimum)
        if isinstance(default, Read):
            return default
        return Read(default, key, reference, absent=True)

    def flag(self, key: str, default: bool = False) -> bool:
        """A boolean (absent or null: ``default``)."""
        value = self.config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.refuse(key, f"must be true or false (got {type(value).__name__} {_short(value)})")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        """A string (absent or null: ``default``)."""
        value = self.config.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.refuse(key, f"must be a string (got {type(value).__name__} {_short(value)})")
        return value

    def counts(self, key: str, length: int | None = None, minimum: int = 0) -> list[int]:
        """A list of whole numbers, one per layer when ``length`` is given (compress_ratios, moe_layer_freq); entries
        past the last layer (a multi-token-prediction layer's) are dropped, as the reference does."""
        values = self._list(key, length, exact=False)
        return [self._count(f"{key}[{i}]", v, minimum) for i, v in enumerate(values)]

    def names(self, key: str, allowed: Mapping[str, str], length: int | None = None) -> list[str]:
        """A list of names, each one of ``allowed`` (name as given -> kvwall's name), ``length`` long when given."""
        values = self._list(key, length)
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise self.refuse(f"{key}[{i}]", f"must be a name (got {type(value).__name__} {_short(value)})")
            if value not in allowed:
                raise self.refuse(key, f"layer type {value!r} is not understood (known: {', '.join(sorted(allowed))})")
        return [allowed[value] for value in values]

    def records(self, key: str, length: int | None = None) -> list[ConfigFields]:
        """A list of objects (block_configs), each read as its own fields under ``key[i].``."""
        values = self._list(key, length)
        fields = []
        for i, value in enumerate(values):
            if not isinstance(value, Mapping):
                raise self.refuse(f"{key}[{i}]", f"must be an object (got {type(value).__name__} {_short(value)})")
            fields.append(ConfigFields(self.file, value, f"{self.prefix}{key}[{i}]."))
        return fields

    def section(self, key: str) -> ConfigFields:
        """An object's keys (sparse_attention_config), read under ``key.``; an empty one when absent."""
        value = self.config.get(key)
        if value is None:
            return ConfigFields(self.file, {}, f"{self.prefix}{key}.")
        if not isinstance(value, Mapping):
            raise self.refuse(key, f"must be an object (got {type(value).__name__} {_short(value)})")
        return ConfigFields(self.file, value, f"{self.prefix}{key}.")

    def _list(self, key: str, length: int | None, exact: bool = True) -> list:
        value = self.config.get(key)
        if not isinstance(value, list):
            raise self.refuse(key, f"must be a list (got {type(value).__name__} {_short(value)})")
        if length is not None and (len(value) < length or exact and len(value) != length):
            raise self.refuse(key, f"must list one entry per layer ({length}), lists {len(value)}")
        return value[:length] if length is not None else value


def _short(value: Any) -> str:
    """A value as a refusal quotes it, at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
