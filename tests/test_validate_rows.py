"""A table's rows checked column by column (kvwall.inputs.loader.validate_rows) accept and refuse exactly what the
whole document's validation does, with the same one-line message, on the reported serving measurements."""

import copy

import pytest

from kvwall.inputs import serving
from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import validate, validate_rows

SCHEMA = "serving_measurements"


@pytest.fixture(scope="module")
def rows(root):
    path = root / "data/reported/serving-measurements.csv"
    _, text = serving._text(path)
    return serving._rows(text, path)[:200]


def _verdict(check, rows):
    try:
        check(rows, SCHEMA, "serving-measurements.csv")
    except SpecError as error:
        return str(error)
    return None


def test_the_committed_rows_pass_both_ways(rows):
    assert _verdict(validate_rows, rows) is None and _verdict(validate, rows) is None


@pytest.mark.parametrize("column, value, reason", [
    ("isl", 0, "[7].isl: must be >= 1 (got 0)"),
    ("isl", 2.0, "[7].isl: must be of type integer (got float 2.0)"),  # a whole float is no count
    ("pp_size", True, "[7].pp_size: must be of type ['integer', 'null'] (got bool True)"),  # nor is a bool
    ("tp_size", -1, "[7].tp_size: must be >= 0 (got -1)"),
    ("silicon_tpot_ms", float("nan"), "[7].silicon_tpot_ms: must be a finite number (got nan)"),
    ("a_column_no_schema_names", float("inf"), "[7].a_column_no_schema_names: must be a finite number (got inf)"),
    ("backend", "tgi", "[7].backend: 'tgi' is not one of ['trtllm', 'vllm', 'sglang']"),
    ("id", "a b", "[7].id: 'a b' is not of the form"),
])
def test_a_bad_cell_is_refused_with_the_whole_validations_message(rows, column, value, reason):
    bad = copy.deepcopy(rows)
    bad[7][column] = value
    message = _verdict(validate_rows, bad)
    assert message == _verdict(validate, bad)
    assert message.startswith(f"serving-measurements.csv: {reason}")


def test_a_value_valid_in_one_column_is_still_checked_in_another(rows):
    # 0 is a valid layout size (refused later as a layout that does not divide) but no valid length
    bad = copy.deepcopy(rows)
    bad[3]["tp_size"], bad[5]["osl"] = 0, 0
    assert _verdict(validate_rows, bad) == _verdict(validate, bad) == "serving-measurements.csv: [5].osl: must be >= 1 (got 0)"


def test_a_missing_field_an_empty_table_and_a_non_row_are_refused(rows):
    missing = copy.deepcopy(rows)
    del missing[3]["isl"]
    assert _verdict(validate_rows, missing) == _verdict(validate, missing) == \
        "serving-measurements.csv: [3]: missing required field 'isl'"
    assert _verdict(validate_rows, []) == _verdict(validate, []) is not None
    assert _verdict(validate_rows, [*rows[:2], "a row"]) == _verdict(validate, [*rows[:2], "a row"]) is not None
