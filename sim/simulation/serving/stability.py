"""The most requests a second a server can answer in steady state: a bound to check an
open load against before simulating it.

A Poisson load above what the server answers has no steady state: the queue grows
through the run and every latency grows with the run's length, so simulating it answers
nothing (and is slow: arrivals pile up for as long as the measured requests wait). This
module bounds the answer rate from above with the cost model alone.

Decode. A request that decodes n tokens runs C cycles with sum_{c <= C} L_c >= n, C a
stopping time, so E[C] E[L] >= n (Wald's identity) and E[C] >= n / E[L], with E[L] the
accept length of the policy's draft (over a mix of rates, E[n / E[L | rates]] >=
E[n] / E[L] by Jensen's inequality). A decode iteration of B requests serves B cycles in
t(B) ms, so the decode time a request costs the server is at least E[n] x
min_B t(B) / (B E[L_B]). t(B) is taken where it is least: each running request holding
only the shortest prompt, the draft extend over one token per request, and the per-token
extend term at its smaller end; B runs over every batch size to ``DENSE_BATCHES``, then a
geometric grid (``GRID_RATIO``) to the largest batch the server and its KV cache admit.
The time per decode token falls with the batch in every pass the cost model prices (the
weights are read once per pass), so the least is at the largest batch; the grid only
guards against a curve that does not.

Prefill. With prefill-first batching a prefill iteration runs alone, so each request
also costs its prompt's prefill: at least its tokens at the cheapest per-token prefill
over chunk sizes 1, 2, 4, ... and the token budget (each token reading itself only), the
drafter's prefill included when the server speculates. With chunked batching the prompt
is fused into decode iterations and is not counted (the bound is then looser, still a
bound); without prefill (``prefill = "skip"``) there is none. Preemptions only add work.

The bound is 1000 / (decode ms + prefill ms) requests per second; an offered rate above
it is certainly more than the server answers. Below it the run may still be overloaded
(the batch's contexts are longer than the shortest prompt, iterations run partly empty):
the simulation says, and ``metrics.Backlog`` flags a backlog that grows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sim.model.batched_cost import IterationCost
from sim.model.controllers import AdaptivePolicy
from sim.model.drafts import Draft, is_tree, max_tokens
from sim.model.pass_curves import PrefillLoad
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.workload import Poisson, Trace

__all__ = [
    "DENSE_BATCHES",
    "GRID_RATIO",
    "LoadCheck",
    "ServiceBound",
    "batch_grid",
    "check_open_load",
    "open_load_bounds",
    "service_bound",
]

#: Batch sizes evaluated one by one; beyond, a geometric grid of this ratio.
DENSE_BATCHES = 16
GRID_RATIO = 2.0**0.25


@dataclass(frozen=True, slots=True)
class ServiceBound:
    """An upper bound on the requests per second a server answers under one policy.

    ``rate_per_s``: the bound; ``batch``, ``draft``, ``accept_length``, ``iteration_ms``:
    where the decode time per token is least (B requests drafting ``draft``, E[L], the
    iteration's least time); ``decode_tokens``: E[tokens a request decodes] (its output
    less the prefill's token); ``decode_ms`` / ``prefill_ms``: the least server time per
    request in each (``prefill_ms`` 0 when prefill is not counted, see the module
    docstring).
    """

    rate_per_s: float
    batch: int
    draft: Draft
    accept_length: float
    iteration_ms: float
    decode_tokens: float
    decode_ms: float
    prefill_ms: float

    @property
    def decode_tok_s(self) -> float:
        """Decode tokens a second at the best batch: B E[L] / t."""
        return 1000.0 * self.batch * self.accept_length / self.iteration_ms

    def to_dict(self) -> dict[str, object]:
        return {
            "rate_per_s": self.rate_per_s,
            "batch": self.batch,
            "draft": str(self.draft),
            "accept_length": self.accept_length,
            "iteration_ms": self.iteration_ms,
            "decode_tok_s": self.decode_tok_s,
            "decode_tokens_per_request": self.decode_tokens,
            "decode_ms_per_request": self.decode_ms,
            "prefill_ms_per_request": self.prefill_ms,
        }


def batch_grid(largest: int) -> list[int]:
    """Batch sizes 1..``DENSE_BATCHES``, then a geometric grid, and ``largest``."""
    sizes = list(range(1, min(largest, DENSE_BATCHES) + 1))
    b = float(DENSE_BATCHES)
    while b * GRID_RATIO < largest:
        b *= GRID_RATIO
        sizes.append(round(b))
    if largest > DENSE_BATCHES:
        sizes.append(largest)
    return sorted(set(sizes))


def _least_iteration_ms(
    cost: IterationCost, extend: int | None, batch: int, draft: Draft, context: float, drafter: bool
) -> float:
    """The least time of a decode iteration of ``batch`` requests whose contexts sum to
    ``context`` (module docstring; the host work the cost model adds included); ``extend``:
    the draft extend's tokens per request (1 over an accepted path, None padded)."""
    speculates = not (isinstance(draft, int) and draft == 0)
    s = np.array([context])
    if not speculates:
        return float(cost.decode_ms(batch, draft, s, None, drafter)[0])
    return min(
        float(
            cost.decode_ms(
                batch,
                draft,
                s,
                None,
                drafter,
                extend_tokens=extend,
                accepted_tokens=np.array([batch * m]),
            )[0]
        )
        for m in (1, max_tokens(draft))
    )


def service_bound(plan: ServingPlan, drafting: Drafting) -> ServiceBound:
    """The bound for a policy worked out on ``plan`` (``drafting``: ``ServingPlan.drafting``;
    module docstring), whose requests draw their lengths from its workload (ValueError for
    a trace: its requests are its own rows)."""
    w, config, cost = plan.workload, plan.scheduler, plan.cost
    if isinstance(w.arrivals, Trace):
        raise ValueError("a trace's requests are its own: no bound from the workload's lengths")
    input_mean, output_mean = w.input_tokens.mean, w.output_tokens.mean
    shortest = w.input_tokens.min_tokens
    prefill = config.prefill == "model"
    decode_tokens = max(output_mean - (1.0 if prefill else 0.0), 0.0)
    policy = drafting.policy
    drafter = policy.max_k > 0
    largest = config.max_running(policy)
    capacity = drafting.kv_capacity
    if capacity is not None:
        largest = min(largest, capacity // drafting.held(shortest))
    largest = max(largest, 1)
    adaptive = isinstance(policy, AdaptivePolicy)
    extend = 1 if plan.draft_extend == "accepted" else None
    trees = dict(drafting.trees)
    chain = plan.acceptance.expected_cumulative()
    best: tuple[float, int, Draft, float, float] | None = None
    for b in batch_grid(largest):
        top = drafting.by_batch[b]
        drafts: list[Draft] = [top]
        if adaptive and isinstance(top, int | np.integer):  # a chain (its k_for_batch)
            drafts = list(range(int(top) + 1))
        for draft in drafts:
            # E[L] over requests of ``draft``: 1 at k = 0, the chain's or the tree's mean
            if is_tree(draft):
                length = trees[draft].mean_accept_length()
            else:
                length = float(chain[: int(draft) + 1].sum())  # type: ignore[arg-type]
            ms = _least_iteration_ms(cost, extend, b, draft, float(b * shortest), drafter)
            per_token = ms / (b * length)
            if best is None or per_token < best[0]:
                best = (per_token, b, draft, length, ms)
    assert best is not None
    per_token, b, draft, length, ms = best
    decode_ms = decode_tokens * per_token
    prefill_ms = 0.0
    if prefill and config.batching == "prefill_first" and input_mean > 0:
        # the cheapest prefill per token over chunk sizes 1, 2, 4, ... and the budget
        budget = config.token_budget
        sizes = [2**i for i in range(int(math.log2(budget)) + 1)] + [budget]
        cheapest = min(
            cost.prefill_ms(PrefillLoad(t, float(t), float(t)), drafter) / t for t in sizes
        )
        prefill_ms = input_mean * cheapest
    total = decode_ms + prefill_ms
    rate = math.inf if total <= 0 else 1000.0 / total
    return ServiceBound(rate, b, draft, length, ms, decode_tokens, decode_ms, prefill_ms)


def open_load_bounds(
    plan: ServingPlan, draftings: Mapping[str, Drafting]
) -> tuple[float, dict[str, ServiceBound]] | None:
    """(offered rate, each policy's bound) for a Poisson load (``draftings``: the policies
    worked out on ``plan``, by name); None for a closed loop or a trace (a finite list of
    requests always ends)."""
    arrivals = plan.workload.arrivals
    if not isinstance(arrivals, Poisson):
        return None
    return arrivals.rate_per_s, {name: service_bound(plan, d) for name, d in draftings.items()}


@dataclass(frozen=True, slots=True)
class LoadCheck:
    """A Poisson load of ``offered_per_s`` against each policy's bound (by name): what every
    command that simulates an open load asks before simulating a point (a policy in
    ``unstable`` is not simulated there: the module docstring)."""

    offered_per_s: float
    bounds: Mapping[str, ServiceBound]

    @property
    def unstable(self) -> list[str]:
        """The policies the load is above, in ``bounds`` order."""
        return [n for n, b in self.bounds.items() if self.offered_per_s > b.rate_per_s]

    @property
    def stable(self) -> bool:
        return not self.unstable

    def to_dict(self) -> dict[str, object]:
        """``stable``, ``offered_rate_per_s``, ``service_bounds`` and ``unstable``: the
        fields ``serve`` reports an unstable load with."""
        return {
            "stable": self.stable,
            "offered_rate_per_s": self.offered_per_s,
            "service_bounds": {name: b.to_dict() for name, b in self.bounds.items()},
            "unstable": self.unstable,
        }


def check_open_load(plan: ServingPlan, draftings: Mapping[str, Drafting]) -> LoadCheck | None:
    """The ``LoadCheck`` of ``plan``'s Poisson load under the policies worked out on it
    (``draftings``, by name); None for a closed loop or a trace (always stable:
    ``open_load_bounds``)."""
    found = open_load_bounds(plan, draftings)
    return None if found is None else LoadCheck(*found)
