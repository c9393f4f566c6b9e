"""The closed forms over many draws of their inputs at once (vectorized over samples).

An uncertainty study draws n versions of the inputs (pass times, verify slope, acceptance
anchor and shape) and re-solves the answer for each; ``SampledModel`` holds the draws as
arrays and answers for all of them in a few array operations:

* tok/s at draft length k: 1000 AL_k / T_cycle(k) (renewal-reward), AL_k = 1 + c_1 + ... + c_k,
  the cycle's draft extend taken at AL_k;
* what a target needs at every k: the accept length that reaches it and the
  scale x of the profile min(1, x g) that reaches it (g the shape factors, g_1 = 1), solved
  for every (draw, k) together by safeguarded Newton steps on AL_k(x) (increasing and
  piecewise polynomial in x); the first-position rate min(1, x), the mean rate over the
  chain and the equal (flat) rate giving the same accept length;
* the best k of each draw: the one needing the lowest first-position rate.

Shapes: n draws, K draft lengths (k = 1..K); arrays are (n,) or (n, K). The solves are
their own modules: the equal rate (sim/model/equal_rates.py), the profile's scale
(sim/model/profile_scales.py), each distinct row once (sim/model/distinct_rows.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.model.distinct_rows import distinct_rows
from sim.model.equal_rates import equal_rates_for_accept_lengths
from sim.model.profile_scales import scales_for_accept_lengths

__all__ = [
    "ChainAnswers",
    "Requirement",
    "SampledModel",
    "allowed_steps",
    "chain_answers",
    "study_window",
]


@dataclass(frozen=True, slots=True)
class Requirement:
    """What one target needs in every draw at every k = 1..K (NaN: out of reach)."""

    tok_s: float
    need: np.ndarray  # required accept length (n, K)
    first_rate: np.ndarray  # (n, K)
    mean_rate: np.ndarray  # (n, K)
    flat_alpha: np.ndarray  # (n, K)
    scale: np.ndarray  # the profile's scale x; first_rate = min(1, x) (n, K)

    def only(self, columns: np.ndarray | None) -> Requirement:
        """This requirement with the draft lengths outside ``columns`` (K,) out of reach
        (NaN; None: all of them kept)."""
        if columns is None:
            return self

        def mask(a: np.ndarray) -> np.ndarray:
            return np.where(columns[None, :], a, np.nan)

        return Requirement(
            self.tok_s,
            self.need,
            mask(self.first_rate),
            mask(self.mean_rate),
            mask(self.flat_alpha),
            mask(self.scale),
        )

    def best_index(self) -> np.ndarray:
        """Index (n,) of the k needing the least drafter quality: the lowest scale of the
        profile, so the lowest first-position rate (ties: smaller k); -1 where no k reaches
        the target."""
        key = np.where(np.isnan(self.scale), np.inf, self.scale)
        best = np.argmin(key, axis=1)
        reachable = np.isfinite(key[np.arange(key.shape[0]), best])
        return np.where(reachable, best, -1)

    def at_best(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(best k, first rate, mean rate, flat alpha at the flat-best k), each (n,);
        k = 0 and NaN rates where the target is out of reach."""
        idx = self.best_index()
        rows = np.arange(idx.shape[0])
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        first = np.where(ok, self.first_rate[rows, safe], np.nan)
        mean = np.where(ok, self.mean_rate[rows, safe], np.nan)
        flat = np.where(np.isnan(self.flat_alpha), np.inf, self.flat_alpha).min(axis=1)
        flat = np.where(np.isfinite(flat), flat, np.nan)
        return np.where(ok, safe + 1, 0), first, mean, flat


