"""`kvwall build` with no argument but a core count, on a checkout as the last such build left it, returns without
starting Snakemake (kvwall.cli.build); any other build, or any file changed, starts it."""

import fcntl
import json
import os
import sys

import pytest

from kvwall.cli import build


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout's shape: a config file, Snakemake's folder with a run log and metadata, the jobs' logs."""
    for name in ("config/config.yaml", ".snakemake/log/run.snakemake.log", ".snakemake/metadata/table",
                 "logs/tables/one.log", "tables/derived/one.csv"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a: 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
    return tmp_path


@pytest.mark.parametrize("argv, is_plain", [
    ([], True), (["--cores", "4"], True), (["-c", "all"], True), (["-c4"], True), (["--jobs=2"], True),
    (["-n"], False), (["--cores", "4", "--forceall"], False), (["--cores", "four"], False),
    (["--cores", "4", "tables/derived/one.csv"], False), (["--configfile", "mine.yaml"], False)])
def test_only_a_core_count_is_a_plain_build(argv, is_plain, monkeypatch):
    monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
    assert build.plain(argv) is is_plain
    monkeypatch.setenv("SNAKEMAKE_PROFILE", "cluster")
    assert not build.plain(argv)


def test_the_digest_follows_every_file_a_build_reads_and_not_its_logs(checkout):
    before = build.tree_digest()
    (checkout / "logs/tables/two.log").write_text("")
    (checkout / ".snakemake/log/next.snakemake.log").write_text("")
    (checkout / ".snakemake/kvwall-kept").mkdir()
    (checkout / ".snakemake/kvwall-kept/one.csv").write_text("")
    assert build.tree_digest() == before
    (checkout / ".snakemake/metadata/figure").write_text("")  # what Snakemake reads on its next run
    assert build.tree_digest() != before
    os.remove(checkout / ".snakemake/metadata/figure")
    assert build.tree_digest() == before
    stat = os.stat(checkout / "config/config.yaml")
    os.utime(checkout / "config/config.yaml", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # touched, not changed
    touched = build.tree_digest()
    assert touched != before
    os.remove(checkout / "tables/derived/one.csv")  # an artifact gone
    assert build.tree_digest() not in (before, touched)


def test_an_unchanged_checkout_returns_without_starting_snakemake(checkout, monkeypatch, capsys):
    build.BUILT_STAMP.write_text(json.dumps(build.current_stamp()))
    monkeypatch.setitem(sys.modules, "snakemake.exceptions", None)  # importing Snakemake would raise here
    assert build.run(["--cores", "1"]) == 0
    assert capsys.readouterr().err == (
        "kvwall: build: nothing to do: no file changed since the last build (.snakemake/kvwall-built.json)\n")
    with pytest.raises(ImportError):  # a build with any other argument starts Snakemake, and drops the stamp
        build.run(["--cores", "1", "--forceall"])
    assert not build.BUILT_STAMP.exists()


def test_a_changed_file_another_interpreter_or_a_running_build_is_not_up_to_date(checkout, monkeypatch):
    build.BUILT_STAMP.write_text(json.dumps(build.current_stamp()))
    assert build.up_to_date()
    with open(build.BUILD_LOCK, "a") as lock:  # a build that holds the workflow's lock is under way
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert not build.up_to_date()
    assert build.up_to_date()
    monkeypatch.setattr(sys, "executable", sys.executable + "-other")
    assert not build.up_to_date()
    monkeypatch.undo()
    (checkout / "config/config.yaml").write_text("a: 2\n")
    assert not build.up_to_date()
    build.BUILT_STAMP.write_text("{not json")
    assert not build.up_to_date()
