"""``specsim serve``: the summary, the JSON document, bad input, determinism, plots, sweeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT
from tests.helpers import replay_once

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
TRACE = ROOT / "scenarios" / "traces" / "synthetic-chat-code.csv"
SMALL = ["--replications", "2", "--requests", "24", "-q", "--concurrency", "4"]


def serve(*args: str) -> tuple[int, str]:
    """``specsim serve ARGS --verbose`` (every row; the first screen has its own test),
    without the 90% intervals' draws unless ARGS give ``--draws``: the draws were about
    40% of each call's time, and these tests read the runs (the draws have their own
    tests in tests/studies/serving/test_draws.py and test_model_error_cli.py)."""
    result = CliRunner().invoke(main, ["serve", "--draws", "0", *args, "--verbose"])
    return result.exit_code, result.output


def test_the_first_screen_is_the_answer_in_a_screen():
    """Without --verbose: the paired table's speeds and latencies, the SLO, one line of
    what it rests on, in at most 25 lines of at most 100 characters."""
    result = CliRunner().invoke(main, ["serve", str(SERVING), *SMALL])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 100, result.output
    for label in ("per-user tok/s", "aggregate tok/s", "TTFT ms", "TPOT ms", "E2E ms"):
        assert any(ln.startswith(label) for ln in lines), label
    assert "speedup (paired)" in result.output and "--verbose: them, the quantiles" in result.output
    assert lines[1].startswith("mean [95% CI]")  # the answer right under the title
    assert "; scheduler: " in " ".join(lines[-5:])  # what it rests on, last


def serve_json(*args: str) -> dict:
    code, out = serve(*args, "--json")
    assert code == 0, out
    return json.loads(out)


def test_text_summary_side_by_side():
    code, out = serve(str(SERVING), *SMALL)
    assert code == 0, out
    assert "k = 2" in out and "no speculation (k = 0)" in out and "speedup (paired)" in out
    for label in ("per-user tok/s", "aggregate tok/s", "TTFT ms", "TPOT ms", "ITL ms", "E2E ms"):
        assert label in out
    assert "assumptions:" in out


def test_littles_line_is_the_finite_window_identity(monkeypatch):
    """A short open-loop run (24 requests at 2/s: its edges are a sizeable share of L):
    the printed L is lambda W + edge over the window, exactly in the JSON, and the text
    row prints those three numbers (the two renderings of one run)."""
    from sim.studies.serving import serve as study

    # each command binds the file anew and makes its own progress bar
    monkeypatch.setattr(study, "serve_bound", replay_once(study.serve_bound, (0, "progress")))
    args = [str(SERVING), "--replications", "2", "--requests", "24", "-q", "--rate", "2"]
    doc = serve_json(*args)
    for name in ("speculative", "baseline"):
        law = doc[name]["little"]
        window = law["window"]["rate_x_time"]["mean"] + law["window"]["edge"]["mean"]
        assert law["in_system"]["mean"] == pytest.approx(window, rel=1e-12)
    code, out = serve(*args)
    assert code == 0, out
    row = next(ln for ln in out.splitlines() if ln.startswith("Little"))
    law = doc["speculative"]["little"]
    assert row.startswith("Little: L = lambda W + edge"), row
    cell = (
        f"{law['in_system']['mean']:.2f} = {law['window']['rate_x_time']['mean']:.2f} + "
        f"{law['window']['edge']['mean']:.2f}"
    )
    assert cell in row, row


def test_a_growing_backlog_is_said_in_text_and_json(monkeypatch):
    """3.0 requests a second of 512 tokens: under the most the server could answer (3.10
    and 3.47 a second, sim/simulation/serving/stability.py, an upper bound), so simulated,
    but more than it does answer: the requests in the system grow through the window, and
    the summary says its latencies are transient; at four closed-loop users it says
    nothing (and the JSON keeps each replication's backlog)."""
    args = ["--replications", "2", "--requests", "12", "-q", "--rate", "3.0"]
    code, out = serve(str(SERVING), *args)
    assert code == 0, out
    assert "UNSTABLE" not in out
    assert "NOT STEADY (speculative): in 2 of 2 replications" in out
    from sim.studies.serving import serve as study

    # at four users, the text and the JSON: one run (each command binds anew, its own bar)
    monkeypatch.setattr(study, "serve_bound", replay_once(study.serve_bound, (0, "progress")))
    code, out = serve(str(SERVING), *SMALL)
    assert code == 0 and "NOT STEADY" not in out
    doc = serve_json(str(SERVING), *SMALL)
    backlog = doc["speculative"]["backlog"]
    assert backlog["overloaded_replications"] == 0 and len(backlog["end"]) == 2


def test_json_document():
    doc = serve_json(str(SERVING), *SMALL, "--seed", "5")
    assert doc["kind"] == "serve" and doc["seed"] == 5 and doc["replications"] == 2
    for policy in ("speculative", "baseline"):
        for metric in (
            "per_user_tok_s",
            "aggregate_tok_s",
            "ttft_ms",
            "tpot_ms",
            "itl_ms",
            "e2e_ms",
        ):
            assert set(doc[policy][metric]) >= {"mean", "ci95", "p50", "p90", "p99"}, metric
            assert doc[policy][metric]["mean"] > 0
    assert doc["load"] == "closed loop of 4 users"
    assert doc["speedup"]["per_user_tok_s"]["mean"] > 0
    assert doc["baseline"]["accept_length"]["mean"] == 1.0


def test_same_seed_same_document_whatever_the_workers():
    """The runs and the interval's draws (two of them) alike."""
    one = serve_json(str(SERVING), *SMALL, "--workers", "1", "--draws", "2")
    two = serve_json(str(SERVING), *SMALL, "--workers", "2", "--draws", "2")
    assert one == two and one["interval90"]["draws_run"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "-1"], "--rate"),
        (["--concurrency", "0"], "--concurrency"),
        (["--concurrency", "2", "--rate", "1"], "at most one"),
        (["--set", "serving.kv_capacity_tokens=100"], "serving.kv_capacity_tokens"),
        (["--set", "serving.rate_per_s=-2.0"], "serving.rate_per_s"),
        (
            ["--set", "serving.rate_per_s=2.0", "--set", "serving.concurrency=2"],
            "at most one of concurrency, rate_per_s, trace",
        ),
        (["--set", "serving.k_table=[[2, 4, 3]]"], "start at batch size 1"),
        (["--set", "workload.lengths='empirical'"], "lengths_trace"),
        (
            ["--set", "workload.lengths='ordered'"],
            "workload: lengths = 'ordered' needs lengths_trace",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    code, out = serve(str(SERVING), "-q", *args)
    assert code == 2 and message in out, out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("0.0,10,5\n0.5,-3,5\n", "input_tokens (row 2)"),
        ("0.0,10,5\n0.5,10,0\n", "output_tokens (row 2): must be in [1, 1,000,000], got 0"),
        ("0.0,10,100000000\n", "output_tokens (row 1): must be in [1, 1,000,000]"),
        ("0.0,10000001,5\n", "input_tokens (row 1): must be in [0, 10,000,000]"),
        ("1.0,10,5\n0.5,10,5\n", "arrival_s (row 2): arrivals must not go backwards"),
        ("-1,10,5\n", "arrival_s (row 1)"),
        ("0.0,ten,5\n", "input_tokens (row 1)"),
    ],
)
def test_bad_traces_name_the_file_row_and_column(tmp_path, rows, message):
    path = tmp_path / "bad.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n" + rows)
    code, out = serve(str(SERVING), "-q", "--trace", str(path))
    assert code == 2 and "bad.csv" in out and message in out, out


