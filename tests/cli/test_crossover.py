"""``specsim crossover`` through click's runner: text, JSON kind, bad input."""

from __future__ import annotations

import io
import json

from click.testing import CliRunner

from sim.cli import main
from tests.helpers import replay_once
from tests.studies.serving.helpers import LLAMA

SMALL = [
    "--set",
    "workload.output_tokens=24",
    "--requests",
    "6",
    "--replications",
    "2",
    "-q",
]


def invoke(*args: str):
    return CliRunner().invoke(main, ["crossover", str(LLAMA), *SMALL, *args])


def test_json_document():
    res = invoke("--concurrency", "1,4", "--num-steps", "3", "--no-refine", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["kind"] == "crossover"
    assert doc["load_kind"] == "concurrency"
    assert doc["grid"] == [1.0, 4.0]
    assert doc["seed"] == 20261130 and doc["replications"] == 2 and doc["requests"] == 6
    metrics = {c["metric"] for c in doc["curves"]}
    assert metrics == {"per_user_tok_s", "aggregate_tok_s", "tpot_p50_ms", "tpot_p99_ms"}
    for curve in doc["curves"]:
        assert [p["load"] for p in curve["points"]] == [1.0, 4.0]
        assert curve["summary"]
        for p in curve["points"]:
            assert p["gain"]["mean"] > 0 and len(p["gain"]["ci95"]) == 2
    # the per-user crossover as engine configs: k up to the batch before it stops paying
    per_user = next(c for c in doc["curves"] if c["metric"] == "per_user_tok_s")
    configs = doc["engine_configs"].get("3")
    if not per_user["crossings"] and all(p["gain"]["mean"] >= 1 for p in per_user["points"]):
        assert configs["table"] == [[1, 4, 3]]
    if configs is not None:
        rows = configs["table"]
        assert (
            configs["vllm"]["speculative_config"]["num_speculative_tokens_per_batch_size"] == rows
        )
        schedule = configs["trtllm"]["speculative_config"]["draft_len_schedule"]
        assert schedule["1"] == 3


def test_text_and_rates():
    res = invoke("--rate", "1,8", "--num-steps", "2", "--metric", "per_user_tok_s", "--no-refine")
    assert res.exit_code == 0, res.output
    assert "Poisson" in res.output and "req/s" in res.output
    assert (
        "per-user decode speed by load: k=0's level and each k's gain (--verbose: 95% intervals)"
        in res.output
    )
    assert "k=2:" in res.output


def test_bad_input_is_one_line_and_exit_2():
    for args, needle in (
        (("--concurrency", "0,4"), "--concurrency"),
        (("--concurrency", "4"), "at least two loads"),
        (("--concurrency", "inf,1"), "integer >= 1, got inf"),  # was an OverflowError
        (("--concurrency", "1,nan"), "integer >= 1, got nan"),
        (("--metric", "bogus"), "--metric"),
        (("--num-steps", "0"), "--num-steps"),
        (("--set", "speculation.num_steps=0"), "does not speculate"),
    ):
        res = invoke(*args)
        assert res.exit_code == 2, (args, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("specsim: error:"), res.output
        assert needle in lines[0], (args, lines[0])


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _with_bar(monkeypatch, stream: io.StringIO, *args: str):
    """Run crossover with its progress bar drawn on ``stream``; the (done, total) calls."""
    from sim.cli import progress as progress_mod
    from sim.cli import serving_options

    calls: list[tuple[int, int | None]] = []
    monkeypatch.setattr(progress_mod, "SHOW_AFTER_S", 0.0)

    class Recording(progress_mod.ProgressBar):
        def __init__(self, enabled: bool = True, stream_: object = None):
            super().__init__(enabled, stream=stream)

        def __call__(self, done: int, total: int | None) -> None:
            calls.append((done, total))
            super().__call__(done, total)

    monkeypatch.setattr(serving_options, "ProgressBar", Recording)
    quiet = [a for a in SMALL if a != "-q"]
    grid = ["--concurrency", "1,8", "--num-steps", "3", "--json"]
    res = CliRunner().invoke(main, ["crossover", str(LLAMA), *quiet, *grid, *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output), calls


def test_the_bar_advances_through_the_bisections_towards_their_bound(monkeypatch):
    """The grid (2 loads x 2 policies) runs as one batch with its bar; the bisections then
    simulate one load at a time (8 points here, 2 replications each; 10 when every
    bisection goes to neighbouring user counts, ``--draws 0``: here one load's pair is
    left out, its bracket inside the draws' range): the bar advances per replication
    through them out of their bound, known before they start: the 6 users between 1 and 8
    (every metric's bisections share their loads), 2 policies each, 2 replications: 24,
    with the time left beside the count."""
    for args, runs in (((), 12), (("--draws", "0"), 14)):
        tty = FakeTty()
        doc, calls = _with_bar(monkeypatch, tty, *args)
        assert calls[:4] == [(1, 4), (2, 4), (3, 4), (4, 4)]
        one_by_one = calls[4:]
        assert doc["runs"] == runs
        assert one_by_one == [(i, 24) for i in range(1, 2 * (runs - 4) + 1)]
        assert all(total is not None for _, total in calls)
        out = tty.getvalue()
        assert "simulating, stage 2" in out and f"{2 * (runs - 4)}/24, about" in out
        assert " left" in out


def test_no_bar_with_quiet_or_when_piped(monkeypatch):
    quiet = FakeTty()
    _with_bar(monkeypatch, quiet, "-q")
    assert quiet.getvalue() == ""
    pipe = io.StringIO()
    _with_bar(monkeypatch, pipe)
    assert pipe.getvalue() == ""


def test_the_first_screen_keeps_to_25_lines_when_every_k_has_engine_configs(monkeypatch):
    """Ten lines of engine configs a k: with several k, the screen names them and
    ``--verbose`` prints them (the three renderings of one study)."""
    import sim.studies.serving.crossover as study

    once = replay_once(study.crossover, ignoring=(0, "draws"))  # each command's evaluator
    monkeypatch.setattr(study, "crossover", once)
    args = ("--concurrency", "1,4", "--num-steps", "3:4", "--no-refine")
    res = invoke(*args, "--json")
    assert res.exit_code == 0, res.output
    ks = list(json.loads(res.output)["engine_configs"])
    assert len(ks) > 1  # the case this test is about (k = 3 and 4 pay at 1 and 4 users)
    screen = invoke(*args)
    assert screen.exit_code == 0, screen.output
    assert len(screen.output.splitlines()) <= 25, screen.output
    assert f"engine configs of k = {', '.join(ks)} up to their crossovers: --verbose" in (
        screen.output
    )
    verbose = invoke(*args, "--verbose")
    for k in ks:
        assert f"k = {k} up to the crossover, as engine configs" in verbose.output


def test_four_k_and_every_other_metric_fit_the_first_screen():
    """k = 1-4 with three other metrics, none crossing: the other metrics' lines say "never
    pays" and "pays at every load" once their heading has said "at the loads simulated"
    (with the heading's words repeated in each, this screen took 26 lines)."""
    screen = invoke("--concurrency", "1,4", "--num-steps", "1:4", "--no-refine")
    assert screen.exit_code == 0, screen.output
    rows = screen.output.splitlines()
    assert len(rows) <= 25 and max(map(len, rows)) <= 100, screen.output
    assert "other metrics at the loads simulated" in screen.output
    assert (
        "never pays;" in screen.output
        and "simulated\n" not in screen.output.split("other metrics")[1].split("\n\n")[0]
    )
