"""The cycle cost model: SGLang's chain cycle from measured pass times.

One cycle with ``num_steps = k`` (sgl-project/sglang
python/sglang/srt/speculative/eagle_worker.py) is

    (k - 1) drafter decode steps + one target verify over k + 1 tokens
    + one drafter draft-extend over the L accepted tokens + fixed per-cycle overhead,

and ``k = 0`` is plain decoding: one graphed target decode step per token. All times are
milliseconds.

A block-parallel drafter (DFlash, DSpark, P-EAGLE; ``speculation.parallel_draft``) proposes
the same chain of k in ONE drafter pass: vLLM's ``DSparkProposer.set_inputs_first_pass``
(vllm-project/vllm vllm/v1/spec_decode/dspark.py, commit 26a86f5) fills k query tokens a
request, the sampled token then k - 1 ``parallel_drafting_token_id`` masks, and one forward
samples all k, the drafter's KV of the verified tokens written first
(``precompute_and_store_context_kv``); the parallel-drafting config reserves k - 1 more
slots a request for the masks (vllm/config/speculative.py
``max_num_new_slots_for_drafting``). The verify is the
chain's (k + 1 tokens) and acceptance its prefix rule. So its cycle is the chain of 1's
(the draft extend over the accepted tokens, which yields the first draft) with k - 1 more
query tokens on that pass and no sequential drafter steps.

The draft extend runs over the tokens the cycle accepted, so it depends on what happened:
``extend(L) = extend_ms + extend_per_token_ms x (L - extend_tokens)``, linear in L. A cycle's
expected duration then depends on the pmf of L only through E[L] (linearity), so
``CycleCost.at_accept_length(E[L])`` is the exact expected cycle and renewal-reward still
gives tok/s = 1000 E[L] / E[T]. A drafter step may carry a per-step overhead beyond its
pass (sampling, tree bookkeeping, host work; ``draft_step_overhead_ms``), counted in the
draft phase and reported apart.

What a cycle yields by renewal-reward: ``throughput_tok_s`` (1000 E[L] / E[T]), its
``ceiling_tok_s`` with every draft accepted, and its inverse, the accept length a target
needs (``required_accept_length``, ``break_even_accept_length``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

#: Phase names, in the order a cycle runs them (the keys of ``CycleCost.as_dict`` and the
#: columns of every per-phase array).
PHASES: tuple[str, ...] = ("draft", "verify", "extend", "overhead")


@dataclass(frozen=True, slots=True)
class PassTimes:
    """Pass durations (ms) that the cycle is built from.

    ``verify_over_ms(m)`` is the target verify pass over ``m`` tokens: the measured pass
    (``verify_ms`` over ``verify_tokens`` tokens) plus a linear growth per extra token, or,
    when the hardware model re-composed or derived it (sim/hardware/pass_model.py),
    ``verify_table_ms[m - 1]`` (MoE-aware: it grows with the distinct experts read), extended
    linearly past the table's end.
    """

    decode_ms: float
    verify_ms: float
    verify_tokens: int
    verify_ms_per_extra_token: float
    draft_step_ms: float
    draft_extend_ms: float
    cycle_overhead_ms: float
    verify_table_ms: tuple[float, ...] | None = None
    #: Draft extend growth per accepted token, and the accept length ``draft_extend_ms``
    #: was taken at (None: k + 1, the pass the hardware model derives).
    draft_extend_ms_per_token: float = 0.0
    draft_extend_tokens: float | None = None
    #: Per-step drafter overhead beyond the drafter pass (added to every drafter step).
    draft_step_overhead_ms: float = 0.0
    #: A block-parallel drafter (DFlash, DSpark, P-EAGLE): the chain's k drafts come from
    #: one drafter pass that carries k - 1 query tokens a request beyond the chain of 1's
    #: draft extend, not from k - 1 sequential passes. The batch-1 drafter pass over
    #: m = 1.. tokens (``draft_over_ms``'s table); None: a sequential drafter.
    parallel_draft_table_ms: tuple[float, ...] | None = None

    def verify_over_ms(self, num_tokens: int) -> float:
        if num_tokens < 1:
            raise ValueError(f"a verify pass covers at least 1 token, got {num_tokens}")
        table = self.verify_table_ms
        if table is not None:
            if num_tokens <= len(table):
                return table[num_tokens - 1]
            slope = table[-1] - table[-2] if len(table) > 1 else 0.0
            return table[-1] + (num_tokens - len(table)) * slope
        return self.verify_ms + (num_tokens - self.verify_tokens) * self.verify_ms_per_extra_token


@dataclass(frozen=True, slots=True)
class CycleCost:
    """Deterministic duration (ms) of one cycle, by phase.

    For ``num_steps = 0`` the whole cycle is one target decode step, reported as ``verify_ms``
    (the target pass) with the other phases zero.
    """

    num_steps: int
    draft_ms: float
    verify_ms: float
    extend_ms: float
    overhead_ms: float
    #: The extend over L accepted tokens is extend_ms + extend_per_token_ms (L - extend_tokens).
    extend_per_token_ms: float = 0.0
    extend_tokens: float = 0.0
    #: The part of ``draft_ms`` that is per-step overhead (k - 1 steps of it).
    draft_overhead_ms: float = 0.0

    def __post_init__(self) -> None:
        if (
            self.num_steps > 0
            and min(self.extend_at_ms(1), self.extend_at_ms(self.max_tokens)) < -1e-12
        ):
            raise ValueError(
                f"the draft extend must not be negative for 1 <= L <= {self.max_tokens}: "
                f"{self.extend_ms:g} ms at L = {self.extend_tokens:g} with "
                f"{self.extend_per_token_ms:g} ms per token"
            )

    @property
    def total_ms(self) -> float:
        """The cycle's duration with the extend at ``extend_tokens`` (its expected duration
        when ``extend_tokens`` is E[L]: see ``at_accept_length``)."""
        return self.draft_ms + self.verify_ms + self.extend_ms + self.overhead_ms

    def extend_at_ms(self, accept_length: float) -> float:
        """The draft extend over ``accept_length`` tokens (or its mean at a mean L)."""
        return self.extend_ms + self.extend_per_token_ms * (accept_length - self.extend_tokens)

    def at_accept_length(self, accept_length: float) -> CycleCost:
        """The expected cycle when E[L] = ``accept_length`` (exact: the extend is linear)."""
        if self.extend_per_token_ms == 0.0:
            return self
        return replace(
            self, extend_ms=self.extend_at_ms(accept_length), extend_tokens=accept_length
        )

    @property
    def fixed_ms(self) -> float:
        """The part of the expected cycle that does not grow with E[L]: T(E[L]) = fixed_ms
        + extend_per_token_ms x E[L]."""
        return self.total_ms - self.extend_per_token_ms * self.extend_tokens

    def expected_ms(self, length_pmf: np.ndarray) -> float:
        """E[T] for L distributed as ``length_pmf`` (shape (k + 1,), P(L = 1..k + 1))."""
        pmf = np.asarray(length_pmf, dtype=float)
        mean = float(np.dot(np.arange(1, pmf.size + 1), pmf))
        return self.at_accept_length(mean).total_ms

    @property
    def max_tokens(self) -> int:
        """Tokens one cycle emits when every draft is accepted: k + 1."""
        return self.num_steps + 1

    def as_dict(self) -> dict[str, float]:
        """Phase durations (ms) keyed by ``PHASES``, in cycle order."""
        values = (self.draft_ms, self.verify_ms, self.extend_ms, self.overhead_ms)
        return dict(zip(PHASES, values, strict=True))


def draft_over_ms(
    draft_step_ms: float,
    tokens: int,
    *,
    ms_per_extra_token: float = 0.0,
    table_ms: Sequence[float] | None = None,
) -> float:
    """Drafter decode pass over ``tokens`` tokens (beams x batch, or a block-parallel
    drafter's query tokens), ms.

    ``table_ms[m - 1]`` is the pass over m tokens when given (extended linearly past its
    end by its last slope); otherwise ``draft_step_ms + (tokens - 1) ms_per_extra_token``.
    """
    if tokens < 1:
        raise ValueError(f"a drafter pass covers at least 1 token, got {tokens}")
    if table_ms is not None:
        table = list(table_ms)
        if tokens <= len(table):
            return float(table[tokens - 1])
        slope = table[-1] - table[-2] if len(table) > 1 else 0.0
        return float(table[-1] + (tokens - len(table)) * slope)
    return draft_step_ms + (tokens - 1) * ms_per_extra_token


def parallel_draft_ms(passes: PassTimes, num_steps: int) -> float:
    """What a block-parallel drafter's one pass adds at batch 1 over the chain of 1's
    draft extend: its k - 1 further query tokens, ``draft_over_ms(k) - draft_over_ms(1)``
    on ``parallel_draft_table_ms`` (0 at k = 1, and 0 for a sequential drafter)."""
    table = passes.parallel_draft_table_ms
    if table is None or num_steps < 2:
        return 0.0
    step = passes.draft_step_ms
    return draft_over_ms(step, num_steps, table_ms=table) - draft_over_ms(step, 1, table_ms=table)


def cycle_cost(passes: PassTimes, num_steps: int) -> CycleCost:
    """The SGLang chain cycle for ``num_steps = k`` draft tokens (k = 0: plain decoding),
    with the extend at ``draft_extend_tokens``; ``at_accept_length`` moves it to an E[L].

    A block-parallel drafter (``passes.parallel_draft_table_ms``) runs no sequential
    drafter steps: its draft phase is what the k - 1 further query tokens add to the one
    drafter pass (``parallel_draft_ms``), the verify and the extend are the chain's."""
    if num_steps < 0:
        raise ValueError(f"num_steps must be >= 0, got {num_steps}")
    if num_steps == 0:
        return CycleCost(0, 0.0, passes.decode_ms, 0.0, 0.0)
    tokens = passes.draft_extend_tokens
    if passes.parallel_draft_table_ms is None:
        steps = num_steps - 1
        draft_ms = steps * (passes.draft_step_ms + passes.draft_step_overhead_ms)
        draft_overhead_ms = steps * passes.draft_step_overhead_ms
    else:
        draft_ms, draft_overhead_ms = parallel_draft_ms(passes, num_steps), 0.0
    return CycleCost(
        num_steps=num_steps,
        draft_ms=draft_ms,
        verify_ms=passes.verify_over_ms(num_steps + 1),
        extend_ms=passes.draft_extend_ms,
        overhead_ms=passes.cycle_overhead_ms,
        extend_per_token_ms=passes.draft_extend_ms_per_token,
        extend_tokens=float(num_steps + 1 if tokens is None else tokens),
        draft_overhead_ms=draft_overhead_ms,
    )


def throughput_tok_s(accept_length: float, cost: CycleCost) -> float:
    """Long-run tokens per second, renewal-reward: 1000 * E[L] / E[T_cycle ms], with the
    cycle's extend taken at E[L] (``CycleCost.at_accept_length``)."""
    return 1000.0 * accept_length / cost.at_accept_length(accept_length).total_ms


def ceiling_tok_s(cost: CycleCost, max_tokens: int | None = None) -> float:
    """Throughput when every draft is accepted: 1000 L_max / T(L_max), L_max = k + 1 for a
    chain (a tree: its depth + 1), the extend taken over those L_max tokens."""
    top = cost.max_tokens if max_tokens is None else max_tokens
    return throughput_tok_s(top, cost.at_accept_length(top))


def required_accept_length(target_tok_s: float, cost: CycleCost) -> float:
    """Accept length needed for ``target_tok_s`` with cycles of ``cost``.

    target = 1000 AL / (F + s AL) with F = ``cost.fixed_ms`` and s the extend's growth per
    accepted token, so AL = target F / (1000 - target s) (target T / 1000 when s = 0);
    infinite when target s >= 1000 (each accepted token costs more than it is worth).
    """
    denominator = 1000.0 - target_tok_s * cost.extend_per_token_ms
    if denominator <= 0.0:
        return float("inf")
    return target_tok_s * cost.fixed_ms / denominator


def break_even_accept_length(baseline_tok_s: float, cost: CycleCost) -> float:
    """Accept length at which speculation matches plain decoding: baseline tok/s x cycle."""
    return required_accept_length(baseline_tok_s, cost)
