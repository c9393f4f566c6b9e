"""Conversions between the acceptance metrics people call "acceptance rate".

Sources: EAGLE papers for conditional "n-alpha"; vLLM
vllm/v1/spec_decode/metrics.py for cumulative per-position rates and the draft acceptance
rate; SGLang python/sglang/srt/managers/scheduler_metrics_mixin.py for the accept rate):

- conditional per-position rates a_i = P(position i accepted | 1..i-1 accepted);
- vLLM cumulative per-position rates c_i = a_1 ... a_i;
- vLLM draft acceptance rate r = (sum_i c_i) / k;
- SGLang accept rate s = AL / (k + 1);
- accept length AL = 1 + sum_i c_i (bonus token included).

A single marginal number (AL, r, s, or one alpha) determines the per-position profile only
under an assumption: here, equal conditional rates (Leviathan's alpha). Every result that
rests on it says so in ``assumption``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.errors import SpecsimError
from sim.model.closed_forms import alpha_for_accept_length
from sim.model.rates import mean_accept_length

EQUAL_RATES = "equal conditional per-position rates (Leviathan's alpha), derived from one number"


@dataclass(frozen=True, slots=True)
class AcceptanceForms:
    """One acceptance profile in every vocabulary, for k = ``num_steps`` drafts.

    ``per_position`` and ``cumulative`` have length k. ``alpha`` is the equal conditional
    rate with the same accept length (equal to every a_i when the profile is flat).
    """

    num_steps: int
    alpha: float
    per_position: tuple[float, ...]
    cumulative: tuple[float, ...]
    draft_acceptance_rate: float
    sglang_accept_rate: float
    accept_length: float
    assumption: str | None

    def as_dict(self) -> dict[str, object]:
        return {
            "num_steps": self.num_steps,
            "alpha": self.alpha,
            "per_position": list(self.per_position),
            "cumulative": list(self.cumulative),
            "draft_acceptance_rate": self.draft_acceptance_rate,
            "sglang_accept_rate": self.sglang_accept_rate,
            "accept_length": self.accept_length,
            "assumption": self.assumption,
        }


def _check_k(num_steps: int) -> None:
    if num_steps < 1:
        raise SpecsimError(f"must be at least 1, got {num_steps}", param="num_steps")


def _check_rates(values: Sequence[float] | np.ndarray, param: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise SpecsimError("expected a non-empty list of rates", param=param)
    bad = np.flatnonzero(~((arr >= 0.0) & (arr <= 1.0)))
    if bad.size:
        i = int(bad[0])
        raise SpecsimError(f"rate {i + 1} = {arr[i]} is outside [0, 1]", param=param)
    return arr


def from_conditional(
    rates: Sequence[float] | np.ndarray,
    *,
    assumption: str | None = None,
    param: str = "per_position",
) -> AcceptanceForms:
    """Every form from conditional per-position rates a_1..a_k (shape (k,))."""
    a = _check_rates(rates, param)
    k = a.size
    c = np.cumprod(a)
    al = mean_accept_length(a)
    alpha = float(a[0]) if np.all(a == a[0]) else alpha_for_accept_length(al, k)
    assert alpha is not None  # al <= k + 1 always holds for rates in [0, 1]
    return AcceptanceForms(
        num_steps=k,
        alpha=alpha,
        per_position=tuple(float(x) for x in a),
        cumulative=tuple(float(x) for x in c),
        draft_acceptance_rate=float(c.sum() / k),
        sglang_accept_rate=al / (k + 1),
        accept_length=al,
        assumption=assumption,
    )


def conditional_from_cumulative(cumulative: Sequence[float]) -> np.ndarray:
    """a_i = c_i / c_(i-1), shape (k,); a position nobody reaches gets rate 0.

    Raises SpecsimError unless 1 >= c_1 >= c_2 >= ... >= 0.
    """
    c = _check_rates(cumulative, "cumulative")
    if np.any(np.diff(c) > 1e-12):
        raise SpecsimError("cumulative rates must not increase with position", param="cumulative")
    prev = np.concatenate([[1.0], c[:-1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(prev > 0.0, c / prev, 0.0)
    return np.clip(a, 0.0, 1.0)


def from_cumulative(cumulative: Sequence[float]) -> AcceptanceForms:
    """Every form from vLLM's cumulative per-position rates c_1..c_k."""
    return from_conditional(conditional_from_cumulative(cumulative), param="cumulative")


def from_alpha(alpha: float, num_steps: int) -> AcceptanceForms:
    """Every form from one conditional rate applied at every position."""
    _check_k(num_steps)
    _check_rates([alpha], "alpha")
    return from_conditional([alpha] * num_steps, param="alpha")


def from_accept_length(accept_length: float, num_steps: int) -> AcceptanceForms:
    """Every form from an accept length, assuming equal conditional rates."""
    _check_k(num_steps)
    if not 1.0 <= accept_length <= num_steps + 1:
        raise SpecsimError(
            f"{accept_length} is outside [1, num_steps + 1 = {num_steps + 1}]",
            param="accept_length",
        )
    alpha = alpha_for_accept_length(accept_length, num_steps)
    assert alpha is not None
    return from_conditional([alpha] * num_steps, assumption=EQUAL_RATES)


def from_draft_acceptance_rate(rate: float, num_steps: int) -> AcceptanceForms:
    """From vLLM's draft acceptance rate r: AL = 1 + k r, then equal conditional rates."""
    _check_k(num_steps)
    _check_rates([rate], "draft_acceptance_rate")
    return from_accept_length(1.0 + num_steps * rate, num_steps)


def from_sglang_accept_rate(rate: float, num_steps: int) -> AcceptanceForms:
    """From SGLang's accept rate s: AL = s (k + 1), then equal conditional rates."""
    _check_k(num_steps)
    lo = 1.0 / (num_steps + 1)
    if not lo <= rate <= 1.0:
        raise SpecsimError(
            f"{rate} is outside [1/(num_steps + 1) = {lo:.4g}, 1]", param="sglang_accept_rate"
        )
    return from_accept_length(rate * (num_steps + 1), num_steps)
