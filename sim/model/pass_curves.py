"""A serving pass's time as a function of its load, and the load a batch brings.

``PassCurve``: the time (ms) of one pass over its tokens, the KV tokens it reads and the
attention (query, key) pairs it computes (the batched hardware model,
sim/hardware/batched.py, or anything else with that signature); ``LinearCurve``, the form
of fitted step-time models; ``ServingCurves``, a server's curves, one a pass. The loads:
a request with context c that brings m new tokens reads c + m KV entries and computes
m c + m (m + 1) / 2 pairs; summed over a batch of B with S = sum of contexts that is
``kv = S + B m`` and ``pairs = m S + B m (m + 1) / 2`` (``pass_load``); prompt chunks sum
theirs the same way (``PrefillLoad``). How an iteration adds them up over its passes:
sim/model/batched_cost.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["LinearCurve", "PassCurve", "PrefillLoad", "ServingCurves", "pass_load"]


class PassCurve(Protocol):
    """Time (ms) of one pass over ``tokens`` tokens reading ``kv_tokens`` KV entries and
    computing ``pairs`` attention pairs; ``kv_tokens``/``pairs`` broadcast together and
    the result has their shape. ``sequences``: how many requests (rows) the tokens belong
    to, consecutive tokens of one request routing alike in a MoE (None: independent)."""

    def pass_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray: ...

    def scalar_pass(
        self, tokens: int, sequences: int | None = None
    ) -> Callable[[float, float], float]:
        """``pass_ms`` at ``tokens`` as a function of one (kv tokens, pairs), returning a
        float with the bits ``pass_ms`` gives."""
        ...


@dataclass(frozen=True, slots=True)
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

    def pass_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        kv = np.asarray(kv_tokens, dtype=float)
        pr = np.asarray(pairs, dtype=float)
        return (
            self.intercept_ms
            + self.per_token_ms * tokens
            + self.per_kv_token_ms * kv
            + self.per_pair_ms * pr
        )

    def scalar_pass(
        self, tokens: int, sequences: int | None = None
    ) -> Callable[[float, float], float]:
        base = self.intercept_ms + self.per_token_ms * tokens
        per_kv, per_pair = self.per_kv_token_ms, self.per_pair_ms

        def ms(kv_tokens: float, pairs: float) -> float:
            return base + per_kv * float(kv_tokens) + per_pair * float(pairs)

        return ms


@dataclass(frozen=True, slots=True)
class ServingCurves:
    """The pass curves of a server: target decode, verify and prefill; drafter step,
    extend and prefill (None when the server never speculates)."""

    decode: PassCurve
    verify: PassCurve
    prefill: PassCurve
    draft_step: PassCurve | None = None
    draft_extend: PassCurve | None = None
    draft_prefill: PassCurve | None = None


@dataclass(frozen=True, slots=True)
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
