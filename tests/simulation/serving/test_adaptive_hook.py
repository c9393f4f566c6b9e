"""The engine's hook for adaptive policies: a controller is asked k per block, caps the
block at its horizon and sees every iteration's accepted drafts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.model.policy import FixedK
from sim.simulation.serving import ClosedLoop, simulate_serving, work_out
from tests.simulation.serving.helpers import plan


@dataclass
class Recording:
    """A controller that always answers k and records what it is told."""

    k: int
    horizon_iterations: int
    seen: list[tuple[int, int, np.ndarray]] = field(default_factory=list)

    def k_for_batch(self, batch: int) -> int:
        return self.k

    def horizon(self, batch: int) -> int:
        return self.horizon_iterations

    def observe(self, batch: int, k: int, accepted: np.ndarray) -> None:
        self.seen.append((batch, k, accepted.copy()))


@dataclass(frozen=True)
class Wrapped:
    """FixedK(k) as an adaptive policy; ``last`` keeps the controller of the last run."""

    k: int
    horizon_iterations: int
    last: list[Recording] = field(default_factory=list, compare=False, hash=False)

    @property
    def max_k(self) -> int:
        return self.k

    def k_for_batch(self, batch: int) -> int:
        return self.k

    def describe(self) -> str:
        return f"adaptive k = {self.k}"

    def start(self) -> Recording:
        self.last.append(Recording(self.k, self.horizon_iterations))
        return self.last[-1]


def test_a_controller_answering_k_gives_the_fixed_k_records_whatever_its_horizon():
    p = plan(ClosedLoop(4), k=3, requests=12, output=50)
    fixed = simulate_serving(p, work_out(p, {"f": FixedK(3)}), replications=2, seed=9).records["f"]
    for horizon in (1, 3, 1000):
        policy = Wrapped(3, horizon)
        got = simulate_serving(p, work_out(p, {"a": policy}), replications=2, seed=9).records["a"]
        for a, b in zip(got, fixed, strict=True):
            # blocks cut elsewhere sum the same durations in another order (last bits)
            assert np.allclose(a.finish_ms, b.finish_ms, rtol=1e-12, atol=0)
            assert a.tokens_delivered == b.tokens_delivered
            assert a.cycle_tokens == b.cycle_tokens
        # a fresh controller per replication; it saw every decode cycle's accepted drafts
        assert len(policy.last) == 2
        for ctl, rec in zip(policy.last, got, strict=True):
            cycles = sum(acc.size for _, _, acc in ctl.seen)
            accepted = sum(int(acc.sum()) for _, _, acc in ctl.seen)
            assert cycles == rec.request_cycles
            assert accepted + cycles == rec.cycle_tokens
            assert all(k == 3 and acc.shape[0] == b for b, k, acc in ctl.seen)
            if horizon < 1000:
                assert max(acc.shape[1] for _, _, acc in ctl.seen) <= horizon
