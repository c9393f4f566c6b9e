"""convert --topk: a tree accept length into its top-1 and rank rates."""

from __future__ import annotations

import json

import pytest

from sim.model.tree.metrics import from_tree_accept_length
from sim.model.tree.required import RankShape, accept_length
from tests.cli.test_errors import assert_one_line_error, run_cli

ARGS = ["--num-steps", "5", "--topk", "4", "--num-draft-tokens", "16"]


def test_round_trip_and_the_chain_reading_overstates():
    shares = (0.3, 0.15, 0.06)
    forms = from_tree_accept_length(3.2, 5, 4, 16, shares, "test")
    got = accept_length(RankShape(shares), forms.top1, (5, 4, 16))
    assert got == pytest.approx(3.2, abs=1e-6)
    assert forms.chain_alpha is not None and forms.chain_alpha > forms.top1
    assert sum(forms.drafts_per_depth) == 15


def test_topk_one_is_the_chain_alpha():
    forms = from_tree_accept_length(3.0, 4, 1, 5, (), "none")
    assert forms.top1 == pytest.approx(forms.chain_alpha, abs=1e-8)


def test_cli_json_and_text():
    out = run_cli(
        "convert", "--accept-length", "3.2", *ARGS, "--rank-rates", "0.7,0.2,0.05,0.02", "--json"
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["kind"] == "convert" and 0 < doc["top1"] < doc["chain_alpha_same_accept_length"]
    text = run_cli(
        "convert", "--accept-length", "3.2", *ARGS, "--rank-profile", "medusa-vicuna-7b-head0"
    )
    assert "top-1 rate" in text.output and "assumption:" in text.output


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--accept-length", "30", *ARGS, "--rank-rates", "0.7,0.2,0.05,0.02"], "outside"),
        (["--accept-length", "3", *ARGS], "--rank-rates or --rank-profile"),
        (["--accept-length", "3", *ARGS, "--rank-rates", "0.7,0.2"], "--topk is 4"),
        (["--accept-length", "3", *ARGS, "--rank-profile", "nope"], "unknown rank profile"),
        (
            [
                "--accept-length",
                "3",
                "--num-steps",
                "2",
                "--topk",
                "4",
                "--num-draft-tokens",
                "40",
                "--rank-rates",
                "0.7,0.2,0.05,0.02",
            ],
            "--num-draft-tokens: 40 must be in 2..21",
        ),
    ],
)
def test_bad_tree_conversions(extra, words):
    assert_one_line_error(run_cli("convert", *extra), words)
