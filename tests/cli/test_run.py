"""``specsim run`` with the Monte Carlo: flags, JSON keys, determinism, progress bar."""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.cli import progress as progress_mod
from tests.conftest import ROOT
from tests.helpers import MIXED

FAST = ["--replications", "4", "--requests", "30"]


def run_json(*args: str) -> dict:
    result = CliRunner().invoke(main, ["run", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_json_has_the_monte_carlo_keys(seed_path):
    doc = run_json(str(seed_path), *FAST, "--seed", "3")
    assert (doc["engine"], doc["seed"], doc["replications"], doc["requests"]) == ("fast", 3, 4, 30)
    assert set(doc["throughput_tok_s"]) == {"mean", "std", "ci95", "p5", "p50", "p95"}
    assert {"mean", "pmf", "theory_pmf"} <= set(doc["accept_length"])
    assert set(doc["cycle_ms"]) >= {"mean", "draft", "verify", "extend", "overhead"}
    for t in doc["targets"]:
        assert t["p_at_least"] == 0.0 and len(t["p_at_least_ci95"]) == 2
        assert "alpha_at_best" in t  # the closed-form keys stay
    assert doc["analytic"]["throughput_tok_s"] == pytest.approx(60.06, abs=0.01)


@pytest.mark.parametrize("engine", ["fast", "des"])
def test_same_seed_and_workers_give_identical_json(seed_path, engine):
    # the SimPy engine runs one replication per task, so --workers 2 really uses 2 processes
    args = [
        "run",
        str(seed_path),
        "--replications",
        "3",
        "--requests",
        "20",
        "--json",
        "--engine",
        engine,
        "--set",
        "timing.jitter_cv=0.3",
    ]
    a = CliRunner().invoke(main, args).output
    b = CliRunner().invoke(main, [*args, "--workers", "2"]).output
    c = CliRunner().invoke(main, args).output
    assert a == b == c and '"throughput_tok_s"' in a


def test_des_engine_gives_the_same_keys(seed_path):
    fast = run_json(str(seed_path), *FAST)
    des = run_json(str(seed_path), *FAST, "--engine", "des")
    assert des["engine"] == "des"
    assert set(des) == set(fast)
    assert set(des["throughput_tok_s"]) == set(fast["throughput_tok_s"])


def test_mix_scenario_runs_and_reports_classes(write_scenario):
    from tests.conftest import MINIMAL

    text = MINIMAL.replace("[acceptance]\nalpha = 0.7\n", "")
    # flat rates: no decay prior or shape error drawn, so the interval re-builds no spread
    # per draw (seconds; tests/uncertainty/test_sampled_mix.py covers that)
    text += '[acceptance]\nshape = "flat"\n'
    for c in MIXED["mix"]:
        text += "[[acceptance.mix]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in c.items())
    doc = run_json(str(write_scenario(text)), *FAST)
    assert [c["name"] for c in doc["classes"]] == ["chat", "code"]


def test_text_output_shows_the_distribution(seed_path):
    result = CliRunner().invoke(main, ["run", str(seed_path), *FAST, "--verbose"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "What acceptance reaches each target?" in out  # the closed form stays
    assert "Monte Carlo (fast engine, cycle fidelity, 4 replications x 30 requests" in out
    assert "p5" in out and "P(tok/s >= 150)" in out and "|" in out
    assert "simulating" not in out  # no progress bar when not a terminal


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--replications", "0"], "--replications"),
        (["--engine", "warp"], "--engine"),
        (["--seed", "-1"], "--seed"),
    ],
)
def test_bad_flags_exit_2(seed_path, args, needle):
    result = CliRunner().invoke(main, ["run", str(seed_path), *args])
    assert result.exit_code == 2
    assert needle in result.output and "Traceback" not in result.output


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal_after_a_while(monkeypatch):
    monkeypatch.setattr(progress_mod, "SHOW_AFTER_S", 0.0)
    tty = FakeTty()
    with progress_mod.ProgressBar(stream=tty) as bar:
        for done in range(1, 5):
            bar(done, 4)
    assert "simulating" in tty.getvalue()
    quiet = FakeTty()
    with progress_mod.ProgressBar(enabled=False, stream=quiet) as bar:
        bar(4, 4)
    assert quiet.getvalue() == ""
    pipe = io.StringIO()
    with progress_mod.ProgressBar(stream=pipe) as bar:
        bar(4, 4)
    assert pipe.getvalue() == ""
    monkeypatch.setattr(progress_mod, "SHOW_AFTER_S", 60.0)
    slow = FakeTty()
    with progress_mod.ProgressBar(stream=slow) as bar:
        bar(4, 4)
    assert slow.getvalue() == ""  # short runs draw nothing


def test_progress_bar_starts_again_for_each_batch_of_runs(monkeypatch):
    """best-k runs its selection (35 runs at default) and then its check (84): the bar
    reached 100% after the first batch and drew nothing while the user waited through the
    second. Each batch (its count restarting, or a new total) gets its own bar."""
    monkeypatch.setattr(progress_mod, "SHOW_AFTER_S", 0.0)
    tty = FakeTty()
    with progress_mod.ProgressBar(stream=tty) as bar:
        for done in range(1, 5):
            bar(done, 4)
        for done in range(1, 9):
            bar(done, 8)
    out = tty.getvalue()
    assert out.count("100%") == 2 and "simulating, stage 2" in out


def test_method_exact_reports_the_law_without_noise(seed_path):
    doc = run_json(str(seed_path), "--method", "exact")
    mc = run_json(str(seed_path), "--method", "monte-carlo")
    assert (doc["method"], doc["engine"], doc["replications"]) == ("exact", "exact", None)
    assert mc["method"] == "monte_carlo"
    lo, hi = doc["throughput_tok_s"]["ci95"]
    assert lo == hi == doc["throughput_tok_s"]["mean"]
    assert mc["throughput_tok_s"]["ci95"][0] <= lo <= mc["throughput_tok_s"]["ci95"][1]
    text = CliRunner().invoke(main, ["run", str(seed_path), "--method", "exact"]).output
    assert "Exact per-request law" in text and "no Monte Carlo" in text


def test_method_exact_without_a_law_exits_2_and_auto_falls_back(seed_path):
    jitter = ["--set", "timing.jitter_cv=0.2", *FAST]
    bad = CliRunner().invoke(main, ["run", str(seed_path), "--method", "exact", *jitter])
    assert bad.exit_code == 2 and "cycle times vary" in bad.output
    assert "Traceback" not in bad.output
    auto = run_json(str(seed_path), "--method", "auto", *jitter)
    assert auto["method"] == "monte_carlo"
    text = CliRunner().invoke(main, ["run", str(seed_path), "--method", "auto", "-q", *jitter])
    assert "this is the Monte Carlo" in text.output
    assert run_json(str(seed_path), "--method", "auto")["method"] == "exact"


def test_method_exact_refuses_options_that_only_shape_a_monte_carlo_sample(seed_path):
    # --engine des --replications 3 were accepted and silently ignored by the exact law
    args = ["run", str(seed_path), "--method", "exact", "--engine", "des", "--replications", "3"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == (
        "specsim: error: --engine: the exact law draws no Monte Carlo sample, so --engine, "
        "--replications would change nothing: drop them or use --method monte-carlo"
    )


def test_method_auto_says_which_monte_carlo_options_the_exact_law_left_unused(seed_path):
    args = ["run", str(seed_path), "--method", "auto", "--workers", "2", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "(--method auto: the law is exact; --workers unused)" in result.output


def test_a_name_that_reads_as_tex_is_drawn_as_written(tmp_path):
    """Matplotlib takes text between two '$' for TeX; "price $x^^$ tag" is not valid TeX and
    made `run --plot` fail with a traceback. Names are drawn as written."""

    text = (ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml").read_text()
    lines = [
        'name = "price $x^^$ tag"' if ln.startswith("name = ") else ln for ln in text.splitlines()
    ]
    path = tmp_path / "dollar.toml"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "figs"
    args = ["run", str(path), "--plot", str(out), "--replications", "2", "--requests", "10", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["cycle-breakdown.png", "distribution.png"]


def test_an_answer_outside_its_own_interval_says_why():
    """The H200 what-if states bandwidth_efficiency 1 and launch_us 17.55, each outside the
    5-95% of the range it gives them, so its 65.1 tok/s lies above its 90% interval: the
    run says so and names them. The seed's answer lies inside its interval: no such line."""
    from tests.conftest import ROOT, SEED

    h200 = str(ROOT / "scenarios" / "kimi-k25-8xh200-nvlink-eagle3.toml")
    small = ["--replications", "2", "--requests", "10", "-q"]
    out = CliRunner().invoke(main, ["run", h200, *small, "--verbose"]).output
    line = next(ln for ln in out.splitlines() if "lies outside it" in ln)
    assert "hardware.bandwidth_efficiency 1 (5-95% of its range" in line
    assert "hardware.launch_us 17.55" in line
    seed = CliRunner().invoke(main, ["run", str(SEED), *small, "--verbose"]).output
    assert "lies outside it" not in seed


def test_a_draft_length_beyond_the_best_k_search_runs(seed_path):
    # num_steps may go to 64, but the 90% interval modelled k = 1..32 only: k = 33 ended in
    # an IndexError traceback; the best k is still chosen in 1..32
    doc = run_json(str(seed_path), "--set", "speculation.num_steps=33", *FAST)
    lo, hi = doc["uncertainty"]["tok_s_interval90"]
    assert doc["num_steps"] == 33 and lo <= doc["analytic"]["throughput_tok_s"] <= hi
    assert all(t["best_num_steps"] <= 32 for t in doc["targets"])


def test_the_best_tree_line_carries_its_interval():
    """A tree scenario: the best tree's line is followed by its 90% interval, as the
    speculative (SGLang's tree) line is; both labels' tree columns line up."""

    llama = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
    tree = ["--set", "speculation.topk=4", "--set", "speculation.num_draft_tokens=8"]
    result = CliRunner().invoke(main, ["run", llama, *tree, "--replications", "1", "--verbose"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  best tree "))
    sglang = next(ln for ln in lines if ln.startswith("  SGLang's tree "))
    assert lines[at].index("drafts") == sglang.index("drafts")
    assert lines[at + 1].strip().startswith("90% interval from inputs and model: ")
    assert " tok/s, accept length [" in lines[at + 1]
    plain = next(ln for ln in lines if ln.startswith("  plain decoding "))
    spec = next(ln for ln in lines if ln.startswith("  speculative (tree 5/4/8) "))
    assert plain.index(" tok/s") == spec.index(" tok/s")  # the longer label widens both


def test_a_slow_interval_study_is_announced_on_a_terminal(seed_path):
    """A chain whose mix or per-request spread has uncertain acceptance inputs re-builds
    its rates in every draw (20-40 s): one line says so, on a terminal, unless --quiet."""
    from sim.binding.bound import bind
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import with_overrides

    seed = load_scenario(seed_path)
    mix = load_scenario(seed_path.with_name(seed_path.stem + "-mix.toml"))
    spread = with_overrides(seed, {"acceptance.concentration": 5.0})
    tree = with_overrides(
        mix,
        {
            "speculation.topk": 4,
            "speculation.num_draft_tokens": 8,
            "acceptance.rank_profile": "sequoia-jf68m-llama2-7b",
        },
    )
    for scenarios, said in [
        ([mix], True),
        ([seed, spread], True),
        ([seed], False),
        ([tree], False),
    ]:
        tty = FakeTty()
        progress_mod.announce_slow_intervals(map(bind, scenarios), stream=tty)
        assert ("re-builds its rates" in tty.getvalue()) is said
    for stream, enabled in [(FakeTty(), False), (io.StringIO(), True)]:
        progress_mod.announce_slow_intervals([bind(mix)], enabled=enabled, stream=stream)
        assert stream.getvalue() == ""


@pytest.mark.slow  # the mix's 90% intervals re-build its rates in each draw (20-40 s)
def test_the_chain_mix_answer_fits_30_lines():
    """The chain-mix scenario's answer: three targets, two classes, a per-request spread, in
    at most 30 lines of at most 100 characters (it printed 36); the mix's effective rates
    by position are under --verbose."""
    from sim.report.screen import fits

    mix = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml")
    result = CliRunner().invoke(main, ["run", mix, "--replications", "4", "-q"])
    assert result.exit_code == 0, result.output
    assert fits(result.output, lines=30), result.output
    assert "by class (share)    chat" in result.output and "(over the mix)" in result.output
    verbose = CliRunner().invoke(main, ["run", mix, "--replications", "4", "-q", "--verbose"])
    assert "expected over requests: effective per-position" in verbose.output
