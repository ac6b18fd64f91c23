"""Read one input file as text, YAML or JSON, refusing what a spec file never needs and a hostile file would use.

Refused, each as a SpecError naming the file and the line: anything but a regular file (a FIFO would hang the read,
/dev/zero exhaust memory), more than MAX_BYTES, anchors and aliases (an alias bomb expands a few hundred bytes into
billions of nodes), complex keys (``? [a, b]``), nesting deeper than MAX_DEPTH, a key given twice (in JSON too, where
json.loads keeps the last), and in JSON the non-standard constants NaN and Infinity.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from kvwall.inputs.errors import SpecError

#: The largest input file read (the biggest spec file is a few tens of kB; a measured record about one hundred).
MAX_BYTES = 4 * 2**20
#: The deepest nesting of mappings and sequences accepted (spec files nest five or six levels).
MAX_DEPTH = 32


def read_text(path: str | Path) -> str:
    """A regular file of at most MAX_BYTES, as UTF-8 text."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SpecError(path, "", "file not found") from None
    except OSError as err:
        raise SpecError(path, "", f"cannot be opened ({err.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SpecError(path, "", "not a regular file (a directory, FIFO or device is never read)")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SpecError(path, "", f"larger than {MAX_BYTES // 2**20} MiB, the limit for an input file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(path, "", "cannot be read as UTF-8 text") from None


def _line(node_or_event) -> str:
    return f"line {node_or_event.start_mark.line + 1}"


try:
    from yaml.cyaml import CParser
except ImportError:  # PyYAML built without libyaml: its own parser, in Python
    _SafeLoader = yaml.SafeLoader
else:
    class _SafeLoader(CParser, Composer, SafeConstructor, Resolver):
        """PyYAML's safe loader on libyaml's C scanner and parser (PyYAML's wheels bundle it), several times faster
        than the Python ones; the events are composed into nodes in Python, by Composer, so that every refusal of
        _SpecLoader sees every event, as it does with yaml.SafeLoader."""

        def __init__(self, text: str):
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        get_single_node = Composer.get_single_node  # not CParser's, which composes in C


class _SpecLoader(_SafeLoader):
    """A safe YAML loader without anchors, aliases or deep nesting, that reads the scientific notation spec sheets
    are written in (70e9) as numbers."""

    def __init__(self, text: str, file: str | Path):
        super().__init__(text)
        self.file, self.depth = file, 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise SpecError(self.file, _line(event), "anchors and aliases (&name, *name) are not accepted in input files")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise SpecError(self.file, _line(event), f"nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


# YAML 1.1 reads 70e9 and 8.03e9 as strings.
_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def key_path(path) -> str:
    """A key path as messages write it: devices.b200.hbm_capacity, rows[2].id."""
    def shown(part) -> str:
        if isinstance(part, int):
            return f"[{part}]"
        return str(part) if str(part).isprintable() else repr(part)  # a newline in a key stays on the one line

    return ".".join(map(shown, path)).replace(".[", "[")


def _check_keys(root: yaml.Node, file: str | Path) -> None:
    """Every key a plain scalar, none given twice in one mapping (the second would silently overwrite the first)."""
    stack = [(root, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            lines: dict = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise SpecError(file, f"{key_path(path) or '(top level)'} ({_line(key_node)})",
                                    "a key must be a plain name, not a list or mapping")
                key, line = key_node.value, key_node.start_mark.line + 1
                if key in lines:
                    raise SpecError(file, key_path([*path, key]), f"given twice (lines {lines[key]} and {line})")
                lines[key] = line
                stack.append((value_node, [*path, key]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, [*path, index]) for index, item in enumerate(node.value))


def parse_yaml(text: str, file: str | Path) -> Any:
    """Parse YAML text read from ``file`` with the refusals above."""
    loader = _SpecLoader(text, file)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_keys(node, file)
        return loader.construct_document(node)
    except yaml.reader.ReaderError as err:  # its own message spans two lines
        where = f"line {text.count(chr(10), 0, err.position) + 1}"
        raise SpecError(file, where, f"not valid YAML: character #x{err.character:04x}: {err.reason}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"
        raise SpecError(file, where, f"not valid YAML: {getattr(err, 'problem', None) or err}") from None
    finally:
        loader.dispose()


def read_yaml(path: str | Path) -> Any:
    """Parse one YAML file, turning a missing, special or oversized file, a syntax error or a refused construct into
    a SpecError."""
    return parse_yaml(read_text(path), path)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


class _KeyGivenTwice(ValueError):
    """A JSON object that names a key twice (json keeps the last silently)."""


def _unique_keys(pairs: list) -> dict:
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise _KeyGivenTwice(key)
        obj[key] = value
    return obj


def read_json(path: str | Path, constants: bool = False) -> Any:
    """Parse one JSON file under the same limits; NaN and Infinity (not JSON) are refused unless ``constants`` (a
    published config.json, written and read by Python's json, which accepts them)."""
    text = read_text(path)
    try:
        return json.loads(text, parse_constant=None if constants else _refuse_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise SpecError(path, f"line {err.lineno}", f"not valid JSON: {err.msg}") from None
    except _KeyGivenTwice as err:
        raise SpecError(path, key_path(err.args), "given twice in one object") from None
    except ValueError as err:
        raise SpecError(path, "", f"not valid JSON: {err}") from None
    except RecursionError:
        raise SpecError(path, "", "not valid JSON: nested too deeply") from None


def refuse_templates(document: Any, file: str | Path) -> None:
    """Snakemake reads config files with its YTE template engine, which runs a ``?expression`` as Python once the
    file sets ``__use_yte__``; a workflow config holds plain values only, so refuse both."""
    stack = [(document, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "__use_yte__" or str(key).startswith("?"):
                    raise SpecError(file, key_path([*path, key]), "a template key: config files hold plain values, never expressions")
                stack.append((value, [*path, key]))
        elif isinstance(node, list):
            stack.extend((item, [*path, index]) for index, item in enumerate(node))
        elif isinstance(node, str) and node.startswith("?"):
            raise SpecError(file, key_path(path), "a template expression ('?...'): config files hold plain values, never expressions")
