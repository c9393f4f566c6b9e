"""The sweep CSV: floats as the shortest text that reads back to the same double, lowercase
booleans, lists as compact JSON, empty cells for None."""

from __future__ import annotations

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from sim.studies.sweep_store import csv_cell, rows_to_csv


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_trip_in_the_fewest_digits(x: float) -> None:
    text = csv_cell(x)
    assert float(text) == x
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
    digits = max(1, len(mantissa))
    # no text with fewer significant digits reads back to the same double
    assert all(float(f"{x:.{d}g}") != x for d in range(1, digits))


def test_cells() -> None:
    assert csv_cell(0.1 + 0.2) == "0.30000000000000004" and csv_cell(33.3) == "33.3"
    assert csv_cell(True) == "true" and csv_cell(False) == "false"
    assert csv_cell(None) == "" and csv_cell([0.8, 0.7]) == "[0.8,0.7]" and csv_cell(3) == "3"
    text = rows_to_csv([{"a": 1.5, "ok": True, "p": [1, 2]}], ["a", "ok", "p"])
    assert list(csv.reader(io.StringIO(text))) == [["a", "ok", "p"], ["1.5", "true", "[1,2]"]]
