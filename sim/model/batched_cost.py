"""Iteration cost of a serving batch, anchored on the batch-1 cycle.

One decode iteration of a batch of B requests is the batch-1 cycle of what they draft (a
``Draft``, sim/model/drafts.py: a chain of k, SGLang's beam tree or a static tree;
docs/reference.md §Cycle) run over the whole batch:

    the drafter passes over B x beams tokens (k - 1 passes over B for a chain; num_steps - 1
    over B topk for SGLang's tree) + one target verify over B x verify tokens (k + 1, or
    the tree's num_draft_tokens) + one draft extend + the per-cycle overhead,

and at k = 0 one target decode pass over B tokens. Each pass's time comes from a
``PassCurve``: a function of the pass's tokens, the KV tokens it reads and the attention
(query, key) pairs it computes (the batched hardware model, sim/hardware/batched.py, or
anything else with that signature). A request with context c that brings m new tokens
reads c + m KV entries and computes m c + m (m + 1) / 2 pairs; summed over the batch with
S = sum of contexts that is ``kv = S + B m`` and ``pairs = m S + B m (m + 1) / 2``. A
drafter pass over beams runs every beam as a row with its request's context (SGLang
repeats each request's sequence per beam), so over B beams-wide requests it is B x beams
rows of one token with a context sum of beams x S. The tree-masked verify is timed as a
causal verify over the same tokens (an upper bound on its attention pairs).

The draft extend runs over each request's accepted path: L_b tokens (the accepted drafts
and the bonus token; SGLang's ``extend_lens = accept_length + 1``, vLLM's proposer over
the accepted tokens), ``extend_tokens`` per request in the batched growth (the batch's
expected path, rounded, which the engine passes in); ``None`` takes the verify's width, as
SGLang's CUDA-graphed draft extend pads every request to it. Its dependence on the
iteration's own L (``accepted_tokens``) is the batch-1 law, ``timing.draft_extend_ms_per_
token`` per token (0 by default: flat).

Anchoring. The batch-1 pass times (``PassTimes``, as measured or derived for the batch-1
engines) are the anchor: each pass of a batched iteration costs

    batch-1 time over m tokens + curve(batch) - curve(batch 1 over m tokens at the
    reference context),

so at batch 1 and the reference context every phase is the batch-1 phase plus an exact
0.0, and ``decode_ms`` reproduces the batch-1 cycle (``cycle_cost(passes, k).total_ms``, or
the tree cycle the batch-1 tree engines run) to the last bit; away from it the curve's
growth is added. (With a calibrated curve the two terms agree anyway; the anchor makes
batch 1 exact whatever the curve.)

A block-parallel drafter (``PassTimes.parallel_draft_table_ms``, sim/model/cycle.py) runs
no sequential drafter passes: its chain of k comes from the draft extend carrying k - 1
more query tokens a request (the masks), so the extend's batched growth is taken over
``extend_tokens + k - 1`` tokens a request (one sequence each: its context read once).

Prefill passes have no batch-1 anchor (the batch-1 engines have no prefill) and cost the
curve's time; the drafter's prefill (EAGLE drafts from the target's hidden states, so it
runs over the prompt too) is added when the server speculates. The per-cycle overhead is
charged to speculative decode iterations only, as in the batch-1 cycle.

Host work. The host's per-request work beyond the first request (``HostWork``,
sim/model/host_work.py) is added to the overhead phase of the decode iterations that do
not hide it behind the GPU: a speculating server's when the engine overlaps plain decoding
only (SGLang, TensorRT-LLM), every iteration's when it overlaps none (vLLM before 0.14);
an overlapped iteration pays only what its own time does not cover. At one request it adds
exactly 0, so the anchoring above holds.

Logit rows. Every row of target logits beyond the batch-1 cycle's (``LogitRows``,
sim/model/logit_rows.py: one a request in plain decoding, the verify's tokens a request
when speculating) adds its gather and its pass over the vocabulary to the verify (the
decode) phase; 0 at one request.

Recurrent state. A hybrid target's linear-attention layers keep a fixed-size state a request
that every target pass reads once and writes once per token it covers (``RecurrentState``,
sim/model/recurrent_state.py); the requests beyond the batch-1 cycle's add that traffic at
the GPU's memory bandwidth to the verify (the decode) phase, beside the logit rows; 0 at one
request and for targets without a state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from sim.model.cycle import CycleCost, PassTimes
from sim.model.decode_curve import DecodeCurve
from sim.model.drafts import Draft, draft_cycle_cost, draft_passes, verify_tokens
from sim.model.host_work import HostWork
from sim.model.logit_rows import LogitRows
from sim.model.pass_curves import PassCurve, PrefillLoad, ServingCurves, pass_load
from sim.model.recurrent_state import RecurrentState

__all__ = ["IterationCost"]


@dataclass(frozen=True, slots=True)
class IterationCost:
    """Iteration times of a batched server (see the module docstring).

    ``batch1``: the batch-1 pass times (the anchor); ``reference_context_tokens``: the
    context at which they hold (the batch-1 engines do not model context);
    ``draft_table_ms`` / ``draft_ms_per_extra_token``: the batch-1 drafter pass over m beams
    (sim/model/cycle.py ``draft_over_ms``), for trees' batch-1 cycles; ``host``: the
    host work per request and which iterations hide it (default: none); ``logits``: what a
    row of target logits costs (default: not priced); ``state``: a request's recurrent state
    in the target's passes (default: none).
    """

    batch1: PassTimes
    curves: ServingCurves
    reference_context_tokens: float = 0.0
    draft_table_ms: tuple[float, ...] | None = None
    draft_ms_per_extra_token: float = 0.0
    host: HostWork = field(default_factory=HostWork)
    logits: LogitRows = field(default_factory=LogitRows)
    state: RecurrentState = field(default_factory=RecurrentState)
    _refs: dict[tuple[str, int, int], float] = field(
        default_factory=dict, repr=False, compare=False
    )
    _plain: dict[tuple[int, Draft, int | None, bool], DecodeCurve] = field(
        default_factory=dict, repr=False, compare=False
    )
    _cycles: dict[Draft, CycleCost] = field(default_factory=dict, repr=False, compare=False)

    def _curve(self, name: str) -> PassCurve:
        curve = getattr(self.curves, name)
        if curve is None:
            raise ValueError(f"no {name} curve: the server was built without a drafter")
        return curve

    def _reference(self, name: str, m: int, beams: int = 1) -> float:
        """The curve at batch 1 (``beams`` sequences of m tokens) and the reference context."""
        key = (name, m, beams)
        ref = self._refs.get(key)
        if ref is None:
            context = np.array([beams * self.reference_context_tokens])
            tokens, kv, pairs = pass_load(beams, m, context)
            ref = float(self._curve(name).pass_ms(tokens, kv, pairs, beams)[0])
            self._refs[key] = ref
        return ref

    def _growth(
        self,
        name: str,
        batch: int,
        m: int,
        context_tokens: np.ndarray,
        extra: PrefillLoad | None = None,
        beams: int = 1,
    ) -> np.ndarray:
        """curve(batch x beams sequences of m tokens [+ prompt work]) - curve(batch 1)."""
        s = context_tokens if beams == 1 else beams * context_tokens
        rows: int | None = batch * beams
        tokens, kv, pairs = pass_load(batch * beams, m, s)
        if extra is not None and extra.tokens:  # prompt chunks: tokens routed independently
            tokens, kv, pairs = tokens + extra.tokens, kv + extra.kv_tokens, pairs + extra.pairs
            rows = None
        grown = self._curve(name).pass_ms(tokens, kv, pairs, rows)
        return grown - self._reference(name, m, beams)

    def batch1_cycle(self, draft: Draft) -> CycleCost:
        """The batch-1 cycle of ``draft`` (sim/model/drafts.py ``draft_cycle_cost``)."""
        cycle = self._cycles.get(draft)
        if cycle is None:
            cycle = draft_cycle_cost(
                self.batch1,
                draft,
                draft_ms_per_extra_token=self.draft_ms_per_extra_token,
                draft_table_ms=self.draft_table_ms,
            )
            self._cycles[draft] = cycle
        return cycle

    def rows_ms(self, batch: int, draft: Draft) -> float:
        """What the requests beyond one add to the target pass's phase: their logit rows
        (``logits``) and their recurrent state's traffic (``state``); 0.0 at one request."""
        rows_ms = self.logits.growth_ms(batch, draft)
        state_ms = self.state.growth_ms(batch, draft)
        if state_ms:
            rows_ms = rows_ms + state_ms
        return rows_ms

    @staticmethod
    def _off(draft: Draft) -> bool:
        return isinstance(draft, int) and draft == 0

    def _masks(self, draft: Draft) -> int:
        """Query tokens a request a block-parallel drafter adds to the draft extend (k - 1
        masks, ``PassTimes.parallel_draft_table_ms``); 0 for any other draft."""
        parallel = self.batch1.parallel_draft_table_ms is not None
        return draft - 1 if parallel and isinstance(draft, int) and draft > 0 else 0

    def _drafter_passes(self, draft: Draft) -> tuple[tuple[int, int], ...]:
        """The sequential drafter passes (``draft_passes``); none for a block-parallel one."""
        if self.batch1.parallel_draft_table_ms is not None and isinstance(draft, int):
            return ()
        return draft_passes(draft)

    def decode_phases(
        self,
        batch: int,
        draft: Draft,
        context_tokens: ArrayLike,
        prefill: PrefillLoad | None = None,
        drafter: bool = False,
        *,
        extend_tokens: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(draft, verify, extend, overhead) ms of decode iterations, each of the shape of
        ``context_tokens`` (the sum of the batch's contexts before each iteration).

        ``prefill``: prompt chunks fused into the same target pass (chunked prefill mixed
        with decode, vLLM); the drafter processes them in its extend pass, or in a drafter
        prefill pass when k = 0 and ``drafter`` (a speculating server that decodes plainly
        this iteration still builds its drafter's KV). ``extend_tokens``: the draft
        extend's tokens per request in the batched growth (None: the verify's width). The
        host work (``host``) is in the overhead phase, the logit rows (``logits``) in the
        verify (decode) phase.
        """
        if batch < 1:
            raise ValueError(f"a decode iteration needs at least one request, got {batch}")
        s = np.asarray(context_tokens, dtype=float)
        c = self.batch1_cycle(draft)
        zero = np.zeros(s.shape)
        if self._off(draft):
            verify = c.verify_ms + self._growth("decode", batch, 1, s, prefill)
            extend = zero
            if drafter and prefill is not None and prefill.tokens:
                extend = self._draft_prefill_ms(prefill) + zero
            draft_ms = zero + c.draft_ms
        else:
            n = verify_tokens(draft)
            draft_ms = c.draft_ms + zero
            for times, beams in self._drafter_passes(draft):
                draft_ms = draft_ms + times * self._growth("draft_step", batch, 1, s, beams=beams)
            verify = c.verify_ms + self._growth("verify", batch, n, s, prefill)
            w = (n if extend_tokens is None else extend_tokens) + self._masks(draft)
            extend = c.extend_ms + self._growth("draft_extend", batch, w, s, prefill)
        rows_ms = self.rows_ms(batch, draft)
        if rows_ms:
            verify = verify + rows_ms
        overhead = zero + c.overhead_ms
        if batch > 1:
            speculating = drafter or not self._off(draft)
            overhead = overhead + self.host.extra_ms(
                batch,
                speculating,
                draft_ms + verify + extend + overhead,
                c.total_ms,
                not self._off(draft),
            )
        return draft_ms, verify, extend, overhead

    def decode_ms(
        self,
        batch: int,
        draft: Draft,
        context_tokens: ArrayLike,
        prefill: PrefillLoad | None = None,
        drafter: bool = False,
        *,
        extend_tokens: int | None = None,
        accepted_tokens: np.ndarray | None = None,
    ) -> np.ndarray:
        """Total ms of decode iterations (shape of ``context_tokens``); at batch 1 and the
        reference context exactly the batch-1 cycle's total.

        ``extend_tokens``: as in ``decode_phases``; ``accepted_tokens``: the tokens the
        batch emits in each iteration (shape of ``context_tokens``), which move the draft
        extend by ``timing.draft_extend_ms_per_token`` per accepted token per request from
        the batch-1 extend's own accept length (the batch-1 engines' law; none when it is 0).
        """
        if prefill is None or not prefill.tokens:
            curve = self.decode_curve(batch, draft, extend_tokens, drafter)
            total = curve.ms(context_tokens)
        else:
            parts = self.decode_phases(
                batch, draft, context_tokens, prefill, drafter, extend_tokens=extend_tokens
            )
            total = parts[0] + parts[1] + parts[2] + parts[3]
        c = self.batch1_cycle(draft)
        if accepted_tokens is not None and c.extend_per_token_ms and not self._off(draft):
            mean_path = np.asarray(accepted_tokens, dtype=float) / batch
            total = total + c.extend_per_token_ms * (mean_path - c.extend_tokens)
        return total

    def decode_ms_at(
        self,
        batch: int,
        draft: Draft,
        context_tokens: float,
        drafter: bool = False,
        *,
        extend_tokens: int | None = None,
        accepted_tokens: int | None = None,
    ) -> float:
        """``decode_ms`` of one decode iteration (no prompt chunks) at one context sum, in
        Python floats: the same operations in the same order, so the same bits."""
        total = self.decode_curve(batch, draft, extend_tokens, drafter).ms_at(context_tokens)
        c = self.batch1_cycle(draft)
        if accepted_tokens is not None and c.extend_per_token_ms and not self._off(draft):
            mean_path = float(accepted_tokens) / batch
            total = total + c.extend_per_token_ms * (mean_path - c.extend_tokens)
        return total

    def decode_curve(
        self, batch: int, draft: Draft, extend_tokens: int | None = None, drafter: bool = False
    ) -> DecodeCurve:
        """The decode iteration time of ``batch`` requests drafting ``draft`` as a function
        of the context sum (built once per (batch, draft, extend tokens, drafter));
        ``drafter``: the server speculates (its plain iterations may not hide host work)."""
        key = (batch, draft, extend_tokens, drafter)
        curve = self._plain.get(key)
        if curve is None:
            if batch < 1:
                raise ValueError(f"a decode iteration needs at least one request, got {batch}")
            if self._off(draft):
                passes = [(1, "decode", 1, 1)]
            else:
                n = verify_tokens(draft)
                w = (n if extend_tokens is None else extend_tokens) + self._masks(draft)
                passes = [(t, "draft_step", 1, beams) for t, beams in self._drafter_passes(draft)]
                passes += [(1, "verify", n, 1), (1, "draft_extend", w, 1)]
            terms = tuple(
                (
                    float(times),
                    self._curve(name),
                    batch * beams,
                    tokens,
                    beams,
                    self._reference(name, tokens, beams),
                )
                for times, name, tokens, beams in passes
                if times
            )
            speculating = drafter or not self._off(draft)
            host = self.host if self.host.us_per_request else None
            curve = DecodeCurve(
                self.batch1_cycle(draft).total_ms,
                terms,
                host,
                batch,
                speculating,
                not self._off(draft),
                self.rows_ms(batch, draft),
            )
            self._plain[key] = curve
        return curve

    def _draft_prefill_ms(self, load: PrefillLoad) -> float:
        curve = self._curve("draft_prefill")
        return curve.scalar_pass(load.tokens)(load.kv_tokens, load.pairs)

    def prefill_ms(self, load: PrefillLoad, drafter: bool) -> float:
        """A prefill-only iteration: the target over the prompt chunks, plus the drafter's
        prefill when ``drafter``."""
        if load.tokens < 1:
            raise ValueError("a prefill iteration needs at least one prompt token")
        ms = self.curves.prefill.scalar_pass(load.tokens)(load.kv_tokens, load.pairs)
        if drafter:
            ms += self._draft_prefill_ms(load)
        return ms
