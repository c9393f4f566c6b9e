"""What a Monte Carlo run returns: per-request and per-cycle arrays of R replications."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sim.model.cycle import PHASES
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.model.tree.acceptance import Acceptance
    from sim.simulation.stream import StreamStats


@dataclass(frozen=True, slots=True)
class MonteCarloResult:
    """R replications of Q requests of N output tokens each, at k = ``num_steps`` (the most
    drafts a cycle accepts: the chain's num_steps, or a tree's depth).

    ``acceptance`` is the model the requests drew their rates from; ``fidelity`` the
    pass-time model (``cycle`` or ``layer``).

    A streamed run (``stream`` set, sim/simulation/stream.py) keeps no per-request arrays:
    every array below is None and ``stream`` holds the statistics folded block by block.

    Arrays (read-only):
      tok_s            float (R, Q)   per-request tok/s, counting N tokens (not the overshoot)
      request_ms       float (R, Q)   per-request time from first cycle start to last cycle end
      request_tokens   int   (R, Q)   tokens counted per request (N each)
      emitted_tokens   int   (R, Q)   tokens the cycles emitted (N .. N + k: last cycle overshoot)
      cycles           int   (R, Q)   cycles per request
      request_class    int   (R, Q)   index into ``class_names`` (workload mix)
      accept_counts    int   (R, k+1) cycles that emitted L = j + 1 tokens
      phase_ms         float (R, 4)   total ms per phase, in ``PHASES`` order
    """

    scenario: Scenario
    acceptance: Acceptance
    engine: str
    fidelity: str
    seed: int
    replications: int
    requests: int
    output_tokens: int
    num_steps: int
    class_names: tuple[str, ...]
    tok_s: np.ndarray | None
    request_ms: np.ndarray | None
    request_tokens: np.ndarray | None
    emitted_tokens: np.ndarray | None
    cycles: np.ndarray | None
    request_class: np.ndarray | None
    accept_counts: np.ndarray | None
    phase_ms: np.ndarray | None
    stream: StreamStats | None = None

    @property
    def streamed(self) -> bool:
        return self.stream is not None

    @property
    def phases(self) -> tuple[str, ...]:
        return PHASES
