"""Closed-form checks of the validation report: identities specsim's formulas must satisfy
and the worked figures of docs/reference.md."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.binding.closed_form import cycle_cost
from sim.model import metrics
from sim.model.closed_forms import leviathan_accept_length
from sim.model.cycle import CycleCost, required_accept_length, throughput_tok_s
from sim.model.rates import accept_length_pmf, mean_accept_length
from sim.scenario.schema import Scenario
from sim.validation import data as pub


@dataclass(frozen=True, slots=True)
class Check:
    """A closed-form check: specsim's value against an expected one within a tolerance."""

    name: str
    expected: float
    got: float
    tolerance: float
    source: str

    @property
    def passed(self) -> bool:
        return abs(self.got - self.expected) <= self.tolerance


def closed_form_checks(seed: Scenario) -> tuple[Check, ...]:
    """Every closed-form check of the report, in its order: the Leviathan identities, the
    accept lengths vLLM prints against its own counts, the marginal rate's under-prediction,
    and the seed's worked figures (``seed``: the seed scenario)."""
    forms = metrics.from_cumulative(pub.VLLM_ACCEPTANCE_TEST_CUMULATIVE)
    return (
        _leviathan_check(),
        *_printed_accept_length_checks(forms),
        _marginal_rate_check(forms),
        *_seed_checks(seed),
    )


def _leviathan_check() -> Check:
    """Leviathan et al.'s E[L] = (1 - alpha^(k+1)) / (1 - alpha) against 1 + the sum of the
    cumulative rates and the mean of the accept-length pmf, and the pmf's sum against 1,
    over alpha in 0..0.99 (12 values) and k 1..8: the worst deviation of any (0 expected,
    within 1e-12)."""
    worst = 0.0
    for alpha in np.linspace(0.0, 0.99, 12):
        for k in range(1, 9):
            closed = leviathan_accept_length(float(alpha), k)
            worst = max(worst, abs(closed - mean_accept_length(np.full(k, alpha))))
            pmf = accept_length_pmf(np.full(k, alpha))
            worst = max(
                worst, abs(float(pmf @ np.arange(1, k + 2)) - closed), abs(float(pmf.sum()) - 1.0)
            )
    return Check(
        "Leviathan E[L] = 1 + sum c_i = pmf mean, pmf sums to 1 "
        "(alpha 0..0.99, k 1..8): worst deviation",
        0.0,
        worst,
        1e-12,
        "Leviathan et al. 2023, Thm 3.8; docs/reference.md §Acceptance",
    )


def _printed_accept_length_checks(forms: metrics.AcceptanceForms) -> list[Check]:
    """The accept lengths vLLM prints against its own counts: AL = 1 + the sum of the
    cumulative rates of its acceptance test (``forms``), AL = 1 + accepted / drafts of
    issues #26191 (K = 7) and #26498 (K = 10), draft tokens / drafts = K, and 1 + the sum
    of #26498's printed rates (rounded to 0.01 each) against its AL. Tolerances: the
    printed precision."""
    return [
        Check(
            "AL = 1 + sum of vLLM cumulative rates (test_acceptance_length)",
            pub.VLLM_ACCEPTANCE_TEST_AL,
            forms.accept_length,
            0.005,
            "docs/reference.md §Published (AL printed with 2 decimals)",
        ),
        Check(
            "vLLM AL = 1 + accepted / drafts (#26191, K=7)",
            pub.VLLM_26191_PRINTED_AL,
            1 + pub.VLLM_26191_ACCEPTED / pub.VLLM_26191_DRAFTS,
            0.005,
            pub.VLLM_26191_URL,
        ),
        Check(
            "draft tokens / drafts = K (#26191)",
            7.0,
            pub.VLLM_26191_DRAFT_TOKENS / pub.VLLM_26191_DRAFTS,
            0.0,
            pub.VLLM_26191_URL,
        ),
        Check(
            "vLLM AL = 1 + accepted / drafts (#26498, K=10)",
            pub.VLLM_26498_PRINTED_AL,
            1 + pub.VLLM_26498_ACCEPTED / pub.VLLM_26498_DRAFTS,
            0.005,
            pub.VLLM_26498_URL,
        ),
        Check(
            "1 + sum of printed cumulative rates = AL (#26498; 10 rates rounded to 0.01)",
            1 + pub.VLLM_26498_ACCEPTED / pub.VLLM_26498_DRAFTS,
            1 + sum(pub.VLLM_26498_CUMULATIVE),
            10 * 0.005,
            pub.VLLM_26498_URL,
        ),
    ]


def _marginal_rate_check(forms: metrics.AcceptanceForms) -> Check:
    """The marginal draft acceptance rate r of ``forms`` taken as alpha under-predicts the
    accept length: (E[L](r, k = 3) - AL) / AL against the reference's 25-30% (-0.275,
    within 0.05)."""
    r = forms.draft_acceptance_rate
    marginal = leviathan_accept_length(r, 3)
    return Check(
        "marginal draft acceptance rate used as alpha under-predicts AL "
        "(relative error; reference: 25-30%)",
        -0.275,
        (marginal - forms.accept_length) / forms.accept_length,
        0.05,
        "docs/reference.md §Acceptance",
    )


def _seed_checks(seed: Scenario) -> list[Check]:
    """The seed's worked figures: the break-even AL of 82 tok/s over a 30 ms verify-only
    cycle, the AL each reference target needs per such cycle (``required_accept_length``),
    and the seed scenario's full cycle reproducing 59-61 tok/s at AL 2.0."""
    verify_only = CycleCost(2, 0.0, pub.SEED_VERIFY_MS, 0.0, 0.0)
    checks = [
        Check(
            "seed break-even AL = 82 tok/s x 30 ms verify-only cycle",
            pub.SEED_REFERENCE_BREAK_EVEN_AL,
            required_accept_length(82.0, verify_only),
            0.005,
            "docs/reference.md §Seed",
        )
    ]
    for target, needed in pub.SEED_REFERENCE_NEEDED_AL.items():
        checks.append(
            Check(
                f"seed: {target:.0f} tok/s needs AL {needed} per 30 ms cycle",
                needed,
                required_accept_length(target, verify_only),
                1e-9,
                "docs/reference.md §Seed",
            )
        )
    full = cycle_cost(seed)
    checks.append(
        Check(
            f"seed scenario reproduces 59-61 tok/s at AL 2.0 (full cycle {full.total_ms:.2f} ms)",
            60.0,
            throughput_tok_s(pub.SEED_ACCEPT_LENGTH, full),
            1.0,
            "docs/reference.md §Seed (the scenario was set from it)",
        )
    )
    return checks