def test_a_trace_with_unknown_columns_or_classes(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("when,input_tokens,output_tokens\n0,1,1\n")
    code, out = serve(str(SERVING), "-q", "--trace", str(path))
    assert code == 2 and "missing column arrival_s" in out
    path.write_text("arrival_s,input_tokens,output_tokens,class\n0,1,1,poetry\n")
    code, out = serve(str(SERVING), "-q", "--trace", str(path))
    assert code == 2 and "unknown class 'poetry'" in out and "class (row 1)" in out


def test_the_synthetic_trace_replays_with_its_classes():
    mix = (
        'acceptance={mix=[{name="chat", weight=0.7, alpha=0.717}, '
        '{name="code", weight=0.3, alpha=0.912}]}'
    )
    doc = serve_json(str(SERVING), "--set", mix, "--trace", str(TRACE), "--replications", "1", "-q")
    assert doc["load"].startswith("trace") and "200 requests" in doc["load"]
    assert doc["requests"] + doc["warmup_requests"] == 200


def test_plots(tmp_path):
    code, out = serve(str(SERVING), *SMALL, "--plot", str(tmp_path))
    assert code == 0, out
    names = sorted(p.name for p in Path(tmp_path).iterdir())
    assert names == ["serve-batch-sizes.png", "serve-latency.png", "serve-per-user-tok-s.png"]


def test_sweep_over_serving_fields(tmp_path):
    out_dir = tmp_path / "sw"
    result = CliRunner().invoke(
        main,
        [
            "sweep",
            str(SERVING),
            "--grid",
            "serving.concurrency=1,4",
            "--out",
            str(out_dir),
            "--replications",
            "2",
            "--requests",
            "12",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((out_dir / "sweep.json").read_text())
    assert doc["mode"] == "serving" and len(doc["rows"]) == 2
    row = doc["rows"][1]
    assert row["serving.concurrency"] == 4
    assert row["speculative_per_user_tok_s_mean"] > 0 and row["baseline_tpot_ms_p99"] > 0
    assert "speedup_aggregate_tok_s_mean" in row


LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
TREE = (
    "--set",
    "speculation.topk=4",
    "--set",
    "speculation.num_draft_tokens=8",
    "--set",
    "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
)


def test_a_tree_is_served_as_a_tree_not_priced_as_a_chain():
    code, out = serve(str(LLAMA), *SMALL, *TREE)
    assert code == 0, out
    assert "tree 5/4/8" in out and "k = 5" not in out
    assert "trees: the tree SGLang's beam search builds" in out


def test_a_draft_table_falls_back_by_batch_size():
    table = "serving.draft_table=[[1,2,5,4,8],[3,8,3,1,4],[9,1024,0,1,1]]"
    doc = serve_json(str(LLAMA), *SMALL, *TREE, "--set", table)
    assert doc["policies"]["speculative"] == ("k table 1-2: tree 5/4/8, 3-8: 3, 9-1024: 0")


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("serving.draft_table=[[1,8,5,4,200]]", "serving.draft_table"),
        ("serving.draft_table=[[1,8,5,4]]", "serving.draft_table"),
        ("serving.k_table=[[1,8,3]]", "serving.k_table"),
        ("serving.draft_table=[[1,8,5,8,20]]", "serving.draft_table"),  # 5 ranks known
    ],
)
def test_bad_tree_policies_are_one_line(setting, field):
    profile = ("--set", "acceptance.rank_profile=medusa-vicuna-7b-head0")
    code, out = serve(str(LLAMA), *SMALL, *TREE, *profile, "--set", setting)
    assert code == 2, out
    assert out.strip().count("\n") == 0 and field in out, out


def test_slo_attainment_interval_stays_in_0_1():
    """The shipped serving scenario over 2 replications of 30 requests: SLO attainment
    0.967 whose Student-t interval would reach 1.390; a share's interval is clipped to
    [0, 1], in the JSON document and in the text summary. Uniform expert routing
    (serving.expert_skew = 0) keeps the server loaded enough to miss the SLO sometimes."""
    uniform = ("--set", "serving.expert_skew=0")
    doc = serve_json(str(SERVING), *uniform, "-q", "--replications", "2", "--requests", "30")
    for policy in ("speculative", "baseline"):
        shares = [
            doc[policy]["slo_attainment"],
            *doc[policy]["p_per_user_tok_s_at_least"].values(),
        ]
        for share in shares:
            lo, hi = share["ci95"]
            assert 0.0 <= lo <= share["mean"] <= hi <= 1.0, (policy, share)
    assert doc["speculative"]["slo_attainment"]["ci95"][1] == 1.0
    code, text = serve(str(SERVING), *uniform, "-q", "--replications", "2", "--requests", "30")
    line = next(ln for ln in text.splitlines() if ln.startswith("SLO attainment"))
    assert code == 0 and "1.390" not in line and "0.967 [0.543, 1.000]" in line, line


def _four_row_trace(tmp_path) -> str:
    path = tmp_path / "t.csv"
    rows = "".join(f"{0.1 * i:.1f},10,{20 + i}\n" for i in range(4))
    path.write_text("arrival_s,input_tokens,output_tokens\n" + rows)
    return str(path)


def test_requests_given_with_a_trace_replay_its_first_rows(tmp_path):
    """--requests N with a trace replays its first warm-up + N rows and measures N (it was
    ignored: every row replayed), and the output says how many of its rows were replayed;
    the later rows never arrive (the mean output is that of the rows replayed)."""
    trace = _four_row_trace(tmp_path)
    args = ["-q", "--trace", trace, "--replications", "1", "--set", "workload.warmup_requests=1"]
    code, out = serve(str(SERVING), *args, "--requests", "2")
    assert code == 0, out
    assert "(the first 3 of its 4 requests)" in out.splitlines()[0], out.splitlines()[0]
    assert "1 warm-up and 2 measured requests: the trace's first 3 of 4 rows replayed" in out
    assert "(workload.requests set by --requests)" in out
    assert "does not apply" not in out
    doc = serve_json(str(SERVING), *args, "--requests", "2")
    assert doc["requests"] == 2 and doc["warmup_requests"] == 1
    assert doc["mean_output_tokens"] == pytest.approx(21.0)  # rows 20, 21, 22 of 20..23
    full = serve_json(str(SERVING), *args)
    assert full["requests"] == 3 and full["mean_output_tokens"] == pytest.approx(21.5)


def test_more_requests_than_a_trace_holds_is_one_line(tmp_path):
    trace = _four_row_trace(tmp_path)
    code, out = serve(str(SERVING), "-q", "--trace", trace, "--requests", "5")
    assert code == 2, out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "workload.requests" in lines[0], out
    assert lines[0].startswith("specsim: error: --requests: workload.requests: "), lines[0]
    assert f"5 measured requests after 0 warm-up need 5 rows; the trace {trace} has 4" in out


def test_a_scenario_files_requests_do_not_cut_a_trace(tmp_path):
    """The serving scenario's own workload.requests (200, for its closed loop) is not a
    count of the trace's rows: every row is replayed, and the output says so."""
    trace = _four_row_trace(tmp_path)
    code, out = serve(str(SERVING), "-q", "--trace", trace, "--replications", "1")
    assert code == 0, out
    assert "workload.requests (200) does not apply to a trace" in out
    assert "--requests N replays its first warm-up + N rows" in out


@pytest.mark.parametrize(
    ("setting", "field", "says"),
    [
        # the batch-1 times at 1e5 tokens of context and the batch-8 point at 256 extend to
        # a negative compute at a short context: a SimPy 'Negative delay' traceback
        ("timing.context_tokens=1e5", "timing.decode_ms", "negative compute time"),
        # reading 1e6 tokens of KV alone takes 41 ms, more than the 12.12 ms decode: it ran
        # and answered 1.53x at 2 users (5e6: 190 tok/s a user, above batch 1's 60)
        ("timing.context_tokens=1e6", "timing.decode_ms", "context tokens alone take"),
        (
            'timing.points=[{kind="decode",batch=8,ms=40.0,source="x",context_tokens=1e7}]',
            "timing.points[0]",
            "context tokens alone take",
        ),
    ],
)
def test_pass_times_the_context_cannot_hold_are_one_line(setting, field, says):
    code, out = serve(str(SERVING), *SMALL, "--set", setting)
    assert code == 2, out
    assert out.startswith(f"specsim: error: {SERVING}") and f": {field}: " in out, out
    assert says in out and out.count("\n") == 1


def test_a_serving_sweep_row_names_its_draft(tmp_path):
    """A serving sweep of a tree scenario wrote num_steps 3 and the tree's speculative
    columns, with no topk or num_draft_tokens (a batch-1 sweep's rows have both): the
    CSV read as a chain of 3."""
    args = ["sweep", str(SERVING), "--set", "speculation.num_steps=3", *TREE]
    args += ["--grid", "serving.concurrency=1", "--out", str(tmp_path / "sw")]
    result = CliRunner().invoke(main, [*args, "--replications", "2", "--requests", "8", "-q"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads((tmp_path / "sw" / "sweep.json").read_text())["rows"]
    assert (row["num_steps"], row["topk"], row["num_draft_tokens"]) == (3, 4, 8)
    header = (tmp_path / "sw" / "sweep.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["serving.concurrency", "num_steps", "topk", "num_draft_tokens"]


def test_a_set_load_replaces_the_files_load_as_the_option_does():
    """``--set serving.rate_per_s`` on a closed-loop file is ``--rate`` (it replaces the
    file's concurrency, as ``acceptance.alpha`` replaces a file's ``per_position``)."""
    small = ["--replications", "2", "--requests", "24", "-q"]
    by_set = serve_json(str(SERVING), *small, "--set", "serving.rate_per_s=1.0")
    by_option = serve_json(str(SERVING), *small, "--rate", "1.0")
    assert by_set["load"] == "Poisson arrivals at 1 requests/s"
    assert by_set["speedup"] == by_option["speedup"]
    assert by_set["speculative"] == by_option["speculative"]


def test_a_load_option_keeps_where_every_other_value_came_from():
    """--rate/--concurrency/--trace replaced the load and marked every [serving] field as
    'set by --rate': the default host work read 'set by --rate' and a --set one too."""
    small = ["--replications", "1", "--requests", "8", "-q"]
    plain = serve_json(str(SERVING), *small)
    same = serve_json(str(SERVING), *small, "--concurrency", "16")  # the file's own load
    assert same["assumptions"] == plain["assumptions"]
    (host,) = [a for a in serve_json(str(SERVING), *small, "--rate", "1")["assumptions"]
               if a.startswith("host work:")]  # fmt: skip
    assert "(assumed, the default;" in host and "--rate" not in host
    doc = serve_json(str(SERVING), *small, "--rate", "1", "--set", "serving.host_us_per_request=30")
    (host,) = [a for a in doc["assumptions"] if a.startswith("host work:")]
    assert "30 us per running request" in host and "(set by --set)" in host


def test_one_token_outputs_have_no_decode_time_to_share():
    """Requests of one output token never decode: the JSON says so with an empty share of
    decode time by batch size (not NaN, which a JSON document cannot hold)."""
    doc = serve_json(
        str(SERVING),
        *SMALL,
        "--draws",
        "0",
        "--set",
        "workload.output_tokens=1",
        "--set",
        "workload.output_sigma=0",
    )
    for policy in ("speculative", "baseline"):
        assert doc[policy]["decode_batch_time_share"] == []


@pytest.mark.parametrize("as_json", [False, True])
def test_one_token_answers_have_no_decode_speed_and_no_warning(tmp_path: Path, as_json: bool):
    """Requests of one output token have no decode speed: per-user tok/s is NaN (null in
    the JSON), said without numpy's 'Mean of empty slice' warning on stderr."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,1,1\n-0,4,1\n")
    args = ["serve", str(SERVING), "--trace", str(trace), "--replications", "2", "-q"]
    result = CliRunner().invoke(main, [*args, *(["--json"] if as_json else [])])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def ordered(tmp_path: Path, *args: str) -> tuple[int, str]:
    """``serve`` of a six-task job replayed in file order (``lengths = 'ordered'``)."""
    path = tmp_path / "job.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n" + "0,100,50\n0,100,400\n" * 3)
    lengths = ["--set", "workload.lengths='ordered'"]
    trace = ["--set", f'workload.lengths_trace="{path}"']
    return serve(str(SERVING), "-q", "--replications", "2", *lengths, *trace, *args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "1"], "workload.lengths: 'ordered' replays a closed-loop job"),
        (["--set", "workload.warmup_requests=2"], "warmup_requests must be absent or 0"),
        (["--requests", "7"], "--requests: workload.requests: 7 requests need 7 tasks"),
    ],
)
def test_an_ordered_job_refuses_what_it_cannot_replay(tmp_path, args, message):
    code, out = ordered(tmp_path, *args)
    assert code == 2 and message in out and len(out.strip().splitlines()) == 1, out


def test_an_ordered_job_sends_every_task_once_and_is_measured_whole(tmp_path):
    code, out = ordered(tmp_path, "--concurrency", "2", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["load"].startswith("job of 6 tasks of ") and doc["load"].endswith("2 users")
    assert doc["requests"] == 6 and doc["warmup_requests"] == 0, doc
    # plain decoding of fixed lengths draws nothing: every replication the same
    assert (
        doc["baseline"]["aggregate_tok_s"]["ci95"][0]
        == doc["baseline"]["aggregate_tok_s"]["ci95"][1]
    )
    code, out = ordered(tmp_path, "--concurrency", "2", "--requests", "3")
    assert code == 0 and "the first 3 of 6 rows" in out, out
