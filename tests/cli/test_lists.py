"""Comma lists: what every list option says about a blank list."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.studies.serving_helpers import LLAMA

SMALL = ["--replications", "1", "--requests", "3", "-q"]

#: Options read as a sweep's --grid values (lists, ranges or both): a blank one says it is
#: empty, not the parser's internal "expected KEY=V1,V2,... got 'value='".
BLANK = [
    (["crossover", str(LLAMA), *SMALL], "--concurrency"),
    (["crossover", str(LLAMA), *SMALL], "--rate"),
    (["best-k", str(LLAMA), *SMALL], "--concurrency"),
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
