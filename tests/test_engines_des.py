"""The SimPy engine: an exact event trace of a deterministic case, and the closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from sim.engines.des import run_replication
from sim.montecarlo import replication_rngs, simulate, summarize
from sim.scenario import load_scenario
from sim.theory import leviathan_accept_length

TRACE_FILE = """\
name = "trace"
[timing]
decode_ms = 10.0
verify_ms = 20.0
draft_step_ms = 1.0
draft_extend_ms = 2.0
cycle_overhead_ms = 0.5
[speculation]
num_steps = 2
[acceptance]
alpha = {alpha}
[workload]
output_tokens = 4
requests = 2
"""


def traced(write_scenario, alpha: float):
    from sim.acceptance import acceptance_model
    from sim.cycletime import cycle_time_model
    from sim.engines.common import EnginePlan

    sc = load_scenario(write_scenario(TRACE_FILE.format(alpha=alpha)))
    plan = EnginePlan(acceptance_model(sc.acceptance, 2), cycle_time_model(sc), 4, 2)
    events: list[tuple[float, int, int, str]] = []
    out = run_replication(
        plan,
        replication_rngs(np.random.SeedSequence(0)),
        trace=lambda *e: events.append(e),
    )
    return events, out


def cycle_events(t0: float, req: int, cyc: int, length: int) -> list[tuple[float, int, int, str]]:
    # draft (k - 1 = 1 step, 1 ms) -> verify (20 ms) -> accept -> extend (2 ms) -> overhead
    return [
        (t0 + 1.0, req, cyc, "draft"),
        (t0 + 21.0, req, cyc, "verify"),
        (t0 + 21.0, req, cyc, f"accept L={length}"),
        (t0 + 23.0, req, cyc, "extend"),
        (t0 + 23.5, req, cyc, "overhead"),
    ]


def test_exact_trace_all_rejected(write_scenario):
    events, out = traced(write_scenario, 0.0)
    expected = []
    t = 0.0
    for req in range(2):
        expected.append((t, req, 0, "start"))
        for cyc in range(4):  # one token a cycle
            expected += cycle_events(t, req, cyc, 1)
            t += 23.5
        expected.append((t, req, 4, "done"))
    assert events == expected  # half-ms steps: exact in binary floating point
    assert out.cycles.tolist() == [[4, 4]]
    assert out.request_ms.tolist() == [[94.0, 94.0]]
    assert np.allclose(out.tok_s, 4000 / 94.0)
    assert out.accept_counts.tolist() == [[8, 0, 0]]
    assert out.phase_ms.tolist() == [[8.0, 160.0, 16.0, 4.0]]


def test_exact_trace_all_accepted_overshoots(write_scenario):
    events, out = traced(write_scenario, 1.0)
    expected = []
    t = 0.0
    for req in range(2):
        expected.append((t, req, 0, "start"))
        for cyc in range(2):  # three tokens a cycle: 3 + 3 = 6 >= 4
            expected += cycle_events(t, req, cyc, 3)
            t += 23.5
        expected.append((t, req, 2, "done"))
    assert events == expected  # half-ms steps: exact in binary floating point
    assert out.emitted_tokens.tolist() == [[6, 6]]  # emitted, overshoot included
    assert np.allclose(out.tok_s, 4000 / 47.0)  # only the 4 needed tokens count


def test_des_matches_the_closed_forms(seed_path):
    sc = load_scenario(seed_path)
    res = simulate(sc, engine="des", replications=4, requests=40)
    summ = summarize(res)
    counts = res.accept_counts.sum(axis=0)
    n = counts.sum()
    lengths = np.repeat(np.arange(1, 4), counts)
    se = lengths.std(ddof=1) / np.sqrt(n)
    assert abs(summ.accept_length_mean - leviathan_accept_length(0.618, 2)) < 4 * se
    assert summ.cycle_ms["mean"] == pytest.approx(33.3)
