"""One decode iteration's time as a function of the batch's context sum (``DecodeCurve``),
built once per (batch, draft) by ``IterationCost.decode_curve`` (sim/model/batched_cost.py):
the batch-1 cycle's total plus each pass's growth over its batch-1 reference, the logit
rows and recurrent state beyond one request's, and the host work the iteration does not
hide. ``ms_at`` takes one context sum in Python floats and ``ms`` any shape as arrays,
the same operations in the same order (the same bits); ``SCALAR_VALUES`` says up to how
many values ``ms`` takes the first way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from sim.model.host_work import HostWork
from sim.model.pass_curves import PassCurve, pass_load

__all__ = ["SCALAR_VALUES", "DecodeCurve"]


#: Context sums a ``DecodeCurve`` evaluates one at a time in Python floats; beyond, as
#: arrays (a speed knob only: both give the same bits).
SCALAR_VALUES = 12


@dataclass(frozen=True)
class DecodeCurve:
    """Decode iteration time of one (batch, draft): ``anchor_ms`` (the batch-1 cycle's
    total) plus, per pass, ``times x (curve(rows of m-token sequences) - reference)``;
    ``terms`` holds (times, curve, rows, m, beams, reference ms) per pass: ``rows`` = batch
    x beams sequences whose contexts sum to beams x the batch's context sum. ``host``,
    ``batch`` and ``speculating``: the host work the iteration adds (sim/model/host_work.py;
    None: none); ``rows_ms``: the logit rows and recurrent state beyond one request's
    (``IterationCost.rows_ms``), GPU work added before the host's."""

    anchor_ms: float
    terms: tuple[tuple[float, PassCurve, int, int, int, float], ...]
    host: HostWork | None = None
    batch: int = 1
    speculating: bool = False
    drafting: bool = False
    rows_ms: float = 0.0

    def __getstate__(self) -> dict[str, object]:
        """Pickled without ``_scalar_terms`` (closures; rebuilt on first use)."""
        state = dict(self.__dict__)
        state.pop("_scalar_terms", None)
        return state

    @functools.cached_property
    def _scalar_terms(
        self,
    ) -> tuple[tuple[float, Callable[[float, float], float], int, int, float, int, float], ...]:
        """Per pass: (times, its scalar pass, the KV tokens it adds to the context sum
        (``pass_load``'s rows m), m, the pairs it adds (rows m (m + 1) / 2), beams, the
        reference ms): what ``ms_at`` takes for every value, worked out once."""
        return tuple(
            (
                times,
                curve.scalar_pass(rows * m, rows),
                rows * m,
                m,
                rows * (m * (m + 1) / 2),
                beams,
                ref,
            )
            for times, curve, rows, m, beams, ref in self.terms
        )

    @functools.cached_property
    def _host_terms(self) -> tuple[bool, float, float] | None:
        """What ``ms_at`` needs of the host work, fixed for the curve: (serial, its growth
        beyond one request, batch1_share x anchor + that growth); None without host work
        or at one request."""
        if self.host is None or self.batch <= 1:
            return None
        growth = self.host.growth_ms(self.batch, self.drafting)
        covered = self.host.batch1_share * self.anchor_ms + growth
        return self.host.serial(self.speculating), growth, covered

    def ms_at(self, context_tokens: float) -> float:
        """``ms`` of one context sum, in Python floats (the same operations in the same
        order, so the same bits)."""
        total = self.anchor_ms
        if self.rows_ms:
            total += self.rows_ms
        for times, pass_ms, kv_added, m, pairs_added, beams, ref in self._scalar_terms:
            s = context_tokens if beams == 1 else beams * context_tokens
            growth = pass_ms(s + kv_added, m * s + pairs_added) - ref
            total += growth if times == 1.0 else times * growth
        host = self._host_terms
        if host is not None:  # as HostWork.extra_ms
            serial, growth, covered = host
            total += growth if serial else max(covered - total, 0.0)
        return total

    def ms(self, context_tokens: ArrayLike) -> np.ndarray:
        """Iteration ms for context sums ``context_tokens`` (any shape, same shape out);
        up to ``SCALAR_VALUES`` of them one at a time (``ms_at``)."""
        s = np.asarray(context_tokens, dtype=float)
        if s.size <= SCALAR_VALUES:
            return np.array([self.ms_at(v) for v in s.ravel().tolist()]).reshape(s.shape)
        total = np.full(s.shape, self.anchor_ms)
        if self.rows_ms:
            total += self.rows_ms
        for times, curve, rows, m, beams, ref in self.terms:
            tokens, kv, pairs = pass_load(rows, m, s if beams == 1 else beams * s)
            growth = curve.pass_ms(tokens, kv, pairs, rows) - ref
            total += growth if times == 1.0 else times * growth
        if self.host is not None and self.batch > 1:
            total += self.host.extra_ms(
                self.batch, self.speculating, total, self.anchor_ms, self.drafting
            )
        return total