@dataclass(frozen=True, slots=True)
class SampledModel:
    """n draws of the closed-form inputs.

    ``fixed_ms`` (n, K): the part of the cycle at k = 1..K that does not grow with the
    accept length, ``extend_per_token_ms`` (n,): the draft extend's growth per accepted
    token, so a cycle with accept length L lasts fixed + s L (sim/model/cycle.py
    ``CycleCost.fixed_ms``); ``decode_ms`` (n,); ``rates`` (n, K): the drafter's conditional
    rates at positions 1..K; ``factors`` (n, K): the shape the required rate scales
    (g_1 = 1; rates / rates[:, :1] for a listed profile).
    """

    decode_ms: np.ndarray
    fixed_ms: np.ndarray
    rates: np.ndarray
    factors: np.ndarray
    extend_per_token_ms: np.ndarray | None = None

    @property
    def per_token_ms(self) -> np.ndarray:
        if self.extend_per_token_ms is None:
            return np.zeros(self.size)
        return self.extend_per_token_ms

    def cycle_ms(
        self, num_steps: int, accept_length: np.ndarray | float | None = None
    ) -> np.ndarray:
        """The cycle at k = ``num_steps`` with the extend at ``accept_length`` (default:
        the drafter's own accept length there), shape (n,)."""
        al = self.accept_length(num_steps) if accept_length is None else accept_length
        return self.fixed_ms[:, num_steps - 1] + self.per_token_ms * al

    @property
    def size(self) -> int:
        return int(self.fixed_ms.shape[0])

    def rows(self, index: slice) -> SampledModel:
        """The draws ``index`` of this model (every row is a draw of its own)."""
        per_token = self.extend_per_token_ms
        return SampledModel(
            self.decode_ms[index],
            self.fixed_ms[index],
            self.rates[index],
            self.factors[index],
            None if per_token is None else per_token[index],
        )

    @property
    def max_steps(self) -> int:
        return int(self.fixed_ms.shape[1])

    def accept_length(self, num_steps: int) -> np.ndarray:
        """AL at k = ``num_steps`` in each draw, shape (n,)."""
        if num_steps == 0:
            return np.ones(self.size)
        return 1.0 + np.cumprod(self.rates[:, :num_steps], axis=1).sum(axis=1)

    def tok_s(self, num_steps: int) -> np.ndarray:
        """Long-run tok/s at k in each draw (k = 0: plain decoding), shape (n,)."""
        if num_steps == 0:
            return 1000.0 / self.decode_ms
        al = self.accept_length(num_steps)
        return 1000.0 * al / self.cycle_ms(num_steps, al)

    def requirement(
        self,
        target_tok_s: float,
        flat: bool = True,
        columns: np.ndarray | None = None,
        mean: bool = True,
    ) -> Requirement:
        """What ``target_tok_s`` needs at every k in every draw: the accept length
        target F / (1000 - target s) (infinite, out of reach, when target s >= 1000).
        ``flat`` / ``mean`` False: the equal rate / the mean rate are not solved (NaN)."""
        cols = None if columns is None else [columns]
        return self.requirements([target_tok_s], flat, cols, mean)[0]

    def requirements(
        self,
        targets: Sequence[float],
        flat: bool = True,
        columns: Sequence[np.ndarray | None] | None = None,
        mean: bool = True,
    ) -> tuple[Requirement, ...]:
        """``requirement`` of every target (``columns``: each target's draft lengths
        solved, None all), solved together: each target's copy of the draws is a block
        of rows of one solve, and rows are independent, so each comes out with the bits
        of its own ``requirement``, for one Python-level loop instead of one a target."""
        return self._solve(targets, flat, columns, mean, lowest_only=False)

    def requirements_at_best(
        self,
        targets: Sequence[float],
        columns: Sequence[np.ndarray | None] | None = None,
        flat: bool = True,
        mean: bool = True,
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]:
        """Each target's ``requirement(t, flat, c, mean).only(c).at_best()`` (best k,
        first, mean and flat rates, each (n,)), with their bits, solving a (draw, k) pair
        only while it can still be its draw's best k (``scales_for_accept_lengths``'
        lowest_only) and each distinct row once."""
        cols = columns if columns is not None else [None] * len(targets)
        solved = self._solve(targets, flat, columns, mean, lowest_only=True)
        return tuple(r.only(c).at_best() for r, c in zip(solved, cols, strict=True))

    def _solve(
        self,
        targets: Sequence[float],
        flat: bool,
        columns: Sequence[np.ndarray | None] | None,
        mean: bool,
        lowest_only: bool,
    ) -> tuple[Requirement, ...]:
        """``requirements``; ``lowest_only``: only each row's best k is solved (its scale
        elsewhere +inf, its first and mean rates there meaningless), rows the same to
        the bit solved once."""
        if not targets:
            return ()
        need, factors = self._stacked_need(targets, columns)
        again = None
        if lowest_only:  # rows the same to the bit (need and factors) solve the same
            rows = np.concatenate([need, factors], axis=1).view(np.uint64)
            first, again = distinct_rows(rows)
            need, factors = need[first], factors[first]
        alpha = equal_rates_for_accept_lengths(need) if flat else np.full(need.shape, np.nan)
        x = scales_for_accept_lengths(need, factors, alpha if flat else None, lowest_only)
        first_rate = np.minimum(1.0, x)
        means = np.full(need.shape, np.nan)
        if mean:
            big_k = self.max_steps
            # mean of min(1, x g_i) over i <= k: running sums of the capped rates per k
            with np.errstate(invalid="ignore"):  # lowest_only: inf x a zero factor
                capped = np.minimum(1.0, x[:, :, None] * factors[:, None, :])
            sums = np.einsum("nkp,kp->nk", np.nan_to_num(capped), np.tri(big_k))
            means = np.where(np.isnan(x), np.nan, sums / np.arange(1, big_k + 1))
        if again is not None:
            at = again.reshape(-1)
            need, first_rate, means, alpha, x = (a[at] for a in (need, first_rate, means, alpha, x))
        return tuple(
            Requirement(t, need[r], first_rate[r], means[r], alpha[r], x[r])
            for t, r in zip(targets, self._blocks(len(targets)), strict=True)
        )

    def _blocks(self, count: int) -> list[slice]:
        n = self.size
        return [slice(j * n, (j + 1) * n) for j in range(count)]

    def _stacked_need(
        self, targets: Sequence[float], columns: Sequence[np.ndarray | None] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The accept length each target needs (T n, K), targets' copies of the draws one
        under the other (NaN outside a target's ``columns``), and the factors (T n, K)."""
        n, blocks = self.size, len(targets)
        tok_s = np.repeat(np.asarray(targets, dtype=float), n)[:, None]  # (T n, 1)
        fixed = np.tile(self.fixed_ms, (blocks, 1))
        denominator = 1000.0 - tok_s * np.tile(self.per_token_ms, blocks)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(denominator > 0, tok_s * fixed / denominator, np.inf)
        if columns is not None:  # draft lengths left out: not solved (NaN, out of reach)
            keep = np.array([np.ones(self.max_steps, bool) if c is None else c for c in columns])
            need = np.where(np.repeat(keep, n, axis=0), need, np.nan)
        return need, np.tile(self.factors, (blocks, 1))


def allowed_steps(ks: Sequence[int], max_steps: int) -> np.ndarray:
    """The draft lengths ``ks`` as a mask of 1..``max_steps`` (K,)."""
    keep = np.zeros(max_steps, dtype=bool)
    keep[[k - 1 for k in ks if 1 <= k <= max_steps]] = True
    return keep


def study_window(best_k: np.ndarray, max_steps: int, ks: Sequence[int] | None) -> np.ndarray | None:
    """The draft lengths (K,) the one-at-a-time studies solve: those of ``ks`` (None:
    all) near the draws' best k (``best_k`` (n,), 0 out of reach), or all of ``ks`` when
    no draw reaches the target (None: every one)."""
    allowed = None if ks is None else allowed_steps(ks, max_steps)
    reachable = best_k > 0
    if not reachable.any():
        return allowed
    lo_k, hi_k = int(best_k[reachable].min()), int(best_k[reachable].max())
    window = np.zeros(max_steps, dtype=bool)
    window[max(lo_k - 3, 0) : hi_k + 2] = True
    return window if allowed is None else window & allowed


@dataclass(frozen=True, slots=True)
class ChainAnswers:
    """Everything a chain's 90% intervals read from its sampled model, solved at once
    (``chain_answers``); n draws, T targets.

    ``tok_s`` / ``accept_length`` (n,): the draws' answers at the scenario's k;
    ``bests``: each target's ``Requirement.at_best`` over the nominal row then the draws
    (1 + n,); ``solved``: each target's ``Requirement`` at every k over the same rows
    (only when asked for per k, else empty); ``firsts``: each target's first-position
    rate at its best k in each study row (the rows after the draws).
    """

    tok_s: np.ndarray
    accept_length: np.ndarray
    bests: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]
    solved: tuple[Requirement, ...]
    firsts: tuple[np.ndarray, ...]


def chain_answers(
    every: SampledModel,
    draws: int,
    targets: Sequence[float],
    num_steps: int,
    ks: Sequence[int] | None,
    by_num_steps: bool,
) -> ChainAnswers:
    """The answers of ``every``'s rows: the nominal row, ``draws`` draws, then the
    one-at-a-time studies' rows. The nominal row and the draws are solved at their best k
    among ``ks`` (None: every k; at every k too for ``by_num_steps``); the studies, which
    read only the first rate at the best k, only near the draws' best k
    (``study_window``)."""
    head = every.rows(slice(0, 1 + draws))
    allowed = None if ks is None else allowed_steps(ks, every.max_steps)
    solved: tuple[Requirement, ...] = ()
    if by_num_steps:
        solved = head.requirements(targets)
        bests = tuple(r.only(allowed).at_best() for r in solved)
    else:
        bests = head.requirements_at_best(targets, [allowed] * len(targets))
    windows = [study_window(b[0][1:], every.max_steps, ks) for b in bests]
    studies = every.rows(slice(1 + draws, None))
    firsts = tuple(
        b[1] for b in studies.requirements_at_best(targets, windows, flat=False, mean=False)
    )
    sampled = every.rows(slice(1, 1 + draws))
    return ChainAnswers(
        sampled.tok_s(num_steps), sampled.accept_length(num_steps), bests, solved, firsts
    )
