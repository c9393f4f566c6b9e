"""The cycle cost model: SGLang's chain cycle from measured pass times.

One cycle with ``num_steps = k`` (sgl-project/sglang
python/sglang/srt/speculative/eagle_worker.py) is

    (k - 1) drafter decode steps + one target verify over k + 1 tokens
    + one drafter draft-extend + fixed per-cycle overhead,

and ``k = 0`` is plain decoding: one graphed target decode step per token. All times are
milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Phase names, in the order a cycle runs them (the keys of ``CycleCost.as_dict`` and the
#: columns of every per-phase array).
PHASES: tuple[str, ...] = ("draft", "verify", "extend", "overhead")


@dataclass(frozen=True)
class PassTimes:
    """Pass durations (ms) that the cycle is built from.

    ``verify_over_ms(m)`` is the target verify pass over ``m`` tokens: the measured pass
    (``verify_ms`` over ``verify_tokens`` tokens) plus a linear growth per extra token, or,
    when the hardware model re-composed or derived it (sim/scenario/decompose.py),
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


@dataclass(frozen=True)
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

    @property
    def total_ms(self) -> float:
        return self.draft_ms + self.verify_ms + self.extend_ms + self.overhead_ms

    @property
    def max_tokens(self) -> int:
        """Tokens one cycle emits when every draft is accepted: k + 1."""
        return self.num_steps + 1

    def as_dict(self) -> dict[str, float]:
        """Phase durations (ms) keyed by ``PHASES``, in cycle order."""
        values = (self.draft_ms, self.verify_ms, self.extend_ms, self.overhead_ms)
        return dict(zip(PHASES, values, strict=True))


def cycle_cost(passes: PassTimes, num_steps: int) -> CycleCost:
    """The SGLang chain cycle for ``num_steps = k`` draft tokens (k = 0: plain decoding)."""
    if num_steps < 0:
        raise ValueError(f"num_steps must be >= 0, got {num_steps}")
    if num_steps == 0:
        return CycleCost(0, 0.0, passes.decode_ms, 0.0, 0.0)
    return CycleCost(
        num_steps=num_steps,
        draft_ms=(num_steps - 1) * passes.draft_step_ms,
        verify_ms=passes.verify_over_ms(num_steps + 1),
        extend_ms=passes.draft_extend_ms,
        overhead_ms=passes.cycle_overhead_ms,
    )
