"""Iteration cost of a serving batch, anchored on the batch-1 cycle.

One decode iteration of a batch of B requests at draft length k is the SGLang chain cycle
(docs/reference.md §Cycle) run over the whole batch:

    (k - 1) drafter steps over B tokens + one target verify over B (k + 1) tokens
    + one draft extend over B (k + 1) tokens + the per-cycle overhead,

and at k = 0 one target decode pass over B tokens. Each pass's time comes from a
``PassCurve``: a function of the pass's tokens, the KV tokens it reads and the attention
(query, key) pairs it computes (the batched hardware model, sim/hardware/batched.py, or
anything else with that signature). A request with context c that brings m new tokens
reads c + m KV entries and computes m c + m (m + 1) / 2 pairs; summed over the batch with
S = sum of contexts that is ``kv = S + B m`` and ``pairs = m S + B m (m + 1) / 2``.

Anchoring. The batch-1 pass times (``PassTimes``, as measured or derived for the batch-1
engines) are the anchor: each pass of a batched iteration costs

    batch-1 time over m tokens + curve(batch) - curve(batch 1 over m tokens at the
    reference context),

so at batch 1 and the reference context every phase is the batch-1 phase plus an exact
0.0, and ``decode_ms`` reproduces ``cycle_cost(passes, k).total_ms`` to the last bit; away
from it the curve's growth is added. (With a calibrated curve the two terms agree anyway;
the anchor makes batch 1 exact whatever the curve.)

Prefill passes have no batch-1 anchor (the batch-1 engines have no prefill) and cost the
curve's time; the drafter's prefill (EAGLE drafts from the target's hidden states, so it
runs over the prompt too) is added when the server speculates. The per-cycle overhead is
charged to speculative decode iterations only, as in the batch-1 cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from sim.model.cycle import CycleCost, PassTimes, cycle_cost

__all__ = [
    "DecodeCurve",
    "IterationCost",
    "LinearCurve",
    "PassCurve",
    "PrefillLoad",
    "ServingCurves",
    "pass_load",
]


class PassCurve(Protocol):
    """Time (ms) of one pass over ``tokens`` tokens reading ``kv_tokens`` KV entries and
    computing ``pairs`` attention pairs; ``kv_tokens``/``pairs`` broadcast together and
    the result has their shape."""

    def pass_ms(self, tokens: int, kv_tokens: ArrayLike, pairs: ArrayLike) -> np.ndarray: ...


@dataclass(frozen=True)
class LinearCurve:
    """ms = intercept + per_token x tokens + per_kv_token x kv_tokens + per_pair x pairs.

    The form of fitted step-time models (e.g. SpecDecode-Bench/simulator predictor.py,
    ``a kv_tokens + b batched_tokens + c`` for Llama-3.1-8B on an H100); with only an
    intercept, a pass whose time does not depend on the batch.
    """

    intercept_ms: float
    per_token_ms: float = 0.0
    per_kv_token_ms: float = 0.0
    per_pair_ms: float = 0.0

    def pass_ms(self, tokens: int, kv_tokens: ArrayLike, pairs: ArrayLike) -> np.ndarray:
        kv = np.asarray(kv_tokens, dtype=float)
        pr = np.asarray(pairs, dtype=float)
        return (
            self.intercept_ms
            + self.per_token_ms * tokens
            + self.per_kv_token_ms * kv
            + self.per_pair_ms * pr
        )


@dataclass(frozen=True)
class ServingCurves:
    """The pass curves of a server: target decode, verify and prefill; drafter step,
    extend and prefill (None when the server never speculates)."""

    decode: PassCurve
    verify: PassCurve
    prefill: PassCurve
    draft_step: PassCurve | None = None
    draft_extend: PassCurve | None = None
    draft_prefill: PassCurve | None = None


@dataclass(frozen=True)
class PrefillLoad:
    """Prompt work in one iteration: ``tokens`` (sum of chunk lengths), ``kv_tokens``
    (sum of prior context + chunk) and ``pairs`` (sum of chunk x prior + chunk (chunk+1)/2)."""

    tokens: int = 0
    kv_tokens: float = 0.0
    pairs: float = 0.0

    @staticmethod
    def of_chunks(chunks: ArrayLike, prior: ArrayLike) -> PrefillLoad:
        """The load of prompt chunks (n,) whose requests already hold ``prior`` (n,) tokens."""
        t = np.asarray(chunks, dtype=float)
        c = np.asarray(prior, dtype=float)
        return PrefillLoad(
            int(t.sum()), float((c + t).sum()), float((t * c + t * (t + 1) / 2).sum())
        )


def pass_load(
    batch: int, tokens_per_request: int, context_tokens: ArrayLike
) -> tuple[int, np.ndarray, np.ndarray]:
    """(tokens, kv tokens, pairs) of a pass in which ``batch`` requests with contexts
    summing to ``context_tokens`` (any shape) each bring ``tokens_per_request`` tokens."""
    m = tokens_per_request
    s = np.asarray(context_tokens, dtype=float)
    return batch * m, s + batch * m, m * s + batch * (m * (m + 1) / 2)


@dataclass(frozen=True)
class DecodeCurve:
    """Decode iteration time of one (batch, k): ``anchor_ms`` (the batch-1 cycle's total)
    plus, per pass, ``times x (curve(batch of m-token requests) - reference)``; ``terms``
    holds (times, curve, batch, m, reference ms) per pass."""

    anchor_ms: float
    terms: tuple[tuple[float, PassCurve, int, int, float], ...]

    def ms(self, context_tokens: ArrayLike) -> np.ndarray:
        """Iteration ms for context sums ``context_tokens`` (any shape, same shape out)."""
        s = np.asarray(context_tokens, dtype=float)
        total = np.full(s.shape, self.anchor_ms)
        for times, curve, batch, m, ref in self.terms:
            tokens, kv, pairs = pass_load(batch, m, s)
            growth = curve.pass_ms(tokens, kv, pairs) - ref
            total += growth if times == 1.0 else times * growth
        return total


@dataclass(frozen=True)
class IterationCost:
    """Iteration times of a batched server (see the module docstring).

    ``batch1``: the batch-1 pass times (the anchor); ``reference_context_tokens``: the
    context at which they hold (the batch-1 engines do not model context).
    """

    batch1: PassTimes
    curves: ServingCurves
    reference_context_tokens: float = 0.0
    _refs: dict[tuple[str, int], float] = field(default_factory=dict, repr=False, compare=False)
    _plain: dict[tuple[int, int], DecodeCurve] = field(
        default_factory=dict, repr=False, compare=False
    )

    def _curve(self, name: str) -> PassCurve:
        curve = getattr(self.curves, name)
        if curve is None:
            raise ValueError(f"no {name} curve: the server was built without a drafter")
        return curve

    def _reference(self, name: str, m: int) -> float:
        key = (name, m)
        ref = self._refs.get(key)
        if ref is None:
            tokens, kv, pairs = pass_load(1, m, np.array([self.reference_context_tokens]))
            ref = float(self._curve(name).pass_ms(tokens, kv, pairs)[0])
            self._refs[key] = ref
        return ref

    def _growth(
        self,
        name: str,
        batch: int,
        m: int,
        context_tokens: np.ndarray,
        extra: PrefillLoad | None = None,
    ) -> np.ndarray:
        """curve(batch of m-token requests [+ prompt work]) - curve(batch 1 at reference)."""
        tokens, kv, pairs = pass_load(batch, m, context_tokens)
        if extra is not None and extra.tokens:
            tokens, kv, pairs = tokens + extra.tokens, kv + extra.kv_tokens, pairs + extra.pairs
        return self._curve(name).pass_ms(tokens, kv, pairs) - self._reference(name, m)

    def batch1_cycle(self, k: int) -> CycleCost:
        """The batch-1 cycle at draft length ``k`` (sim/costs.py)."""
        return cycle_cost(self.batch1, k)

    def decode_phases(
        self,
        batch: int,
        k: int,
        context_tokens: ArrayLike,
        prefill: PrefillLoad | None = None,
        drafter: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(draft, verify, extend, overhead) ms of decode iterations, each of the shape of
        ``context_tokens`` (the sum of the batch's contexts before each iteration).

        ``prefill``: prompt chunks fused into the same target pass (chunked prefill mixed
        with decode, vLLM); the drafter processes them in its extend pass, or in a drafter
        prefill pass when k = 0 and ``drafter`` (a speculating server that decodes plainly
        this iteration still builds its drafter's KV).
        """
        if batch < 1:
            raise ValueError(f"a decode iteration needs at least one request, got {batch}")
        s = np.asarray(context_tokens, dtype=float)
        c = self.batch1_cycle(k)
        zero = np.zeros(s.shape)
        if k == 0:
            verify = c.verify_ms + self._growth("decode", batch, 1, s, prefill)
            extend = zero
            if drafter and prefill is not None and prefill.tokens:
                extend = self._draft_prefill_ms(prefill) + zero
            return zero + c.draft_ms, verify, extend, zero + c.overhead_ms
        draft = c.draft_ms + (k - 1) * self._growth("draft_step", batch, 1, s)
        verify = c.verify_ms + self._growth("verify", batch, k + 1, s, prefill)
        extend = c.extend_ms + self._growth("draft_extend", batch, k + 1, s, prefill)
        return draft, verify, extend, zero + c.overhead_ms

    def decode_ms(
        self,
        batch: int,
        k: int,
        context_tokens: ArrayLike,
        prefill: PrefillLoad | None = None,
        drafter: bool = False,
    ) -> np.ndarray:
        """Total ms of decode iterations (shape of ``context_tokens``); at batch 1 and the
        reference context exactly ``cycle_cost(batch1, k).total_ms``."""
        if prefill is None or not prefill.tokens:
            return self.decode_curve(batch, k).ms(context_tokens)
        draft, verify, extend, overhead = self.decode_phases(
            batch, k, context_tokens, prefill, drafter
        )
        return draft + verify + extend + overhead

    def decode_curve(self, batch: int, k: int) -> DecodeCurve:
        """The decode iteration time of ``batch`` requests at draft length ``k`` as a
        function of the context sum (built once per (batch, k))."""
        key = (batch, k)
        curve = self._plain.get(key)
        if curve is None:
            if batch < 1:
                raise ValueError(f"a decode iteration needs at least one request, got {batch}")
            if k == 0:
                passes = [(1, "decode", 1)]
            else:
                m = k + 1
                passes = [(k - 1, "draft_step", 1), (1, "verify", m), (1, "draft_extend", m)]
            terms = tuple(
                (float(times), self._curve(name), batch, tokens, self._reference(name, tokens))
                for times, name, tokens in passes
                if times
            )
            curve = DecodeCurve(self.batch1_cycle(k).total_ms, terms)
            self._plain[key] = curve
        return curve

    def _draft_prefill_ms(self, load: PrefillLoad) -> float:
        curve = self._curve("draft_prefill")
        return float(curve.pass_ms(load.tokens, load.kv_tokens, load.pairs))

    def prefill_ms(self, load: PrefillLoad, drafter: bool) -> float:
        """A prefill-only iteration: the target over the prompt chunks, plus the drafter's
        prefill when ``drafter``."""
        if load.tokens < 1:
            raise ValueError("a prefill iteration needs at least one prompt token")
        ms = float(self.curves.prefill.pass_ms(load.tokens, load.kv_tokens, load.pairs))
        if drafter:
            ms += self._draft_prefill_ms(load)
        return ms
