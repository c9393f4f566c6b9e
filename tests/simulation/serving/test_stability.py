"""The service bound (sim/simulation/serving/stability.py): by hand on linear passes, never
below what a saturated server answers, and what ``serve`` says above it."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.model.pass_curves import PrefillLoad
from sim.simulation.serving import (
    ClosedLoop,
    Fixed,
    FixedK,
    Poisson,
    Trace,
    simulate_serving,
    work_out,
)
from sim.simulation.serving.stability import batch_grid, open_load_bounds, service_bound
from tests.conftest import ROOT
from tests.simulation.serving.helpers import plan

SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"


def test_batch_grid():
    assert batch_grid(1) == [1]
    assert batch_grid(16) == list(range(1, 17))
    grid = batch_grid(1024)
    assert grid[:16] == list(range(1, 17)) and grid[-1] == 1024
    assert all(b / a <= 2.0**0.25 + 0.05 for a, b in itertools.pairwise(grid[15:-1]))


def test_the_bound_by_hand_plain_decoding():
    """Decode 10 ms at batch 1, the decode curve 8 + 0.05 ms a token: t(B) = 10 + 0.05 (B - 1),
    least per token at the largest batch, 4: 10.15 / 4 = 2.5375 ms; 60 tokens each (no
    prefill) -> 152.25 ms of server time a request, 6.568 requests/s."""
    p = plan(Poisson(1.0), k=3, output=60, max_running_requests=4)
    b = service_bound(p, p.drafting(FixedK(0)))
    assert (b.batch, b.draft, b.accept_length) == (4, 0, 1.0)
    assert b.iteration_ms == pytest.approx(10.15)
    assert b.decode_ms == pytest.approx(60 * 10.15 / 4) and b.prefill_ms == 0.0
    assert b.rate_per_s == pytest.approx(1000 / 152.25)


def test_the_bound_by_hand_speculating_with_prefill():
    """k = 3 at alpha 0.7: E[L] = 1 + 0.7 + 0.49 + 0.343 = 2.533. At batch 4 the batch-1
    cycle grows by two drafter steps over 4 rows (2 x 0.01 x 3), a verify over 16 tokens
    (0.08 x 12) and an extend over one token a row (0.01 x 3): + 1.05 ms. 59 tokens decode
    (the prefill gives the first). Prefill-first: the cheapest prefill token is at the
    full 8192-token budget, (4 + 0.01 x 8192) / 8192 target + (0.5 + 0.002 x 8192) / 8192
    drafter, times the 100-token prompt."""
    p = plan(
        Poisson(1.0), k=3, output=60, input_tokens=100, max_running_requests=4, prefill="model"
    )
    b = service_bound(p, p.drafting(FixedK(3)))
    length = 1 + 0.7 + 0.7**2 + 0.7**3
    assert (b.batch, b.draft) == (4, 3) and b.accept_length == pytest.approx(length)
    t = p.cost.batch1_cycle(3).total_ms + 1.05
    assert b.iteration_ms == pytest.approx(t)
    assert b.decode_tokens == 59
    assert b.decode_ms == pytest.approx(59 * t / (4 * length))
    per_token = (4 + 0.01 * 8192) / 8192 + (0.5 + 0.002 * 8192) / 8192
    assert b.prefill_ms == pytest.approx(100 * per_token)
    assert p.cost.prefill_ms(PrefillLoad(8192, 8192.0, 8192.0), True) / 8192 == pytest.approx(
        per_token
    )
    assert b.rate_per_s == pytest.approx(1000 / (b.decode_ms + b.prefill_ms))


@pytest.mark.parametrize("k", [0, 3])
def test_a_saturated_server_answers_no_more_than_the_bound(k):
    """A closed loop of as many users as running slots keeps the batch full: the tokens it
    delivers over the window, in requests of 80 tokens a second, are under the bound, and
    near it on passes whose time does not depend on context (plain decoding reaches it:
    every iteration a full batch of one token each; speculation loses a cycle's overshoot
    past the token count)."""
    p = plan(ClosedLoop(8), k=3, output=Fixed(80), requests=300, warmup=8)
    policy = FixedK(k)
    bound = service_bound(p, p.drafting(policy)).rate_per_s
    rec = simulate_serving(p, work_out(p, {"p": policy}), replications=1, seed=3).records["p"][0]
    answered = 1000.0 * rec.tokens_delivered / 80 / rec.window_ms
    assert 0.9 * bound <= answered <= bound * (1 + 1e-12)


def test_only_an_open_load_is_checked():
    closed = plan(ClosedLoop(3))
    assert open_load_bounds(closed, {"k": closed.drafting(FixedK(3))}) is None
    one = np.ones(4, dtype=np.int64)
    replay = plan(Trace(np.arange(4.0), 10 * one, 20 * one, -one), requests=4)
    assert open_load_bounds(replay, {"k": replay.drafting(FixedK(3))}) is None
    with pytest.raises(ValueError, match="trace"):
        service_bound(replay, replay.drafting(FixedK(3)))
    poisson = plan(Poisson(7.0))
    draftings = {"k": poisson.drafting(FixedK(3)), "off": poisson.drafting(FixedK(0))}
    rate, bounds = open_load_bounds(poisson, draftings)
    assert rate == 7.0 and set(bounds) == {"k", "off"}


def serve(*args: str):
    result = CliRunner().invoke(main, ["serve", str(SERVING), *args])
    return result.exit_code, result.output


def test_serve_above_the_bound_answers_at_once(tmp_path):
    """1000 requests a second on the serving scenario (about 3.1 and 3.5 at most): the
    verdict, each policy's bound, nothing simulated; exit status 0. (It ran for minutes.)"""
    code, out = serve("--rate", "1000", "--plot", str(tmp_path / "figs"))
    assert code == 0, out
    assert "UNSTABLE: 1000 requests/s is more than the server answers" in out
    assert "k = 2:" in out and "no speculation (k = 0):" in out and "Not simulated" in out
    assert "no figures" in out and not list(tmp_path.rglob("*.png"))
    code, out = serve("--rate", "1000", "-q", "--json")
    doc = json.loads(out)
    assert doc["kind"] == "serve" and doc["stable"] is False
    assert sorted(doc["unstable"]) == ["baseline", "speculative"]
    for b in doc["service_bounds"].values():
        assert 1.0 < b["rate_per_s"] < 10.0 and b["batch"] == 1024
    assert "speculative" not in doc and "per_user_tok_s" not in out
    path = tmp_path / "unstable.json"
    path.write_text(out)
    result = CliRunner().invoke(main, ["plot", str(path)])
    assert result.exit_code == 2 and "nothing was simulated" in result.output


def test_serve_above_one_bound_runs_neither():
    """Between the two bounds: speculation cannot carry the load, plain decoding perhaps;
    the comparison is paired, so neither is simulated and the text says which is which."""
    code, out = serve("--rate", "3.3", "-q", "--json")
    doc = json.loads(out)
    bounds = doc["service_bounds"]
    assert bounds["speculative"]["rate_per_s"] < 3.3 < bounds["baseline"]["rate_per_s"]
    assert doc["unstable"] == ["speculative"]
    code, out = serve("--rate", "3.3", "-q")
    assert code == 0 and "more than the server answers with k = 2:" in out
    assert "the load is under it" in out
