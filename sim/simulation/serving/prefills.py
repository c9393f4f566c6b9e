"""Prompts being prefilled (``Prefilling``), cut into chunks under an iteration's token
budget first come first served (``prefill_chunks``) and advanced by the chunks an
iteration ran (``advance_chunks``): pure bookkeeping, no events.

A request's prefill recomputes its prompt and, after a preemption, the tokens it had
generated (vLLM V1 recomputes a preempted request's KV); SGLang runs prefills first
(``prefill_first``), vLLM's chunked prefill mixes chunks into the decode pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.model.batched_cost import PrefillLoad
from sim.simulation.serving.workload import Request

__all__ = ["Prefilling", "advance_chunks", "prefill_chunks"]


@dataclass
class Prefilling:
    """A request whose prompt (and, after a preemption, generated tokens) is being
    prefilled: ``done`` tokens so far, ``remaining`` to go."""

    request: Request
    done: int
    remaining: int


def prefill_chunks(
    prefilling: list[Prefilling], budget: int
) -> tuple[list[tuple[Prefilling, int]], PrefillLoad]:
    """Prompt chunks of ``prefilling`` FIFO up to ``budget`` tokens (each min(remaining,
    what the budget has left)), and their load (``PrefillLoad.of_chunks``)."""
    chunks: list[tuple[Prefilling, int]] = []
    for state in prefilling:
        if budget <= 0:
            break
        c = min(state.remaining, budget)
        chunks.append((state, c))
        budget -= c
    load = PrefillLoad.of_chunks([c for _, c in chunks], [s.done for s, _ in chunks])
    return chunks, load


def advance_chunks(chunks: list[tuple[Prefilling, int]]) -> list[Prefilling]:
    """Advance each prefill by its chunk; those whose prompt is now complete, in order."""
    complete: list[Prefilling] = []
    for state, c in chunks:
        state.done += c
        state.remaining -= c
        if not state.remaining:
            complete.append(state)
    return complete
