"""When requests join the running batch, and how a token budget splits prompts: by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sim.simulation.serving import FixedK, simulate_serving, work_out
from sim.simulation.serving.prefills import Prefilling, prefill_chunks
from sim.simulation.serving.workload import Trace
from tests.simulation.serving.helpers import plan


def test_an_arrival_joins_the_batch_at_the_next_iteration_boundary() -> None:
    """Plain decoding (k = 0) of 10 tokens a request, prefill skipped: a decode iteration
    takes 10 ms alone and 10.05 ms for two (the test curves: 0.05 ms a token). Request 0
    runs from 0; request 1 arrives at 85 and joins at 90, when request 0's ninth
    iteration ends, not when it finishes. Request 0's last token comes at 90 + 10.05 =
    100.05; request 1 has 9 more alone: 100.05 + 90 = 190.05."""
    trace = Trace(np.array([0.0, 85.0]), np.array([0, 0]), np.array([10, 10]), np.array([-1, -1]))
    p = plan(trace, k=0, output=10, requests=2)
    run = simulate_serving(p, work_out(p, {"plain": FixedK(0)}), replications=1, seed=1)
    rec = run.records["plain"][0]
    assert rec.admitted_ms.tolist() == pytest.approx([0.0, 90.0])
    assert rec.finish_ms.tolist() == pytest.approx([100.05, 190.05])


def test_a_token_budget_takes_prompt_chunks_first_come_first_served() -> None:
    """Prompts of 4 and 5 tokens still to prefill and a budget of 5: the first whole (4),
    then 1 token of the second; the load is 5 tokens, 5 KV tokens and 4 x 5 / 2 + 1 = 11
    causal attention pairs (10 within the first chunk, 1 for the second's)."""
    chunks, load = prefill_chunks([Prefilling(None, 0, 4), Prefilling(None, 0, 5)], 5)
    assert [c for _, c in chunks] == [4, 1]
    assert (load.tokens, load.kv_tokens, load.pairs) == (5, 5.0, 11.0)
    none_left = [Prefilling(None, 0, 4), Prefilling(None, 0, 5)]
    assert [c for _, c in prefill_chunks(none_left, 4)[0]] == [4]
