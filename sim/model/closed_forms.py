"""Closed forms: the acceptance a target needs at each k, and the best k.

Notation (sim/model/rates.py): ``rates`` are the conditional per-position acceptance rates
a_1..a_k, shape (k,); the cumulative rates are c_i = a_1 ... a_i; tokens emitted per cycle
L = accepted drafts + 1 (the target's correction or bonus token), 1 <= L <= k + 1, and the
accept length is AL = E[L] = 1 + sum_i c_i. With equal rates alpha this is Leviathan et al.
(2023, Thm 3.8): E[L] = (1 - alpha^(k+1)) / (1 - alpha). Cycles renew, so by the
renewal-reward theorem the long-run throughput is E[L] / E[T_cycle] (sim/model/cycle.py
``throughput_tok_s``, with the accept length a target needs, ``required_accept_length``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from sim.model.cycle import PassTimes, ceiling_tok_s, cycle_cost, required_accept_length
from sim.model.roots import brentq
from sim.model.shapes import scale_for_accept_length

#: A profile's shape factors g_1..g_k (g_1 = 1) at each draft length k.
FactorsFn = Callable[[int], np.ndarray]

#: Draft lengths searched for the best k (SGLang accepts larger, but cycles grow with k).
K_RANGE = range(1, 33)


def leviathan_accept_length(alpha: float, num_steps: int) -> float:
    """Leviathan et al. 2023 Thm 3.8: (1 - alpha^(k+1)) / (1 - alpha); k + 1 at alpha = 1.

    Near alpha = 1 the quotient cancels catastrophically, so there the equal geometric
    series 1 + alpha + ... + alpha^k is summed instead.
    """
    if alpha >= 1.0:
        return float(num_steps + 1)
    if alpha > 0.999:
        return float(np.sum(alpha ** np.arange(num_steps + 1)))
    return (1.0 - alpha ** (num_steps + 1)) / (1.0 - alpha)


def leviathan_speedup(alpha: float, num_steps: int, cost_ratio: float) -> float:
    """Leviathan et al. 2023: E[L] / (k c + 1), c = draft step cost / target step cost."""
    return leviathan_accept_length(alpha, num_steps) / (num_steps * cost_ratio + 1.0)


def alpha_for_accept_length(accept_length: float, num_steps: int) -> float | None:
    """Equal conditional rate alpha giving ``accept_length`` at k = ``num_steps``.

    0 when the accept length is at most 1; None when it exceeds k + 1 (unreachable).
    Solved with Brent's method (sim/model/roots.py, identical to scipy's brentq) on
    Leviathan's E[L], which is increasing in alpha.
    """
    if accept_length <= 1.0:
        return 0.0
    cap = num_steps + 1
    if accept_length > cap:
        return None
    if accept_length >= cap:
        return 1.0
    return float(
        brentq(
            lambda a: leviathan_accept_length(a, num_steps) - accept_length, 0.0, 1.0, xtol=1e-12
        )
    )


@dataclass(frozen=True, slots=True)
class KAnswer:
    """What one draft length k needs for one target.

    ``alpha`` is the equal rate (flat profile) giving the required accept length;
    ``first_rate`` the first-position rate a_1 under the scenario's shape (rates
    min(1, a_1 g_i)) and ``mean_rate`` the mean of those rates over positions 1..k; all
    three are equal for a flat shape, and None when the target is out of reach at this k.
    """

    num_steps: int
    cycle_ms: float
    required_accept_length: float
    alpha: float | None  # None: unreachable at this k
    ceiling_tok_s: float
    first_rate: float | None = None
    mean_rate: float | None = None
    #: The scale x of the shape's profile min(1, x g) (first_rate = min(1, x)): the
    #: drafter quality asked for, which keeps rising after the first rate reaches 1.
    scale: float | None = None
    #: The shape asks for a first-position rate above 1 (x g_1 > 1): only rates that fall
    #: less than the shape reach the target at this k, no first-position rate does.
    over_cap: bool = False

    @property
    def reachable(self) -> bool:
        """Some profile reaches the target at this k (flat rates at most 1 do)."""
        return self.alpha is not None

    @property
    def reachable_under_shape(self) -> bool:
        """A first-position rate of at most 1 reaches the target under the shape."""
        return self.alpha is not None and not self.over_cap


#: Relative tolerance of "the shape needs a first-position rate above 1": the scale's
#: bisection (sim/model/shapes.py) runs to the last bits of [0, 1 / min g].
OVER_CAP_RTOL = 1e-9


def shaped_rate(
    accept_length: float, factors: np.ndarray
) -> tuple[float | None, float | None, float | None]:
    """(a_1, mean rate, scale x) of the profile min(1, x g) with ``accept_length`` over
    k = len(factors) positions; (None, None, None) when out of reach."""
    k = factors.shape[-1]
    if accept_length > k + 1:
        return None, None, None
    x = float(scale_for_accept_length(accept_length, factors))
    rates = np.minimum(1.0, x * factors)
    return float(rates[0]), float(rates.mean()), x


def over_cap(scale: float | None, first_factor: float) -> bool:
    """Whether the scale x asks for a first-position rate x g_1 above 1."""
    return scale is not None and scale * first_factor > 1.0 + OVER_CAP_RTOL


def answer_at_k(
    target_tok_s: float, passes: PassTimes, num_steps: int, factors: FactorsFn | None = None
) -> KAnswer:
    """Required accept length, equal-rate alpha and (with the shape's ``factors``) the
    first-position and mean rate for ``target_tok_s`` at k = ``num_steps``."""
    cost = cycle_cost(passes, num_steps)
    need = required_accept_length(target_tok_s, cost)
    ceiling = ceiling_tok_s(cost)
    alpha = alpha_for_accept_length(need, num_steps)
    if factors is None or alpha is None or num_steps == 0:
        first, mean, scale = alpha, alpha, alpha
        capped = False
    else:
        g = factors(num_steps)
        first, mean, scale = shaped_rate(need, g)
        capped = over_cap(scale, float(g[0]))
    return KAnswer(num_steps, cost.total_ms, need, alpha, ceiling, first, mean, scale, capped)


@dataclass(frozen=True, slots=True)
class TargetAnswer:
    """The closed-form answer for one target tok/s.

    ``reachable`` means some k in ``K_RANGE`` reaches the target with a first-position
    rate of at most 1 under the scenario's shape (``reachable_flat``: with equal rates);
    ``at_num_steps`` is the scenario's own k; ``best`` is the k needing the least drafter
    quality under the shape (the lowest scale; None when no profile reaches it at any k;
    ``best.over_cap`` when even it needs a first-position rate above 1) and ``best_flat``
    the k needing the lowest equal rate; ``max_ceiling`` is the k with the highest
    all-accepted throughput.
    """

    tok_s: float
    at_num_steps: KAnswer
    best: KAnswer | None
    max_ceiling: KAnswer
    reason: str | None
    best_flat: KAnswer | None = None

    @property
    def reachable(self) -> bool:
        return self.best is not None and not self.best.over_cap

    @property
    def reachable_flat(self) -> bool:
        return self.best_flat is not None


def answer_target(
    target_tok_s: float,
    passes: PassTimes,
    num_steps: int,
    k_range: Iterable[int] = K_RANGE,
    factors: FactorsFn | None = None,
) -> TargetAnswer:
    """Closed-form answer for a target: at the scenario's k and at the best k in ``k_range``
    (``factors``: the shape's g at each k; None: flat)."""
    at_k = answer_at_k(target_tok_s, passes, num_steps, factors) if num_steps > 0 else None
    per_k = [answer_at_k(target_tok_s, passes, k, factors) for k in k_range]
    reachable = [a for a in per_k if a.reachable]
    best = min(reachable, key=lambda a: (a.scale, a.num_steps)) if reachable else None
    best_flat = min(reachable, key=lambda a: (a.alpha, a.num_steps)) if reachable else None
    top = max(per_k, key=lambda a: a.ceiling_tok_s)
    ks = list(k_range)
    reason = None
    if at_k is None:
        at_k = answer_at_k(target_tok_s, passes, 0)
        if target_tok_s > at_k.ceiling_tok_s:
            reason = f"plain decoding runs at {at_k.ceiling_tok_s:.1f} tok/s"
    elif not at_k.reachable:
        reason = (
            f"needs accept length {at_k.required_accept_length:.2f}; num_steps {num_steps} "
            f"caps it at {num_steps + 1}"
        )
    if best is None:
        reason = (f"{reason}; " if reason else "") + (
            f"no num_steps in {ks[0]}..{ks[-1]} reaches it: the best ceiling is "
            f"{top.ceiling_tok_s:.1f} tok/s at num_steps {top.num_steps} (all drafts accepted)"
        )
    return TargetAnswer(target_tok_s, at_k, best, top, reason, best_flat)
