"""SGLang tree rows (topk > 1) as calibration points: tok/s on the tree's cycle, the accept
length through the tree's closed form; the calibrated tree scenario reproduces its row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "trees"
# bench_speculative rows: plain decoding 140.647 tok/s; tree 5/4/8 at 218.996 tok/s, AL 3.666
BASELINE, TREE_TOK_S, TREE_AL = 140.647, 218.996, 3.666


def calibrated(tmp_path: Path) -> Path:
    out = tmp_path / "cal.toml"
    args = ["calibrate", "--scenario", str(DATA / "sglang-tree-base.toml")]
    args += ["--sglang-bench", str(DATA / "sglang-bench-tree.jsonl"), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out


def test_a_calibrated_tree_scenario_reproduces_its_row(tmp_path):
    result = CliRunner().invoke(main, ["run", str(calibrated(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["tree"]["num_draft_tokens"] == 8 and doc["tree"]["topk"] == 4
    # written values carry 5 significant digits: the row comes back to that precision
    assert doc["analytic"]["accept_length"] == pytest.approx(TREE_AL, rel=2e-4)
    assert doc["analytic"]["throughput_tok_s"] == pytest.approx(TREE_TOK_S, rel=5e-4)
    assert doc["baseline_tok_s"] == pytest.approx(BASELINE, rel=5e-4)


def test_the_tree_row_fixes_the_top1_rate_by_the_closed_form(tmp_path):
    from sim.binding.bound import bind
    from sim.scenario.load import load_scenario

    acc = bind(load_scenario(calibrated(tmp_path))).acceptance
    # E[L] of SGLang's tree at the written top-1 rate, not a chain's at num_steps 5
    assert acc.mean_accept_length() == pytest.approx(TREE_AL, rel=2e-4)
    assert acc.tree.drafts == 7


def test_without_a_rank_shape_the_row_times_the_cycle_only(tmp_path):
    base = tmp_path / "base.toml"
    text = (DATA / "sglang-tree-base.toml").read_text()
    base.write_text(
        text.replace('rank_profile = "sequoia-jf68m-llama2-7b"\n', "").replace(
            "topk = 4\nnum_draft_tokens = 8\n", ""
        )
    )
    args = ["calibrate", "--scenario", str(base), "--sglang-bench"]
    args += [str(DATA / "sglang-bench-tree.jsonl"), "--out", str(tmp_path / "o.toml")]
    result = CliRunner().invoke(main, [*args, "--verbose"])  # every residual and note
    assert result.exit_code == 0, result.output
    assert "tok/s at tree 5/4/8" in result.output
    assert "tree rows' accept lengths need the ranks below the top-1" in result.output


def test_a_tree_row_given_as_point_figures_calibrates_as_the_bench_row(tmp_path):
    from sim.scenario.load import load_scenario

    out = tmp_path / "points.toml"
    args = ["calibrate", "--scenario", str(DATA / "sglang-tree-base.toml")]
    args += ["--baseline-tok-s", str(BASELINE), "--point", f"5/4/8:{TREE_AL}:{TREE_TOK_S}"]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    by_points, by_bench = load_scenario(out), load_scenario(calibrated(tmp_path))
    # the same figures with the same relative error: the same fit, only the sources differ
    assert by_points.timing == by_bench.timing
    assert by_points.acceptance == by_bench.acceptance
    assert by_points.speculation == by_bench.speculation


@pytest.mark.parametrize(
    ("point", "words"),
    [
        ("5/4/99:3.6:200", "num_draft_tokens"),  # more than the tree's 4 + 4 x 16 candidates
        ("5/4/8:6.5:200", "accept length"),  # deeper than num_steps + 1
        ("5/1/7:3.0:200", "chain"),  # topk 1 with num_draft_tokens not num_steps + 1
        ("5/4:3.0:200", "NUM_STEPS/TOPK/NUM_DRAFT_TOKENS"),
    ],
)
def test_an_impossible_tree_point_is_one_line(point, words):
    args = ["calibrate", "--scenario", str(DATA / "sglang-tree-base.toml"), "--point", point]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert words in result.output and "Traceback" not in result.output
