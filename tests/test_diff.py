"""kvwall diff: table rows aligned by their declared key columns, a relative tolerance, rows added and removed in
full, notebooks' changed outputs, canonical numbers by id, the figures that changed, as text or Markdown."""

import csv
import json
import subprocess
from pathlib import Path

import pytest

from kvwall.cli.diff import (TOLERANCE, build, canonical_changes, diff_lines, markdown_lines, notebook_changes,
                             same_number, table_changes, table_lines)
from kvwall.cli.main import main
from kvwall.tables import ARTIFACTS, WRITTEN_BY_OTHER_RULES, key_of

ROOT = Path(__file__).resolve().parents[1]


def _git(folder, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True, capture_output=True)


def test_rows_are_named_by_their_whole_key():
    # serving_format_claim-like rows: the first column (model) repeats, the key is the pair of ids
    old = [["model", "id_wide", "id_narrow", "speedup"], ["deepseek-r1", "1", "2", "1.25"], ["deepseek-r1", "3", "4", "1.5"]]
    new = [["model", "id_wide", "id_narrow", "speedup"], ["deepseek-r1", "1", "2", "1.25"], ["deepseek-r1", "3", "4", "1.75"]]
    assert table_lines(table_changes(old, new, ("id_wide", "id_narrow"))) == [
        "changed id_wide=3, id_narrow=4: speedup: 1.5 -> 1.75"]


def test_added_and_removed_rows_in_full():
    header = ["model_id", *(f"c{i}" for i in range(9))]
    old = [header, ["a", *"123456789"]]
    new = [header, ["b", *"987654321"]]
    assert table_lines(table_changes(old, new, ("model_id",))) == [
        "added   model_id=b, c0=9, c1=8, c2=7, c3=6, c4=5, c5=4, c6=3, c7=2, c8=1",
        "removed model_id=a, c0=1, c1=2, c2=3, c3=4, c4=5, c5=6, c6=7, c7=8, c8=9",
    ]


def test_last_digit_noise_is_hidden_and_shown_on_request():
    old = [["id", "x", "y"], ["a", "0.1", "989"]]
    new = [["id", "x", "y"], ["a", "0.10000000000000002", "989.5"]]  # one ulp of 0.1; a real change of 5e-4
    changes = table_changes(old, new, ("id",))
    assert table_lines(changes) == ["changed id=a: y: 989 -> 989.5"] and changes.within_tolerance == 1
    assert table_lines(table_changes(old, new, ("id",), tolerance=0.0)) == [
        "changed id=a: x: 0.1 -> 0.10000000000000002; y: 989 -> 989.5"]
    assert same_number("1.0", "1.0000000001", TOLERANCE) and not same_number("1.0", "1.00001", TOLERANCE)
    assert not same_number("W1", "W2", TOLERANCE)


def test_without_a_key_daff_aligns_the_rows():
    old = [["model_id", "b1", "b8"], ["llama-3-8b", "122528.07", "15316.0"], ["llama-3-70b", "427246.09", "53405.7"]]
    new = [["model_id", "b1", "b8"], ["llama-3-8b", "122528.07", "15999.5"], ["qwen2.5-7b", "1.5", "2.5"]]
    assert table_lines(table_changes(old, new)) == [
        "changed model_id=llama-3-8b: b8: 15316.0 -> 15999.5",
        "added   model_id=qwen2.5-7b, b1=1.5, b8=2.5",
        "removed model_id=llama-3-70b, b1=427246.09, b8=53405.7",
    ]
    assert table_lines(table_changes(old, old)) == []


def test_a_column_added():
    old = [["device_id", "hbm"], ["b200", "192"]]
    new = [["device_id", "hbm", "ridge"], ["b200", "192", "281"]]
    assert table_lines(table_changes(old, new, ("device_id",)))[0] == "columns added: ridge"
    assert table_lines(table_changes(old, new))[0] == "columns added: ridge"


@pytest.mark.parametrize("artifact", sorted({*ARTIFACTS, *WRITTEN_BY_OTHER_RULES}))
def test_every_table_declares_a_key_that_tells_its_committed_rows_apart(artifact):
    key = key_of(artifact)
    rows = (ROOT / "tables" / f"{artifact}.csv").read_text(encoding="utf-8").splitlines()
    records = list(csv.DictReader(rows))
    assert key and all(name in records[0] for name in key), artifact
    assert len({tuple(r[name] for name in key) for r in records}) == len(records), artifact


def test_notebook_outputs_compared_by_cell():
    def notebook(*outputs):
        return {"cells": [{"cell_type": "markdown", "source": "# t"}] + [
            {"cell_type": "code", "source": f"print({i})\nmore", "outputs": [{"output_type": "stream", "text": text}]}
            for i, text in enumerate(outputs)]}

    changes = notebook_changes(notebook("a\nb\n", "same\n"), notebook("a\nc\n", "same\n"))
    assert [(c.index, c.source, c.removed, c.added) for c in changes] == [(1, "print(0)", ("b",), ("c",))]


def test_canonical_numbers_by_id():
    def payload(**displays):
        return {"sections": [{"numbers": [{"id": i, "value": float(d.split()[0]), "display": d} for i, d in displays.items()]}],
                "audit": []}

    old, new = payload(a="1.00 ms", b="2.00 ms", c="3.00 ms"), payload(a="1.00 ms", b="2.50 ms", d="4.00 ms")
    assert [(c.id, c.old, c.new) for c in canonical_changes(old, new, TOLERANCE)] == [
        ("b", "2.00 ms", "2.50 ms"), ("c", "3.00 ms", ""), ("d", "", "4.00 ms")]


