"""Comma lists: an empty item is a typo, never dropped; a blank list says it is empty.

Every option that takes a comma-separated list (``1,2,4``, ``0.8,0.7``, ``verify_ms,decode_ms``)
refuses an empty item (``1,,4``, a leading ``,0.8`` or a trailing ``0.8,``) with the one
line ``specsim: error: OPTION: empty value in 'TEXT'`` and exit status 2, as
``crossover --concurrency`` always did: dropping the item instead would quietly run
another draft length or another load grid than the one typed. They all split through
``sim.studies.grid.split_list``. Each case fails before any simulation runs.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.errors import SpecsimError
from sim.studies.grid import split_list
from tests.studies.serving.helpers import LLAMA

SMALL = ["--replications", "1", "--requests", "3", "-q"]
TREE = ["--accept-length", "3", "--topk", "3", "--num-steps", "4", "--num-draft-tokens", "8"]
CALIBRATE = ["calibrate", "--scenario", str(LLAMA), "--baseline-tok-s", "80"]

#: (command line before the option, option, list text)
EMPTY_ITEMS = [
    (["convert"], "--cumulative", "0.8,,0.4"),
    (["convert"], "--per-position", "0.8,,0.7"),
    (["convert"], "--per-position", ",0.8"),
    (["convert"], "--per-position", "0.8,"),
    (["convert", *TREE], "--rank-rates", "0.3,,0.1"),
    (["tree-load", str(LLAMA), "--tree", "5/4/8", *SMALL], "--concurrency", "1,,4"),
    (["crossover", str(LLAMA), *SMALL], "--concurrency", "1,,4"),
    (["crossover", str(LLAMA), *SMALL], "--rate", "1,,4"),
    (["crossover", str(LLAMA), *SMALL], "--metric", "per_user_tok_s,,tpot_p50_ms"),
    (["crossover", str(LLAMA), *SMALL], "--num-steps", "2,,4"),
    (["best-k", str(LLAMA), *SMALL], "--concurrency", "1,,4"),
    (["search", str(LLAMA), *SMALL], "--topk", "1,,4"),
    (CALIBRATE, "--fit", "verify_ms,,decode_ms"),
    (["controllers", str(LLAMA), *SMALL], "--phase", "6,1,,chat=1"),
]


@pytest.mark.parametrize(
    ("before", "option", "text"), EMPTY_ITEMS, ids=[f"{b[0]} {o} {t}" for b, o, t in EMPTY_ITEMS]
)
def test_an_empty_item_is_one_error_line_naming_the_option(before, option, text):
    result = CliRunner().invoke(main, [*before, option, text])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.strip() == f"specsim: error: {option}: empty value in {text!r}"


def test_sweep_grids_name_the_key_too(tmp_path):
    grid = ["--grid", "acceptance.alpha=0.5,,0.7"]
    result = CliRunner().invoke(main, ["sweep", str(LLAMA), *grid, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "specsim: error: --grid: acceptance.alpha: empty value in '0.5,,0.7'"
    )


#: Options read as a sweep's --grid values (lists, ranges or both): a blank one says it is
#: empty, not the parser's internal "expected KEY=V1,V2,... got 'value='".
BLANK = [
    (["crossover", str(LLAMA), *SMALL], "--concurrency"),
    (["crossover", str(LLAMA), *SMALL], "--rate"),
    (["best-k", str(LLAMA), *SMALL], "--concurrency"),
    (["tree-load", str(LLAMA), "--tree", "5/4/8", *SMALL], "--concurrency"),
    (["search", str(LLAMA), *SMALL], "--topk"),
    (["search", str(LLAMA), *SMALL, "--topk", "1,2"], "--draft-tokens"),
]


@pytest.mark.parametrize(("before", "option"), BLANK, ids=[f"{b[0]} {o}" for b, o in BLANK])
def test_a_blank_list_says_it_is_empty(before, option):
    result = CliRunner().invoke(main, [*before, option, " "])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"specsim: error: {option}: empty: give a list such as 1,2,4 or START:STOP[:STEP]"
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["convert", "--per-position", " "], "--per-position: expected comma-separated numbers"),
        ([*CALIBRATE, "--fit", ""], "--fit: name at least one timing field"),
        (["crossover", str(LLAMA), *SMALL, "--metric", ""], "--metric: name at least one metric"),
    ],
)
def test_other_blank_lists_say_what_they_need(args, line):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith(f"specsim: error: {line}")


def test_split_list_strips_items_and_keeps_bracketed_commas():
    assert split_list(" 0.8, 0.7 ,0.6", source="--per-position") == ["0.8", "0.7", "0.6"]
    assert split_list("[0.9,0.8],0.7", source="--grid") == ["[0.9,0.8]", "0.7"]


def test_split_list_of_blank_text_is_no_items():
    """No text at all is an empty list (each option says what it needs), not an empty item."""
    assert split_list("", source="--fit") == []
    assert split_list("  ", source="--fit") == []


@pytest.mark.parametrize("text", ["1,,4", ",1", "1,", ",", " , "])
def test_split_list_refuses_an_empty_item(text):
    with pytest.raises(SpecsimError) as err:
        split_list(text, source="--concurrency")
    assert str(err.value) == f"--concurrency: empty value in {text!r}"
