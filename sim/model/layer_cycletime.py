"""Cycle times from the layer-level pass (``fidelity="layer"``) for the cycle engines.

Implements the cycle-time seam of sim/model/cycletime.py (``deterministic``, ``mean_ms``,
``var_ms``, ``sample(rng, n)``). A pool of layer-level SimPy pass times
(sim/hardware/layer.py; sim/binding/drawn_cycle_times.py builds the pools) is drawn once per pass
(draft step, verify over k + 1 tokens, draft extend; the decode pass when k = 0), then
each cycle resamples the pools (bootstrap): draft = the sum of k - 1 draft-step draws,
verify and extend one draw each, overhead the scenario's constant. The pools carry what
the layer-level pass produces (straggler cost of rank jitter, launch-bound passes) into
the Monte Carlo; pass-time variation between cycles is the layer model's, not the
phase-level ``timing.jitter_cv``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class LayerCycleTimes:
    """Pools of pass times (ms), each of shape (pool,), and the per-cycle structure."""

    num_steps: int
    draft_step_pool_ms: np.ndarray
    verify_pool_ms: np.ndarray
    extend_pool_ms: np.ndarray
    overhead_ms: float

    @property
    def _draft_steps(self) -> int:
        return max(self.num_steps - 1, 0)

    @property
    def deterministic(self) -> bool:
        pools = (self.draft_step_pool_ms, self.verify_pool_ms, self.extend_pool_ms)
        return all(np.ptp(p) == 0 for p in pools)

    def mean_ms(self) -> dict[str, float]:
        return {
            "draft": self._draft_steps * float(self.draft_step_pool_ms.mean()),
            "verify": float(self.verify_pool_ms.mean()),
            "extend": float(self.extend_pool_ms.mean()),
            "overhead": self.overhead_ms,
        }

    def var_ms(self) -> dict[str, float]:
        """Variances of the pools (the distributions resampled), ms^2."""
        return {
            "draft": self._draft_steps * float(self.draft_step_pool_ms.var()),
            "verify": float(self.verify_pool_ms.var()),
            "extend": float(self.extend_pool_ms.var()),
            "overhead": 0.0,
        }

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """{phase: durations of shape (n,)} in ``PHASES`` order."""
        if self.deterministic:
            return {p: np.full(n, m) for p, m in self.mean_ms().items()}

        def draw(pool: np.ndarray, size: tuple[int, ...]) -> np.ndarray:
            return pool[rng.integers(0, pool.size, size=size)]

        steps = self._draft_steps
        draft = draw(self.draft_step_pool_ms, (n, steps)).sum(axis=1) if steps else np.zeros(n)
        return {
            "draft": draft,
            "verify": draw(self.verify_pool_ms, (n,)),
            "extend": draw(self.extend_pool_ms, (n,)) if self.num_steps else np.zeros(n),
            "overhead": np.full(n, self.overhead_ms if self.num_steps else 0.0),
        }
