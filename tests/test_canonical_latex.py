"""canonical-numbers.tex: one macro per canonical number, its value and unit, its class in the comment above."""

import json
import re

from kvwall.canonical.latex import latex_text

DEFINITION = re.compile(r"^\\@namedef\{kvwall@(?P<id>[^}]*)\}\{(?P<value>.*)\}$")


def _definitions(root):
    lines = (root / "canonical-numbers.tex").read_text(encoding="utf-8").splitlines()
    return {m["id"]: (lines[i - 1], m["value"]) for i, line in enumerate(lines) if (m := DEFINITION.match(line))}


def test_one_macro_per_canonical_number(root):
    numbers = [n for s in json.loads((root / "canonical-numbers.json").read_text())["sections"] for n in s["numbers"]]
    definitions = _definitions(root)
    assert sorted(definitions) == sorted(n["id"] for n in numbers)
    for number in numbers:
        comment, _ = definitions[number["id"]]
        assert comment.startswith(f"% {number['evidence']}: ")


def test_value_with_its_unit(root):
    definitions = _definitions(root)
    # config/reported/kv_slopes.yaml: GB10 memory bandwidth 273 GB/s, reported.
    assert definitions["s1.gb10.memory-bandwidth-spec"] == ("% reported: Memory bandwidth, specification", "273~GB/s")


def test_special_characters_are_escaped():
    assert latex_text("7.6%", unbreakable=True) == r"7.6\%"
    assert latex_text("1.25× of a_b", unbreakable=True) == r"1.25\ensuremath{\times}~of~a\_b"
    assert latex_text("DGX Spark, GB10") == "DGX Spark, GB10"
