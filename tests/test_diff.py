"""kvwall diff: the changed cells of every table CSV and the figures that changed, against a git revision."""

import subprocess

from kvwall.cli.diff import diff_lines, table_changes
from kvwall.cli.main import main


def _git(folder, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True, capture_output=True)


def test_changed_cells_added_and_removed_rows():
    old = [["model_id", "b1", "b8"], ["llama-3-8b", "122528.07", "15316.0"], ["llama-3-70b", "427246.09", "53405.7"]]
    new = [["model_id", "b1", "b8"], ["llama-3-8b", "122528.07", "15999.5"], ["qwen2.5-7b", "1.5", "2.5"]]
    assert table_changes(old, new) == [
        "changed model_id=llama-3-8b: b8: 15316.0 -> 15999.5",
        "added   model_id=qwen2.5-7b, b1=1.5, b8=2.5",
        "removed model_id=llama-3-70b, b1=427246.09, b8=53405.7",
    ]
    assert table_changes(old, old) == []


def test_a_column_added():
    old = [["device", "hbm"], ["b200", "192"]]
    new = [["device", "hbm", "ridge"], ["b200", "192", "281"]]
    assert table_changes(old, new)[0] == "columns added: ridge"


def test_against_a_revision(tmp_path, capsys):
    (tmp_path / "tables" / "derived").mkdir(parents=True)
    (tmp_path / "figures").mkdir()
    table = tmp_path / "tables" / "derived" / "t.csv"
    table.write_text("id,x\na,1\nb,2\n")
    (tmp_path / "tables" / "derived" / "t.md").write_text("| id | x |\n")
    for name in ("f1", "f2"):
        (tmp_path / "figures" / f"{name}.svg").write_text("<svg/>")
        (tmp_path / "figures" / f"{name}.png").write_text("png")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "one")
    table.write_text("id,x\na,1\nb,3\n")
    (tmp_path / "tables" / "derived" / "t.md").write_text("| id | x |\n| b | 3 |\n")
    (tmp_path / "tables" / "derived" / "u.csv").write_text("id\nc\n")
    (tmp_path / "figures" / "f2.svg").write_text("<svg></svg>")
    assert diff_lines(tmp_path) == [
        "tables/derived/t.csv: 1 change",
        "  changed id=b: x: 2 -> 3",
        "tables/derived/u.csv: new table, 1 rows",
        "figures/f1: unchanged",
        "figures/f2: changed (svg)",
    ]
    assert main(["diff", "HEAD", "--repo", str(tmp_path)]) == 0
    assert "changed id=b: x: 2 -> 3" in capsys.readouterr().out
    assert main(["diff", "no-such-revision", "--repo", str(tmp_path)]) == 2
