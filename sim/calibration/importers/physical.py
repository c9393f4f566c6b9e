"""What an imported figure can be, physically: the bounds every importer checks.

A figure outside them is not a measurement of a server (a unit slip, an edited or broken
file) and is refused with one line naming the field, never fitted:

* a time per step or per output token of at least ``MIN_STEP_MS`` (1 us: a GPU kernel
  launch alone takes ~2-5 us, so no decode step of any model is shorter);
* a throughput of at most ``MAX_TOK_S`` tokens/s per server;
* an accept length of at most ``MAX_ACCEPT_LENGTH`` (1 + the most draft steps a scenario
  takes, sim/scenario/sections/bounds.py MAX_NUM_STEPS);
* a tree width (SGLang ``topk``) of at least 1.
"""

from __future__ import annotations

from sim.errors import SpecsimError
from sim.scenario.sections.bounds import MAX_NUM_STEPS

__all__ = ["MAX_ACCEPT_LENGTH", "MAX_TOK_S", "MIN_STEP_MS", "check_step_ms", "check_tok_s"]

MIN_STEP_MS = 1e-3
MAX_TOK_S = 1e8
MAX_ACCEPT_LENGTH = float(MAX_NUM_STEPS + 1)


def check_step_ms(value: float, source: str, field: str) -> float:
    """``value`` (a time per step or per token, ms) if at least ``MIN_STEP_MS``."""
    if not value >= MIN_STEP_MS:
        raise SpecsimError(
            f"{value:.3g} ms is below {MIN_STEP_MS * 1000:g} us, shorter than any decode step "
            "(a unit slip?)",
            source=source,
            field=field,
        )
    return value


def check_tok_s(value: float, source: str, field: str) -> float:
    """``value`` (tokens/s) if positive and at most ``MAX_TOK_S``."""
    if not 0.0 < value <= MAX_TOK_S:
        raise SpecsimError(
            f"{value:.3g} tok/s is outside (0, {MAX_TOK_S:g}] (a unit slip?)",
            source=source,
            field=field,
        )
    return value