def _committed(tmp_path):
    """A repository of one table, two figures, one notebook and one canonical number, committed; its table, notebook
    cell and canonical numbers returned to be changed."""
    (tmp_path / "tables" / "derived").mkdir(parents=True)
    (tmp_path / "figures").mkdir()
    (tmp_path / "notebooks" / "executed").mkdir(parents=True)
    table = tmp_path / "tables" / "derived" / "t.csv"
    table.write_text("id,x\na,1\nb,2\n")
    (tmp_path / "tables" / "derived" / "t.md").write_text("| id | x |\n")
    for name in ("f1", "f2"):
        (tmp_path / "figures" / f"{name}.svg").write_text("<svg/>")
        (tmp_path / "figures" / f"{name}.png").write_text("png")
    cell = {"cell_type": "code", "source": "x", "outputs": [{"output_type": "stream", "text": "1\n"}]}
    (tmp_path / "notebooks" / "executed" / "n.ipynb").write_text(json.dumps({"cells": [cell]}))
    numbers = {"sections": [{"numbers": [{"id": "s1.x", "value": 1.0, "display": "1.0 ms"}]}], "audit": []}
    (tmp_path / "canonical-numbers.json").write_text(json.dumps(numbers))
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "one")
    return table, cell, numbers


def test_against_a_revision(tmp_path, capsys):
    table, cell, numbers = _committed(tmp_path)
    table.write_text("id,x\na,1\nb,3\n")
    (tmp_path / "tables" / "derived" / "t.md").write_text("| id | x |\n| b | 3 |\n")
    (tmp_path / "tables" / "derived" / "u.csv").write_text("id\nc\n")
    (tmp_path / "figures" / "f2.svg").write_text("<svg></svg>")
    cell["outputs"][0]["text"] = "2\n"
    (tmp_path / "notebooks" / "executed" / "n.ipynb").write_text(json.dumps({"cells": [cell]}))
    numbers["sections"][0]["numbers"][0].update(value=2.0, display="2.0 ms")
    (tmp_path / "canonical-numbers.json").write_text(json.dumps(numbers))
    assert diff_lines(tmp_path) == [
        "tables/derived/t.csv: 1 change",
        "  changed id=b: x: 2 -> 3",
        "tables/derived/u.csv: new table, 1 rows",
        "notebooks/executed/n.ipynb: 1 cell with changed outputs",
        "  cell 1 (x):",
        "    - 1",
        "    + 2",
        "canonical-numbers.json: 1 number changed",
        "  s1.x: 1.0 ms -> 2.0 ms",
        "figures/f2: changed (svg)",
        "not shown: 1 artifact unchanged, 0 within the tolerance 1e-09 (--all lists every artifact)",
    ]
    markdown = "\n".join(markdown_lines(build(tmp_path)))
    assert "| id=b | x | 2 | 3 |" in markdown and "| `s1.x` | 1.0 ms | 2.0 ms |" in markdown
    assert "```diff\n- 1\n+ 2\n```" in markdown and "- `figures/f2`: changed (svg)" in markdown
    assert main(["diff", "HEAD", "--repo", str(tmp_path)]) == 0
    assert "changed id=b: x: 2 -> 3" in capsys.readouterr().out
    assert main(["diff", "HEAD", "--repo", str(tmp_path), "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("## kvwall diff against `HEAD`")
    assert main(["diff", "no-such-revision", "--repo", str(tmp_path)]) == 2
    assert main(["diff", "--repo", str(tmp_path / "missing")]) == 2


def test_nothing_changed_is_one_line(tmp_path, capsys):
    _committed(tmp_path)
    assert main(["diff", "--repo", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "nothing changed\n"
    assert main(["diff", "--repo", str(tmp_path), "--all"]) == 0  # every artifact compared: the two figures
    assert capsys.readouterr().out == "tables: no CSV differs from HEAD\nfigures/f1: unchanged\nfigures/f2: unchanged\n"


def test_what_is_left_out_is_counted_and_all_lists_it(tmp_path, capsys):
    table, cell, numbers = _committed(tmp_path)
    table.write_text("id,x\na,1.0000000000001\nb,2\n")  # 1e-13 relative: within the tolerance 1e-9
    numbers["sections"][0]["numbers"][0].update(value=1.0000000000001)  # the same display, 1e-13 apart
    (tmp_path / "canonical-numbers.json").write_text(json.dumps(numbers))
    (tmp_path / "notebooks" / "executed" / "n.ipynb").write_text(json.dumps({"cells": [cell]}, indent=1))
    assert diff_lines(tmp_path) == ["nothing changed (2 within the tolerance 1e-09; --all shows every difference)"]
    (tmp_path / "figures" / "f1.png").write_text("png2")
    assert diff_lines(tmp_path) == [
        "figures/f1: changed (png)",
        "not shown: 2 artifacts unchanged, 2 within the tolerance 1e-09 (--all lists every artifact)",
    ]
    assert diff_lines(tmp_path, tolerance=1e-15) == [  # the tolerance narrowed: both numbers show
        "tables/derived/t.csv: 1 change",
        "  changed id=a: x: 1 -> 1.0000000000001",
        "canonical-numbers.json: 1 number changed",
        "  s1.x: 1.0 (1.0 ms) -> 1.0000000000001 (1.0 ms)",
        "figures/f1: changed (png)",
        "not shown: 2 artifacts unchanged, 0 within the tolerance 1e-15 (--all lists every artifact)",
    ]
    assert main(["diff", "--repo", str(tmp_path), "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "tables/derived/t.csv: 1 change",
        "  changed id=a: x: 1 -> 1.0000000000001",
        "notebooks/executed/n.ipynb: same outputs",
        "canonical-numbers.json: 1 number changed",
        "  s1.x: 1.0 (1.0 ms) -> 1.0000000000001 (1.0 ms)",
        "figures/f1: changed (png)",
        "figures/f2: unchanged",
    ]
