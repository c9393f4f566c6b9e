"""``specsim best-k`` and ``specsim capacity`` through click's runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from sim.cli import main
from tests.helpers import replay_once
from tests.studies.serving.helpers import LLAMA, SCENARIOS

SEED = SCENARIOS / "kimi-k25-8xpcie-eagle3.toml"

#: No draws of the 90% intervals (eight by default, about a third of each call's time): these
#: tests read the runs, the check, the configs and the text; the intervals have their own
#: tests (test_controllers_text_and_json_give_the_same_intervals below gives --draws 2).
SMALL = ["--set", "workload.output_tokens=24", "--requests", "6", "--replications", "2", "-q",
         "--draws", "0"]  # fmt: skip


@pytest.fixture(scope="module")
def best_k_runs() -> tuple[Result, Result]:
    """best-k on Llama at 1 and 4 users, k up to 5: its --json and its text, the two
    renderings of one study."""
    import sim.studies.serving.best_k as study

    args = ["best-k", str(LLAMA), *SMALL, "--concurrency", "1,4", "--num-steps", "5"]
    with pytest.MonkeyPatch.context() as mp:  # each command's evaluator and draws
        mp.setattr(study, "best_k", replay_once(study.best_k, ignoring=(0, "draws")))
        return CliRunner().invoke(main, [*args, "--json"]), CliRunner().invoke(main, args)


def test_best_k_json_and_text(best_k_runs):
    res, text = best_k_runs
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["kind"] == "best_k" and doc["objective"] == "per_user_tok_s"
    table = doc["vllm_speculative_config"]["num_speculative_tokens_per_batch_size"]
    assert table[0][0] == 1 and table[-1][1] == 4
    assert "table" in doc["check"]["policies"]
    res = text
    assert res.exit_code == 0 and '--speculative-config \'{"num_speculative_tokens"' in res.output
    configs = doc["engine_configs"]
    assert configs["vllm"]["speculative_config"]["num_speculative_tokens_per_batch_size"] == table
    assert (
        "draft_len_schedule" in configs["trtllm"]["speculative_config"] or configs["trtllm"]["note"]
    )
    assert [ln for ln in res.output.splitlines() if ln != ln.rstrip()] == []  # no trailing blanks


def test_best_k_check_cells_stay_apart_when_intervals_are_wide(best_k_runs):
    """A cell wider than its column (a long interval) still starts after a space."""
    from sim.report.best_k import render_best_k

    doc = json.loads(best_k_runs[0].output)
    for pol in doc["check"]["policies"].values():
        for point in pol["points"]:
            for adv in point["advantage_over"].values():
                adv["mean"], adv["ci95"] = 0.00012345, [-1234.56789, 12345.6789]
    rows = [r for r in render_best_k(doc).splitlines() if "1.23e+04]" in r]
    assert rows
    for row in rows:  # every cell's mean follows a space, never the last cell's bracket
        assert row.count("0.000123") == 2 == row.count(" 0.000123")


def test_best_k_goodput_needs_slo():
    args = ["best-k", str(LLAMA), *SMALL, "--concurrency", "1,2", "--objective", "goodput_req_s"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "TTFT or TPOT" in res.output


def test_capacity_json():
    # the seed (slow tokens): capacities of a few requests per second, cheap to simulate
    args = ["capacity", str(SEED), *SMALL, "--num-steps", "2", "--tpot-slo-ms", "20"]
    res = CliRunner().invoke(main, [*args, "--rtol", "0.2", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["kind"] == "capacity" and doc["slo"]["tpot_ms"] == 20.0
    assert [p["num_steps"] for p in doc["policies"]] == [0, 2]
    # the seed's eager verify is launch-bound (GPU work from the graphed decode, the CPU's
    # 30 ms of launches on top): a batch rides on those launches until its GPU work catches
    # up (tests/binding/test_serving_verify.py), while plain decoding's graphed step grows
    # from the first extra user; under a 20 ms TPOT the drafter carries more load although
    # it loses at batch 1 (33.3 ms / accept length 2 = 16.7 ms a token against 12.1)
    assert doc["policies"][1]["capacity_gain"] > 1.0
    res = CliRunner().invoke(main, ["capacity", str(LLAMA), *SMALL])
    assert res.exit_code == 2 and "TTFT or TPOT" in res.output


MIX = 'acceptance.mix=[{name="chat",weight=0.7,alpha=0.6},{name="code",weight=0.3,alpha=0.9}]'


def test_controllers_json_and_errors(monkeypatch):
    import sim.studies.serving.controllers as study

    base = ["controllers", str(SEED), "--set", MIX, *SMALL]
    phase = ["--phase", "6,1,chat=0.9,code=0.1", "--phase", "6,4,chat=0.1,code=0.9"]
    # the JSON and the text: one study (each command's plans and evaluator)
    once = replay_once(study.controller_study, ignoring=(0, 1))
    monkeypatch.setattr(study, "controller_study", once)
    res = CliRunner().invoke(main, [*base, *phase, "--k-table", "[[1,4,2],[5,64,1]]", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    # a table the user gave is no best-k table: it was called one (the JSON key too)
    assert doc["kind"] == "controllers" and doc["reference"] == "given k table"
    assert "best-k table" not in doc["policies"] and "given k table" in doc["policies"]
    assert len(doc["phases"]) == 2 and "SGLang adaptive" in doc["policies"]
    given = doc["engine_configs"]["given k table"]
    assert given["vllm"]["speculative_config"]["num_speculative_tokens_per_batch_size"] == [
        [1, 4, 2],
        [5, 64, 1],
    ]
    assert given["trtllm"]["speculative_config"]["draft_len_schedule"] == {"1": 2, "5": 1}
    assert "no flags express it" in given["sglang"]["note"]  # k 2 then k 1: not one threshold
    res = CliRunner().invoke(main, [*base, *phase, "--k-table", "[[1,4,2],[5,64,1]]"])
    assert "over the given k table" in res.output and "best-k" not in res.output
    monkeypatch.undo()  # the errors below are found before any study
    for args, needle in (
        (["--phase", "6,x"], "--phase"),
        (["--phase", "6,1,prose=1"], "unknown acceptance class"),
        ([*phase, "--k-table", "[[2,4,1]]"], "--k-table"),
        # int() made K = 2.5 a 2 and true a 1, silently; serving.k_table refuses them
        ([*phase, "--k-table", "[[1,4,2.5]]"], "must be integers"),
        ([*phase, "--k-table", "[[1,true,2]]"], "must be integers"),
        (["--phase", "6,inf,chat=1"], "finite positive rate"),  # was run as '6 requests at inf/s'
    ):
        res = CliRunner().invoke(main, [*base, *args])
        assert res.exit_code == 2, (args, res.output)
        assert needle in res.output
    res = CliRunner().invoke(main, ["controllers", str(SEED), *SMALL, *phase])
    assert res.exit_code == 2 and "chat" in res.output  # no mix: classes unknown


def test_controllers_phase_errors_name_the_phase_option():
    """The option is --phase (repeatable); there is no --phases to name."""
    serving = str(SCENARIOS / "kimi-k25-8xpcie-eagle3-serving.toml")  # one acceptance class
    res = CliRunner().invoke(main, ["controllers", serving, *SMALL])
    assert res.exit_code == 2
    assert res.output.strip() == (
        "specsim: error: --phase: a phase-changing workload needs an [[acceptance.mix]] of "
        "at least two classes"
    )
    res = CliRunner().invoke(main, ["controllers", serving, *SMALL, "--phase", "6,1,chat=1"])
    assert res.exit_code == 2
    assert res.output.startswith("specsim: error: --phase: unknown acceptance class 'chat'")


def test_an_slo_limit_out_of_range_names_its_option():
    """The SLO flags become serving.*_slo_ms overrides; a value past the field's bound was
    reported as 'option (--set): serving.tpot_slo_ms: ...', naming no option the user
    typed."""
    for flag, field in (("--tpot-slo-ms", "tpot"), ("--ttft-slo-ms", "ttft")):
        res = CliRunner().invoke(main, ["capacity", str(LLAMA), *SMALL, flag, "1e9"])
        assert res.exit_code == 2, res.output
        assert res.output.startswith(f"specsim: error: {flag} (--set): serving.{field}_slo_ms:")
        assert res.output.count("\n") == 1


TREE = [
    "--set", "speculation.topk=4", "--set", "speculation.num_draft_tokens=8",
    "--set", "speculation.num_steps=3", "--set", "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
]  # fmt: skip


def test_the_chain_studies_refuse_a_tree_scenario():
    """crossover, best-k, capacity and controllers vary a chain's k: on a tree scenario they
    ran chains of its top-1 rates without a word (crossover's k = 3 at 4 users: 1.08x,
    where serve gives the tree 0.92x), and refused --num-steps 1 with a tree error."""
    for command, more in (
        ("crossover", ["--concurrency", "1,4", "--num-steps", "1"]),
        ("best-k", ["--concurrency", "1,4"]),
        ("capacity", ["--tpot-slo-ms", "40"]),
        ("controllers", ["--set", MIX]),
    ):
        res = CliRunner().invoke(main, [command, str(SEED), *TREE, *SMALL, *more])
        assert res.exit_code == 2, (command, res.output)
        assert res.output.startswith(
            f"specsim: error: {SEED} (--set): speculation.topk: 4: the scenario drafts a tree"
        ), res.output
        assert "tree-load" in res.output and res.output.count("\n") == 1


def test_controllers_say_the_replayed_lengths():
    """The phase trace gives every request the scenario's mean lengths; the assumptions
    said 'lengths: lognormal, ...' (the scenario's, which the replay does not use)."""
    serving = str(SCENARIOS / "kimi-k25-8xpcie-eagle3-serving.toml")
    phase = ["--phase", "6,1,chat=0.9,code=0.1", "--phase", "6,4,chat=0.1,code=0.9"]
    res = CliRunner().invoke(
        main,
        ["controllers", serving, "--set", MIX, *SMALL, *phase, "--k-table", "[[1,64,2]]", "--json"],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    (line,) = [a for a in doc["assumptions"] if a.startswith("lengths:")]
    assert line.startswith(
        "lengths: every replayed request has the scenario's mean lengths, 1024 prompt and 24 "
        "output tokens (fixed)"
    )
    assert "(lognormal, means 1024 / 24 tokens" in line
    assert doc["input_tokens"] == 1024 and doc["output_tokens"] == 24


def test_controllers_text_has_no_trailing_blanks():
    """The reference's row (no advantage over itself) and one replication's rows (no
    interval) once ended in blanks."""
    phase = ["--phase", "6,1,chat=0.9,code=0.1", "--phase", "6,4,chat=0.1,code=0.9"]
    args = ["controllers", str(SEED), "--set", MIX, *SMALL, "--replications", "1", *phase]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "best-k table" in res.output
    assert [ln for ln in res.output.splitlines() if ln != ln.rstrip()] == []


def test_controllers_text_and_json_give_the_same_intervals(monkeypatch):
    """--draws 2: each advantage's 90% interval from inputs and model, in the text as in
    the document (the two renderings of one study)."""
    import sim.studies.serving.controllers as study
    from sim.report.crossover import fmt_interval

    once = replay_once(study.controller_study, ignoring=(0, 1))  # each command's own
    monkeypatch.setattr(study, "controller_study", once)

    phase = ["--phase", "6,1,chat=0.9,code=0.1", "--phase", "6,4,chat=0.1,code=0.9"]
    base = [
        "controllers",
        str(SEED),
        "--set",
        MIX,
        *SMALL,
        *phase,
        "--k-table",
        "[[1,4,2],[5,64,1]]",
    ]
    res = CliRunner().invoke(main, [*base, "--draws", "2", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["interval90"]["draws"] == 2 and doc["table_switches"] == []  # a given table
    text = CliRunner().invoke(main, [*base, "--draws", "2", "-v"]).output
    iv = doc["policies"]["k = 1"]["advantage_interval90"]["per_user_tok_s"]
    assert all(fmt_interval(x) in text for x in iv)
    assert "90% interval from inputs and model" in text
