"""Reported serving measurements: a CSV of measured TPOT and TTFT points, read and validated as one document.

Every value is reported (data/reported/README.md: source, licence, columns). A blank cell is None; a number is an int
where it is whole, so that the schema (serving_measurements.schema.yaml) refuses a layout of 2.5 GPUs. A bad cell
stops the read with the file, the row (its line number and id) and the column.

Validating every row takes about a second; with a ``stamp_dir`` a file whose bytes (and schema) already passed is not
validated again, so that the workflow's check before every build stays quick.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pandas as pd

from kvwall.inputs.errors import SpecError
from kvwall.inputs.loader import schema, validate_rows
from kvwall.inputs.stamps import mark_passed, passed, stamp_name

#: The reported serving measurements of the repository (data/reported/README.md).
SERVING_MEASUREMENTS = "data/reported/serving-measurements.csv"
#: The largest file read, in bytes (the committed one is under 1 MB).
MAX_BYTES = 64 * 2**20


def _cell(text: str):
    """A CSV cell as a value: None when blank, an int when whole, a float when a number, else the text."""
    if text == "":
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return number
    return int(number) if number.is_integer() and re.fullmatch(r"[+-]?\d+(\.0*)?", text.strip()) else number


def _stamp(content: bytes) -> str:
    """The stamp of these bytes checked against this schema."""
    return stamp_name((json.dumps(schema("serving_measurements"), sort_keys=True).encode(), content))


def _text(path: Path) -> tuple[bytes, str]:
    """The bytes of ``path`` and their text: a regular file of at most MAX_BYTES, in UTF-8."""
    if not path.is_file():
        raise SpecError(path, "", "no such file" if not path.exists() else "not a regular file")
    if path.stat().st_size > MAX_BYTES:
        raise SpecError(path, "", f"larger than {MAX_BYTES // 2**20} MiB")
    content = path.read_bytes()
    try:
        return content, content.decode("utf-8-sig")  # a spreadsheet's "CSV UTF-8" starts with a byte-order mark
    except UnicodeDecodeError as error:
        raise SpecError(path, "", f"not UTF-8 text ({error.reason} at byte {error.start})") from None


def _rows(text: str, path: Path) -> list[dict]:
    """The rows of a CSV text, each cell read by _cell; a row with more cells than the header, or a cell beyond the
    csv module's field limit, is refused with its line."""
    reader = csv.DictReader(io.StringIO(text, newline=""))  # a quoted cell keeps its line breaks, to be refused
    rows = []
    try:
        for row in reader:
            if None in row:
                raise SpecError(path, f"line {reader.line_num}", f"{len(row[None])} cell(s) more than the header's columns")
            rows.append({name: _cell(value or "") for name, value in row.items()})
    except csv.Error as error:
        raise SpecError(path, f"line {reader.line_num + 1}", f"not a CSV row ({error})") from None
    return rows


def _read_checked(path: Path, stamp_dir: str | Path | None) -> tuple[str, list[dict] | None]:
    """The text of ``path`` once its rows passed the schema, and those rows where they were parsed to be checked;
    rows None where ``stamp_dir`` holds the stamp of these bytes (already checked: not parsed again). Without a
    ``stamp_dir`` every read checks."""
    content, text = _text(path)
    stamp = _stamp(content)
    if passed(stamp_dir, stamp):
        return text, None
    rows = _rows(text, path)
    _validate(rows, path)
    mark_passed(stamp_dir, stamp)
    return text, rows


def check_serving_measurements(path: str | Path, stamp_dir: str | Path | None = None) -> None:
    """Refuse ``path`` as read_serving_measurements does; where its bytes are stamped, without parsing its rows."""
    _read_checked(Path(path), stamp_dir)


def read_serving_measurements(path: str | Path, stamp_dir: str | Path | None = None) -> pd.DataFrame:
    """The rows of ``path`` as a DataFrame (blank cells NaN), after validating every row against the schema."""
    text, rows = _read_checked(Path(path), stamp_dir)
    return pd.DataFrame.from_records(_rows(text, Path(path)) if rows is None else rows)


def _validate(rows: list[dict], path: Path) -> None:
    try:
        validate_rows(rows, "serving_measurements", path)
    except SpecError as error:
        where = re.match(r"\[(\d+)\]\.?(.*)", error.key)
        if where is None:
            raise
        # the column alone (a refused name is appended to the key path; the reason quotes it)
        index, column = int(where.group(1)), where.group(2).split(".")[0]
        row_id = str(rows[index].get("id"))
        shown = row_id if row_id.isprintable() else repr(row_id)  # the message stays one line
        raise SpecError(path, f"line {index + 2} (id {shown}): {column or 'row'}", error.reason) from None
    seen: set = set()
    for index, row in enumerate(rows):
        if row["id"] in seen:
            raise SpecError(path, f"line {index + 2}: id", f"{row['id']!r} is given twice")
        seen.add(row["id"])
