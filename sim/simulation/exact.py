"""The exact per-request law, where one exists: no Monte Carlo, no noise.

With one shared rate profile (no workload mix, no per-request spread) and fixed cycle times
(no jitter; the layer-level pass without rank jitter), every request is an independent copy
of the same renewal process, so the law of its tok/s, 1000 N / (n T), follows exactly from
the law of its cycle count n (sim/model/renewal.py). Its statistics are what the Monte Carlo
estimates (the fast engine's 32-bit acceptance thresholds are within 2^-32 of the rates):

* mean, std, quantiles and P(tok/s >= target) of one request's tok/s, from the law of n;
* the pooled accept length and pmf over all cycles: by Wald's identity the expected count of
  cycles emitting L = j + 1 tokens is E[n] P(L = j + 1), so the pooled pmf is the pmf of L;
* cycle_ms: the fixed phase durations (an extend that grows with L at the pooled E[L]).

A draft extend that grows with the cycle's L (``timing.draft_extend_ms_per_token``) keeps
the law exact: a request's time is n (T - s t) + s E, E the tokens its cycles emitted, so
the joint law of (n, E) (sim/model/renewal.py) gives its tok/s.

``exact_obstacle`` says why a case has no exact law (the Monte Carlo then stays the answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.binding.bound import Bound
from sim.errors import SpecsimError
from sim.model.cycle import PHASES
from sim.model.cycletime import CycleTimeModel
from sim.model.rates import accept_length_pmf
from sim.model.renewal import RequestLaw, cycles_and_emitted_law, cycles_law
from sim.simulation.engines.common import phase_means
from sim.simulation.simulate import bind_for_run
from sim.simulation.summary import Summary, TargetProbability

if TYPE_CHECKING:
    from sim.model.tree.acceptance import Acceptance


def exact_obstacle(acceptance: Acceptance, cycle_times: CycleTimeModel) -> str | None:
    """Why the per-request law has no exact form here, or None when it has one."""
    if len(acceptance.class_names) > 1:
        return "the workload mix gives requests different rates"
    if acceptance.heterogeneous:
        return "acceptance spreads per request (concentration or std)"
    if not cycle_times.deterministic:
        return "cycle times vary (timing.jitter_cv, or the layer pass's rank jitter)"
    return None


def length_pmf(acceptance: Acceptance) -> np.ndarray:
    """P(L = j + 1), j = 0..k, of the one shared profile (a tree: its chain-equivalent law)."""
    return accept_length_pmf(acceptance.chain_rates(acceptance.mean_rates()[None, :])[0])


def request_law(
    acceptance: Acceptance,
    cycle_times: CycleTimeModel,
    output_tokens: int,
    extend_growth: tuple[float, float] = (0.0, 0.0),
) -> RequestLaw:
    """The exact law of one request's tok/s (the caller has checked ``exact_obstacle``).

    ``extend_growth``: (ms per accepted token, accept length it is quoted at) of a draft
    extend that grows with L (sim/binding/bound.py ``Bound.extend_growth``): then the joint law
    of cycles and emitted tokens, since a request's time is n (T - s t) + s E.
    """
    pmf = length_pmf(acceptance)
    cycle_ms = float(phase_means(cycle_times).sum())
    per_token, at_tokens = extend_growth
    if per_token != 0.0 and acceptance.num_steps > 0:
        joint = cycles_and_emitted_law(pmf, output_tokens)
        return RequestLaw.with_extend(joint, cycle_ms, per_token, at_tokens)
    return RequestLaw.fixed(cycles_law(pmf, output_tokens), cycle_ms)


def exact_summary(
    acceptance: Acceptance,
    cycle_times: CycleTimeModel,
    output_tokens: int,
    targets: Sequence[float],
    *,
    fidelity: str = "cycle",
    extend_growth: tuple[float, float] = (0.0, 0.0),
) -> Summary:
    """The ``Summary`` of the exact law: zero-width intervals, ``method="exact"``.

    ``engine`` is "exact"; ``seed``, ``replications`` and ``requests`` are None (no sample).
    """
    law = request_law(acceptance, cycle_times, output_tokens, extend_growth)
    mean = law.mean_tok_s()
    pmf = length_pmf(acceptance)
    phases = phase_means(cycle_times)
    al = float(pmf @ np.arange(1, pmf.size + 1))
    per_token, at_tokens = extend_growth
    if per_token != 0.0 and acceptance.num_steps > 0:  # the pooled cycle's extend is at E[L]
        phases = phases.copy()
        phases[PHASES.index("extend")] += per_token * (al - at_tokens)
    cycle_ms = {"mean": float(phases.sum())}
    cycle_ms.update({p: float(phases[i]) for i, p in enumerate(PHASES)})
    probabilities = []
    for t in targets:
        p = law.p_at_least(float(t))
        probabilities.append(TargetProbability(float(t), p, (p, p)))
    return Summary(
        engine="exact",
        fidelity=fidelity,
        seed=None,
        replications=None,
        requests=None,
        tok_s_mean=mean,
        tok_s_std=law.std_tok_s(),
        tok_s_ci95=(mean, mean),
        tok_s_p5=law.quantile(0.05),
        tok_s_p50=law.quantile(0.50),
        tok_s_p95=law.quantile(0.95),
        accept_length_mean=al,
        accept_pmf=pmf,
        theory_pmf=acceptance.cycle_pmf(),
        theory_accept_length=acceptance.cycle_mean_accept_length(),
        cycle_ms=cycle_ms,
        targets=tuple(probabilities),
        classes=(),
        method="exact",
    )


def scenario_exact(
    bound: Bound,
    *,
    fidelity: str = "cycle",
    targets: Sequence[float] | None = None,
    seed: int | None = None,
) -> tuple[Summary, RequestLaw]:
    """The exact ``Summary`` of a scenario and its law; SpecsimError (``method``) naming the
    reason when it has none. ``targets`` default to the scenario's; ``seed`` (default the
    scenario's) only draws the layer pass's pools at ``fidelity="layer"``."""
    scenario = bound.scenario
    model = bound.acceptance
    seed = scenario.simulation.seed if seed is None else seed
    _, times = bind_for_run(bound, fidelity, seed)
    growth = bound.extend_growth if scenario.num_steps > 0 else (0.0, 0.0)
    reason = exact_obstacle(model, times)
    if reason is not None:
        raise SpecsimError(f"no exact per-request law: {reason}", param="method")
    tokens = scenario.workload.output_tokens
    targets = scenario.target_tok_s if targets is None else targets
    summary = exact_summary(model, times, tokens, targets, fidelity=fidelity, extend_growth=growth)
    return summary, request_law(model, times, tokens, growth)
