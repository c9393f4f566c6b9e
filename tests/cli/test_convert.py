"""``specsim convert`` of a list: the list is the draft length.

``--cumulative`` and ``--per-position`` give one rate per draft position, so their length
is k. A ``--num-steps`` that disagrees is refused the same way for both: repeating the
last rate to reach a larger k would be an assumption the measurement does not carry, and
dropping listed rates to reach a smaller one would convert another draft than the one
measured.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main

LISTS = [("--cumulative", "0.8,0.6,0.4"), ("--per-position", "0.8,0.7,0.6")]


@pytest.mark.parametrize(("option", "rates"), LISTS)
@pytest.mark.parametrize("num_steps", ["5", "2"])
def test_a_num_steps_other_than_the_lists_length_is_refused(option, rates, num_steps):
    result = CliRunner().invoke(main, ["convert", option, rates, "--num-steps", num_steps])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"specsim: error: {option}: lists 3 positions but --num-steps is {num_steps} "
        "(a list gives k: list every position, or leave --num-steps out)"
    )


@pytest.mark.parametrize(("option", "rates"), LISTS)
@pytest.mark.parametrize("num_steps", [[], ["--num-steps", "3"]])
def test_a_list_converts_at_its_own_length_with_no_assumption(option, rates, num_steps):
    result = CliRunner().invoke(main, ["convert", option, rates, *num_steps, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["num_steps"] == 3 and len(doc["per_position"]) == 3
    assert doc["assumption"] is None


NEGATIVE_ZERO = [["--alpha", "-0", "--num-steps", "2"], ["--per-position", "-0,0"]]


@pytest.mark.parametrize("args", NEGATIVE_ZERO)
def test_a_negative_zero_rate_reads_as_zero(args):
    # '--alpha -0' printed 'conditional per-position -0.0000, -0.0000' and "alpha": -0.0
    text = CliRunner().invoke(main, ["convert", *args]).output
    assert "-0.0000" not in text
    doc = json.loads(CliRunner().invoke(main, ["convert", *args, "--json"]).output)
    assert all(str(r) == "0.0" for r in [doc["alpha"], *doc["per_position"]])


@pytest.mark.parametrize(
    "args",
    [
        ["--alpha", "0.8", "--num-steps", "5"],
        [
            "--accept-length",
            "4",
            "--topk",
            "4",
            "--num-draft-tokens",
            "8",
            "--num-steps",
            "5",
            "--rank-profile",
            "sequoia-jf68m-llama2-7b",
        ],
    ],
)
def test_every_value_starts_in_one_column(args):
    """The labels of convert's text (chain and tree) are one column wide: every value starts
    at character 25 (once 'alpha (equal-rate equiv.)' and 'read as a chain (k=5)' broke
    it)."""
    result = CliRunner().invoke(main, ["convert", *args])
    assert result.exit_code == 0, result.output
    rows = [r for r in result.output.splitlines() if not r.startswith("assumption: ")]
    assert len(rows) >= 6
    for row in rows:
        assert row[24] == " " and row[25] != " ", row
