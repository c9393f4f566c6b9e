"""``specsim tree-load``: the summary, the JSON document, plots and one-line errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT
from tests.helpers import replay_once

LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
SMALL = [
    "--set",
    "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
    "--set",
    "workload.output_tokens=48",
    "--requests",
    "8",
    "--replications",
    "2",
    "-q",
    "--concurrency",
    "1,8",
    "--tree",
    "5/4/8",
]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["tree-load", *args])
    return result.exit_code, result.output


def test_json_document_and_text(tmp_path):
    code, out = run(LLAMA, *SMALL, "--json", "--plot", str(tmp_path))
    assert code == 0, out
    doc = json.loads(out[out.index("{") :])
    assert doc["kind"] == "tree-load" and doc["concurrencies"] == [1, 8]
    assert doc["trees"] == ["tree 5/4/8"] and doc["chains"] == ["chain 5"]
    point = doc["points"][0]
    assert set(point["per_user_tok_s"]) == {"off", "chain 5", "tree 5/4/8"}
    assert point["tree_over_chain"]["tree 5/4/8"]["chain 5"]["per_user_tok_s"]["mean"] > 0
    assert doc["best_draft_table"][0][0] == 1 and doc["best_draft_table"][-1][1] == 1024
    assert {p.name for p in tmp_path.iterdir()} == {
        "tree-load-throughput.png",
        "tree-load-ratio.png",
    }
    code, text = run(LLAMA, *SMALL, "--concurrency", "1")
    assert code == 0 and "where the tree stops beating the chain" in text
    assert "closed loops of 1 user;" in text  # one user, not "1 users"


def test_the_first_screen_fits_and_verbose_has_the_rest(monkeypatch):
    """The answer (where each tree stops beating each chain, the best draft per load), the
    per-user tok/s with their intervals and one line of assumptions: at most 25 lines of
    at most 100 characters with two trees over the default seven loads; --verbose adds
    the paired ratios and every assumption. One study (2 draws: the lines do not depend on
    their number) rendered both ways."""
    import sim.studies.serving.tree_load as study
    from sim.report.screen import fits

    once = replay_once(study.tree_load_study, ignoring=("executor", "progress"))
    monkeypatch.setattr(study, "tree_load_study", once)
    two = [*SMALL[:-4], "--tree", "5/4/8", "--tree", "6/8/32", "--draws", "2"]  # default loads
    code, text = run(LLAMA, *two)
    assert code == 0, text
    rows = text.splitlines()
    assert fits(text, lines=25), (len(rows), max(map(len, rows)))
    assert rows[2] == "where the tree stops beating the chain:"
    assert "tree / chain, paired" not in text and "assumptions:" not in text
    code, full = run(LLAMA, *two, "--verbose")
    assert code == 0 and "tree / chain, paired" in full and "assumptions:" in full


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--tree", "5/4/200"], "--tree"),
        (["--concurrency", "1,x"], "--concurrency"),
        (["--concurrency", "0,4"], "--concurrency"),
    ],
)
def test_bad_input_is_one_line(args, flag):
    code, out = run(LLAMA, *SMALL, *args)
    assert code == 2 and out.strip().count("\n") == 0 and flag in out, out


SERVING = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
#: The shipped serving scenario at the command's defaults, only smaller.
TINY = ["--requests", "6", "--replications", "2", "--draws", "2", "-q", "--concurrency", "1,4"]


def test_a_chain_scenario_is_compared_with_sglangs_default_tree():
    """The shipped serving scenario drafts a chain of 2 and gives no rank shape: at the
    defaults its chain meets SGLang's default tree 5/4/8, whose ranks below the top-1 come
    from the named prior; the answer says both, the same in the text and the document, on
    a first screen of at most 25 lines."""
    from sim.model.tree.presets import DEFAULT_RANK_PROFILE
    from sim.report.screen import fits

    code, out = run(SERVING, *TINY, "--json")
    assert code == 0, out
    doc = json.loads(out[out.index("{") :])
    assert doc["trees"] == ["tree 5/4/8"] and doc["chains"] == ["chain 2"]
    assert set(doc["defaults"]) == {"tree", "acceptance.rank_profile"}
    assert "SGLang's default EAGLE tree" in doc["defaults"]["tree"]
    assert DEFAULT_RANK_PROFILE in doc["defaults"]["acceptance.rank_profile"]
    topics = [a.split(":", 1)[0] for a in doc["assumptions"]]
    assert topics[:2] == ["default tree", "default rank profile"]
    assert "auto_choose_speculative_params" in doc["assumptions"][0]
    code, text = run(SERVING, *TINY)
    assert code == 0, text
    assert fits(text, lines=25), text
    flat = " ".join(line.strip() for line in text.splitlines())
    assert "named defaults: " + "; ".join(doc["defaults"].values()) in flat
    cross = [c for c in doc["crossings"] if c["metric"] == "per_user_tok_s"]
    assert len(cross) == 1 and "tree 5/4/8 vs chain 2 (per-user tok/s)" in flat
    for p in doc["points"]:  # the table's means are the document's, to its one decimal
        for name, r in p["per_user_tok_s"].items():
            assert f"{r['mean']:.1f}" in flat, name


def test_what_the_user_gives_is_not_defaulted():
    """A --tree and a rank profile given: nothing named as a default."""
    code, out = run(LLAMA, *SMALL, "--concurrency", "1", "--json")
    assert code == 0, out
    doc = json.loads(out[out.index("{") :])
    assert doc["defaults"] == {}
    code, text = run(LLAMA, *SMALL, "--concurrency", "1")
    assert code == 0 and "named defaults" not in text


@pytest.mark.parametrize("chain", ["100", "65"])
def test_a_chain_longer_than_num_steps_allows_is_refused(chain):
    """``--chain`` has the bound of ``speculation.num_steps`` (``MAX_NUM_STEPS``, 64),
    which ``--set speculation.num_steps=100`` is refused by: one line naming ``--chain``
    and the bound, exit 2, before anything is simulated (no progress output either)."""
    from sim.scenario.sections.bounds import MAX_NUM_STEPS

    result = CliRunner().invoke(
        main,
        ["tree-load", LLAMA, "--tree", "5/4/8", "--chain", chain, "--concurrency", "1",
         "--replications", "1", "--requests", "3"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("specsim: error: --chain: "), line
    assert f"{chain} is not in the range 1<=x<={MAX_NUM_STEPS}" in line, line


def test_chain_lengths_up_to_the_bound_are_accepted():
    """``check_chains`` takes 1 and ``MAX_NUM_STEPS`` itself and refuses one more, or none."""
    from sim.errors import SpecsimError
    from sim.scenario.sections.bounds import MAX_NUM_STEPS
    from sim.studies.serving.tree_load_drafts import check_chains

    check_chains([1, MAX_NUM_STEPS])
    for bad in ([MAX_NUM_STEPS + 1], [0], []):
        with pytest.raises(SpecsimError) as caught:
            check_chains(bad)
        assert caught.value.param == "chains"


def test_text_and_json_give_the_same_intervals():
    """--draws: each tree / chain ratio's 90% interval from inputs and model and its sign,
    the same in the text as in the document; --draws 0: none drawn."""
    code, out = run(LLAMA, *SMALL, "--draws", "2", "--json")
    assert code == 0, out
    doc = json.loads(out[out.index("{") :])
    assert doc["interval90"]["draws"] == 2 and doc["interval90"]["replications_per_draw"] == 2
    code, text = run(LLAMA, *SMALL, "--draws", "2", "--verbose")
    assert code == 0, text
    for p in doc["points"]:
        r = p["tree_over_chain"]["tree 5/4/8"]["chain 5"]["per_user_tok_s"]
        lo, hi = r["interval90"]
        assert lo <= r["mean"] <= hi and r["sign"] in ("wins", "loses", "undecided")
        assert f"{r['mean']:.3f} [{lo:.3f}, {hi:.3f}] {r['sign']}" in text
    (cross,) = [c for c in doc["crossings"] if c["metric"] == "per_user_tok_s"]
    assert len(cross["interval90"]) == 2 and "90% interval from inputs and model" in text
    assert doc["points"][1]["beyond_measured_batch"] and "beyond the highest measured" in text
    code, out = run(LLAMA, *SMALL, "--draws", "0", "--json")
    assert json.loads(out[out.index("{") :])["interval90"]["draws"] == 0


def test_sequential_replications_are_counted_and_all_replications_runs_them_all():
    """By default a load whose comparisons settle on its first 4 replications stops
    there, and the document counts what ran; --all-replications runs every one."""
    args = [a if a != "2" else "6" for a in SMALL] + ["--draws", "0", "--json"]
    seq, full = run(LLAMA, *args), run(LLAMA, *args, "--all-replications")
    assert seq[0] == full[0] == 0, seq[1] + full[1]
    a = json.loads(seq[1][seq[1].index("{") :])
    b = json.loads(full[1][full[1].index("{") :])
    assert [p["replications"] for p in b["points"]] == [6, 6]
    assert b["replications_run"] == 2 * 6 * 3  # two loads, three drafts
    ran = [p["replications"] for p in a["points"]]
    assert set(ran) <= {4, 6} and a["replications_run"] == 3 * sum(ran)
    assert (min(ran) < 6) == any("replications: sequential" in x for x in a["assumptions"])
