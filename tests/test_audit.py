"""The reproduction audit: at least 100 printed numbers, all matching except documented mismatches."""

import csv
from dataclasses import replace

import pytest
import yaml

from kvwall.audit import MATCH, AuditFailure, audit, read_artifact
from kvwall.tables import builder


@pytest.fixture(scope="module")
def printed(root):
    return yaml.safe_load((root / "config" / "paper" / "printed.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def loader(catalog, selections, root):
    def load(artifact):
        return read_artifact(artifact, {c.name: c for c in builder(artifact)(catalog, selections).columns}, root / "tables")

    return load


def test_committed_tables_pass_the_audit(printed, loader):
    results = audit(printed, loader)
    assert len(results) >= 100
    mismatches = [r for r in results if r["status"] != MATCH]
    assert {r["id"] for r in mismatches} == set(printed["mismatches"])
    assert all(r["reason"] for r in mismatches)


def test_a_number_that_stops_matching_fails(printed, loader):
    def perturbed(artifact):
        table = loader(artifact)
        if artifact != "derived/table4_traffic_crossover":
            return table
        rows = tuple({**r, "b32": str(float(r["b32"]) * 1.01)} for r in table.rows)
        return replace(table, rows=rows)

    with pytest.raises(AuditFailure, match="Table 4/llama-3-70b/b32"):
        audit(printed, perturbed)


def test_a_documented_mismatch_that_matches_fails(printed, loader):
    stale = {**printed, "mismatches": {**printed["mismatches"], "Table 4/llama-3-70b/b1": "no longer true"}}
    with pytest.raises(AuditFailure, match="documented as a mismatch but it matches"):
        audit(stale, loader)


def test_committed_audit_artifact_lists_every_number(root, printed, loader):
    with open(root / "tables" / "audit" / "reproduction.csv", newline="", encoding="utf-8") as handle:
        committed = list(csv.DictReader(handle))
    assert [r["id"] for r in committed] == [r["id"] for r in audit(printed, loader)]
