"""The cycle cost model: SGLang's chain cycle from measured pass times.

One cycle with ``num_steps = k`` (reference section 1; sgl-project/sglang
python/sglang/srt/speculative/eagle_worker.py) is

    (k - 1) drafter decode steps + one target verify over k + 1 tokens
    + one drafter draft-extend + fixed per-cycle overhead,

and ``k = 0`` is plain decoding: one graphed target decode step per token. All times are
milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.scenario import Scenario, TimingSpec


@dataclass(frozen=True)
class PassTimes:
    """Pass durations (ms) that the cycle is built from.

    ``verify_over_ms(m)`` is the target verify pass over ``m`` tokens: the measured pass
    (``verify_ms`` over ``verify_tokens`` tokens) plus a linear growth per extra token, or,
    when the hardware model re-composed or derived it (sim/hardware/decompose.py),
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

    @classmethod
    def from_timing(cls, timing: TimingSpec, num_steps: int) -> PassTimes:
        """Pass times as measured; ``verify_tokens`` defaults to ``num_steps + 1``.

        Every pass time must be given; ``pass_times(scenario)`` derives missing ones.
        """
        given = {
            n: getattr(timing, f"{n}_ms")
            for n in ("decode", "verify", "draft_step", "draft_extend")
        }
        missing = [n for n, v in given.items() if v is None]
        if missing:
            raise ValueError(f"timing has no {', '.join(missing)}: use pass_times(scenario)")
        return cls(
            decode_ms=given["decode"],
            verify_ms=given["verify"],
            verify_tokens=timing.verify_tokens or num_steps + 1,
            verify_ms_per_extra_token=timing.verify_ms_per_extra_token,
            draft_step_ms=given["draft_step"],
            draft_extend_ms=given["draft_extend"],
            cycle_overhead_ms=timing.cycle_overhead_ms,
        )


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
        return {
            "draft": self.draft_ms,
            "verify": self.verify_ms,
            "extend": self.extend_ms,
            "overhead": self.overhead_ms,
        }


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


def pass_times(scenario: Scenario) -> PassTimes:
    """The pass times a scenario implies on its hardware.

    As measured when the hardware is the one the timings were measured on
    (``timing.measured_on``); otherwise re-composed (calibrated compute + the new
    communication and launch) or derived by the hardware model (sim/hardware/decompose.py).
    """
    from sim.hardware.decompose import scenario_pass_times  # it builds on this module

    return scenario_pass_times(scenario)


def scenario_cycle_cost(scenario: Scenario, num_steps: int | None = None) -> CycleCost:
    """Cycle cost of a scenario at its own ``num_steps`` or at another ``num_steps``."""
    k = scenario.num_steps if num_steps is None else num_steps
    return cycle_cost(pass_times(scenario), k)


def baseline_tok_s(scenario: Scenario) -> float:
    """Plain decoding throughput, tokens per second: 1000 / decode_ms."""
    return 1000.0 / pass_times(scenario).decode_ms
