"""Table artifacts: the paper's printed cells (Tables 5, 7), Table 8's accounting, and the CSV/Markdown/LaTeX writers."""

import csv
import io

import pytest

from kvwall.render import Column, Table, keyed, to_csv, to_latex, to_markdown, write_table
from kvwall.tables import builder
from kvwall.tables.accounting import accounting, parameter_check

TABLE5 = {  # SoK Table 5 as printed: KV (GB), T_step (ms), tok/s, speedup, AI
    (128000, "bf16"): ["41.9", "22.7", "44.0", "1.00×", "2.6"],
    (128000, "int8"): ["21.0", "20.1", "49.7", "1.13×", "3.0"],
    (128000, "int4"): ["10.5", "18.8", "53.2", "1.21×", "3.2"],
    (128000, "2bit"): ["5.2", "18.2", "55.1", "1.25×", "3.3"],
    (128000, "2bit-r0.5"): ["2.6", "17.8", "56.1", "1.28×", "3.3"],
    (512000, "bf16"): ["167.8", "38.5", "26.0", "1.00×", "4.8"],
    (512000, "int8"): ["83.9", "28.0", "35.7", "1.37×", "6.6"],
    (512000, "int4"): ["41.9", "22.7", "44.0", "1.69×", "8.1"],
    (512000, "2bit"): ["21.0", "20.1", "49.7", "1.91×", "9.2"],
    (512000, "2bit-r0.5"): ["10.5", "18.8", "53.2", "2.05×", "9.8"],
}
TABLE7 = {  # SoK Table 7 as printed: c, KV (GB), W1, W2
    "bf16-paged-baseline": ["1×", "41.9", "1.00×", "1.00×"],
    "kivi-2bit": ["8×", "5.2", "1.25×", "4.82×"],
    "kvquant-3bit": ["5.3×", "7.9", "1.23×", "3.78×"],
    "h2o-r0.5": ["2×", "21.0", "1.13×", "1.83×"],
    "snapkv-r0.25": ["4×", "10.5", "1.21×", "3.12×"],
    "pagedattention": ["1×", "41.9", "1.00×", "1.00×"],
    "radixattention-w3": ["σ=2.91", "115.3", "1.00×", "1.00×"],
    "cachegen": ["codec 4×", "41.9", "1.00×", "1.00×"],
}


def _cells(table: Table, row: dict, names: list[str]) -> list[str]:
    return [table.column(n).format(row) for n in names]


def test_table5_as_printed(catalog, selections):
    table = builder("derived/table5_roofline_bounds")(catalog, selections)
    got = {(r["context"], r["config_id"]): _cells(table, r, ["kv_bytes", "step_time", "token_rate", "speedup", "arithmetic_intensity"]) for r in table.rows}
    assert got == TABLE5


def test_table5_caption_step_bytes_and_capacity(catalog, selections):
    rows = {(r["context"], r["config_id"]): r for r in builder("derived/table5_roofline_bounds")(catalog, selections).rows}
    assert round(rows[(128000, "bf16")]["step_bytes"] / 1e8) / 10 == 181.9
    assert round(rows[(512000, "bf16")]["step_bytes"] / 1e8) / 10 == 307.8
    assert round(rows[(512000, "int8")]["step_bytes"] / 1e8) / 10 == 223.9
    assert [r["fits_one_device"] for k, r in rows.items() if k[0] == 512000] == ["no", "no", "yes", "yes", "yes"]


def test_table7_as_printed(catalog, selections):
    table = builder("derived/table7_speedups")(catalog, selections)
    got = {r["technique_id"]: _cells(table, r, ["compression_label", "kv_bytes", "speedup_w1", "speedup_w2"]) for r in table.rows}
    assert got == TABLE7


def test_table6_binding_constraint_is_derived(catalog, selections):
    rows = {r["workload_id"]: r for r in builder("derived/table6_workloads")(catalog, selections).rows}
    assert rows["W1"]["traffic_side"] == "weight-dominated" and rows["W1"]["regime"] == "weight-bound"
    assert rows["W2"]["traffic_side"] == "KV-dominated" and rows["W2"]["regime"] == "kv-bound"
    assert rows["W2"]["devices_needed"] == 8  # 140 GB of weights and 1,342 GB of KV over 192 GB
    assert rows["W3"]["devices_needed"] == 2  # the prefix stored once: 140 + 115.3 GB


