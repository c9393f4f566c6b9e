"""Small serving plans built in code for the serving tests."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sim.binding.acceptance_model import acceptance_model, rank_shares
from sim.binding.closed_form import pass_times
from sim.model.batched_cost import IterationCost
from sim.model.pass_curves import LinearCurve, ServingCurves
from sim.model.tree.acceptance import TreeDraft
from sim.scenario.overrides import with_overrides
from sim.simulation.serving import (
    ClosedLoop,
    Fixed,
    SchedulerConfig,
    ServingPlan,
    Workload,
)
from tests.helpers import make

#: Passes whose time grows with the batch's tokens only (no KV or attention term): every
#: iteration at a given batch size and k costs the same, so finite-N laws are exact.
TOKEN_ONLY = ServingCurves(
    decode=LinearCurve(8.0, 0.05),
    verify=LinearCurve(18.0, 0.08),
    prefill=LinearCurve(4.0, 0.01),
    draft_step=LinearCurve(0.8, 0.01),
    draft_extend=LinearCurve(1.5, 0.01),
    draft_prefill=LinearCurve(0.5, 0.002),
)
#: The same with a KV-read term (iteration time grows with context).
WITH_KV = ServingCurves(
    decode=LinearCurve(8.0, 0.05, 2e-4),
    verify=LinearCurve(18.0, 0.08, 3e-4),
    prefill=LinearCurve(4.0, 0.01, 1e-4),
    draft_step=LinearCurve(0.8, 0.01, 1e-5),
    draft_extend=LinearCurve(1.5, 0.01, 1e-5),
    draft_prefill=LinearCurve(0.5, 0.002),
)


def scenario(acceptance: dict[str, Any] | None = None, k: int = 3, tokens: int = 60):
    """The test scenario of tests/helpers.py (decode 10, verify 20, draft 1 / 2, overhead
    0.5 ms) with ``acceptance`` (default alpha 0.7)."""
    return make(acceptance or {"alpha": 0.7}, k=k, tokens=tokens)


def plan(
    arrivals=None,
    *,
    acceptance: dict[str, Any] | None = None,
    k: int = 3,
    output=60,
    input_tokens=0,
    requests: int = 50,
    warmup: int = 0,
    curves: ServingCurves = TOKEN_ONLY,
    **scheduler: Any,
) -> ServingPlan:
    """A plan over the test scenario's batch-1 passes; ``scheduler`` fields override
    (default: max running = closed-loop users or 64, prefill skipped, no KV limit)."""
    sc = scenario(acceptance, k=k)
    arrivals = arrivals or ClosedLoop(1)
    users = arrivals.users if isinstance(arrivals, ClosedLoop) else 64
    config = {"max_running_requests": users, "prefill": "skip", **scheduler}
    out = Fixed(output) if isinstance(output, int) else output
    inp = Fixed(input_tokens) if isinstance(input_tokens, int) else input_tokens
    return ServingPlan(
        workload=Workload(arrivals, out, inp, requests=requests, warmup=warmup),
        scheduler=SchedulerConfig(**config),
        cost=IterationCost(pass_times(sc), curves),
        acceptance=acceptance_model(sc.acceptance, k),
    )


#: The drafter pass over m beams grows by this much per extra beam in the tree tests (the
#: scenario has no model geometry to tabulate it).
DRAFT_MS_PER_EXTRA_TOKEN = 0.3


def tree_scenario(acceptance: dict[str, Any], draft: TreeDraft, tokens: int = 60):
    """The test scenario drafting SGLang's tree ``draft``, drafter beams at
    ``DRAFT_MS_PER_EXTRA_TOKEN`` per extra beam."""
    sc = make(
        acceptance,
        k=draft.num_steps,
        tokens=tokens,
        topk=draft.topk,
        num_draft_tokens=draft.num_draft_tokens,
    )
    return with_overrides(
        sc, {"timing.draft_ms_per_extra_token": DRAFT_MS_PER_EXTRA_TOKEN}, source="test"
    )


def tree_plan(
    arrivals,
    draft: TreeDraft,
    *,
    acceptance: dict[str, Any],
    output: int = 60,
    requests: int = 50,
    warmup: int = 0,
    curves: ServingCurves = TOKEN_ONLY,
    draft_extend: str = "accepted",
    **scheduler: Any,
) -> ServingPlan:
    """A plan whose policies may draft ``draft`` (and chains up to its num_steps)."""
    sc = tree_scenario(acceptance, draft, output)
    users = arrivals.users if isinstance(arrivals, ClosedLoop) else 64
    config = {"max_running_requests": users, "prefill": "skip", **scheduler}
    assert sc.acceptance is not None
    return ServingPlan(
        workload=Workload(arrivals, Fixed(output), Fixed(0), requests=requests, warmup=warmup),
        scheduler=SchedulerConfig(**config),
        cost=IterationCost(
            pass_times(sc), curves, draft_ms_per_extra_token=DRAFT_MS_PER_EXTRA_TOKEN
        ),
        acceptance=acceptance_model(sc.acceptance, draft.num_steps),
        rank_shares=rank_shares(sc.acceptance, draft.topk),
        draft_extend=draft_extend,  # type: ignore[arg-type]
    )


def records_equal(a, b) -> None:
    """Two replications' records are the same, field by field and bit for bit."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        elif f.name in ("request_stats", "itl_stats"):
            assert repr(x) == repr(y), f.name
        else:
            assert x == y, f.name
