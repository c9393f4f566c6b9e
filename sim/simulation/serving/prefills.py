"""Prompts being prefilled (``Prefilling``), cut into chunks under an iteration's token
budget first come first served (``prefill_chunks``) and advanced by the chunks an
iteration ran (``advance_chunks``): pure bookkeeping, no events; and a replication's
prefilling requests with the KV they hold (``Prefills``).

A request's prefill recomputes its prompt and, after a preemption, the tokens it had
generated (vLLM V1 recomputes a preempted request's KV); SGLang runs prefills first
(``prefill_first``), vLLM's chunked prefill mixes chunks into the decode pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.model.pass_curves import PrefillLoad
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.workload import Request

__all__ = ["Prefilling", "Prefills", "advance_chunks", "prefill_chunks"]


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


class Prefills:
    """The requests being prefilled, in admission order (``states``: one list for the
    replication, changed in place), and the KV tokens they hold (``hold_tokens``) as
    ``ledger`` counts it; ``skip``: prefill is not modelled (every request decodes from
    its admission, ``SchedulerConfig.prefill``)."""

    def __init__(self, ledger: KvLedger, skip: bool):
        self.states: list[Prefilling] = []
        self.hold_tokens = 0
        self.ledger = ledger
        self.skip = skip

    def needs(self, req: Request) -> bool:
        """Prefill is modelled and the request has a context to prefill (a prompt, or
        tokens generated before a preemption)."""
        return not self.skip and req.context_tokens > 0

    def holds(self, req: Request) -> int:
        """KV tokens a request holds from admission: context, lookahead, and the token
        its prefill emits (``KvLedger.holds``)."""
        return self.ledger.holds(req.context_tokens + (1 if self.needs(req) else 0))

    def start(self, req: Request, hold: int) -> None:
        """``req``, admitted holding ``hold`` KV tokens, starts its prefill."""
        self.states.append(Prefilling(req, 0, req.context_tokens))
        self.hold_tokens += hold

    def chunks(self, budget: int) -> tuple[list[tuple[Prefilling, int]], PrefillLoad]:
        """Prompt chunks FIFO up to ``budget`` tokens, and their load (``prefill_chunks``)."""
        return prefill_chunks(self.states, budget)

    def finish(self, state: Prefilling) -> Request:
        """``state``'s prompt is complete: its request leaves the prefills, with the KV
        it held from admission (before its prefill's token counts in its context)."""
        self.states.remove(state)
        req = state.request
        self.hold_tokens -= self.holds(req)
        return req