def test_table8_sum_row_equals_the_closed_form(catalog, selections):
    rows = accounting(catalog, selections).rows
    s, L, nq, nkv, dh = 128_000, 80, 64, 8, 128
    layer_weights = sum(r["bytes"] for r in rows[:-1] if "w_p" in r["bytes_formula"]) / 2.0
    assert rows[-1]["flops"] == pytest.approx(2 * L * layer_weights + 4 * L * nq * dh * s + 3 * L * nq * s)
    assert rows[-1]["bytes"] == pytest.approx(2 * L * layer_weights + 2 * L * nkv * dh * s * 2)


def test_table8_parameter_check_against_published_counts(catalog, selections):
    rows = {r["model_id"]: r for r in parameter_check(catalog, selections).rows}
    assert round(rows["llama-3-70b"]["architecture_params"] / 1e8) / 10 == 70.6  # published 70.6B
    assert round(rows["llama-3.1-405b"]["architecture_params"] / 1e8) / 10 == 405.8
    assert round(rows["llama-3-8b"]["architecture_params"] / 1e7) / 100 == 8.03
    assert all(abs(r["relative_difference"]) < 0.01 for r in rows.values())


def test_writers_are_deterministic_and_full_precision(tmp_path):
    table = Table("t", "T", "c", (Column("k", "K"), Column("v", "V", "derived", "fixed1")), ({"k": "a", "v": 1 / 3},),
                  key=("k",))
    assert list(csv.reader(io.StringIO(to_csv(table))))[1] == ["a", repr(1 / 3)]
    assert "| a | 0.3 |" in to_markdown(table)
    assert r"\toprule" in to_latex(table) and "0.3" in to_latex(table)
    paths = [tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.tex"]
    write_table(table, paths, folder_class="derived")
    first = [p.read_bytes() for p in paths]
    write_table(table, paths, folder_class="derived")
    assert first == [p.read_bytes() for p in paths]


def test_writer_refuses_the_wrong_evidence_folder(tmp_path):
    table = Table("t", "T", "c", (Column("v", "V", "spec", "fixed1"),), ({"v": 1.0},), key=("v",))
    with pytest.raises(ValueError, match="spec values"):
        write_table(table, [tmp_path / "t.csv"], folder_class="derived")


def test_a_table_is_written_only_with_a_key_that_tells_its_rows_apart(tmp_path):
    columns = (Column("model_id", "id"), Column("batch", "b", None, "int"), Column("v", "V", "derived", "fixed1"))
    rows = ({"model_id": "a", "batch": 1, "v": 1.0}, {"model_id": "a", "batch": 8, "v": 2.0})
    with pytest.raises(ValueError, match="declares no key"):
        write_table(Table("t", "T", "c", columns, rows), [tmp_path / "t.csv"], folder_class="derived")
    with pytest.raises(ValueError, match="rows 0 and 1 share the key {'model_id': 'a'}"):
        write_table(Table("t", "T", "c", columns, rows, key=("model_id",)), [tmp_path / "t.csv"], folder_class="derived")
    with pytest.raises(ValueError, match="not columns of the table"):
        Table("t", "T", "c", columns, rows, key=("device_id",))
    write_table(Table("t", "T", "c", columns, rows, key=("model_id", "batch")), [tmp_path / "t.csv"], folder_class="derived")
    assert keyed("model_id", "batch")(lambda: Table("t", "T", "c", columns, rows))().key == ("model_id", "batch")


def test_every_table_is_in_exactly_one_family_of_its_modules_tables_reading_one_view(monkeypatch):
    from kvwall import tables

    grouped = tables.families()
    written = [artifact for artifacts in grouped.values() for artifact in artifacts]
    assert sorted(written) == sorted(tables.ARTIFACTS) and len(written) == len(set(written))
    assert grouped["hardware"] == ("spec/table3_hardware", "derived/table3_ridge", "paper/table3",
                                   "derived/placement_ceilings")  # registry order
    assert grouped["deployments"] == ("derived/deployments",)
    for family, artifacts in grouped.items():
        assert {tables.module_of(artifact) for artifact in artifacts} == {f"kvwall.tables.{family}"}
        assert len({tables.view_of(artifact) for artifact in artifacts}) == 1, family
    # a module building tables of two views would make one job read two views: refused
    monkeypatch.setattr(tables, "WHOLE_CATALOGUE", tables.WHOLE_CATALOGUE | {"paper/table3"})
    with pytest.raises(ValueError, match=r"kvwall.tables.hardware builds tables of the views \['catalogue', 'paper'\]"):
        tables.families()
