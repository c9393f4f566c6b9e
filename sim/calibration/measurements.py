"""Measurements calibration fits to: tok/s figures, accept lengths, vLLM cumulative rates.

Each figure carries a standard error. User-given figures get ``rel_error`` times their
value (the spread a reader can see in published ranges, e.g. 59-61 tok/s is about +-2%);
imported counters and logs get the sampling error their counts imply (see the builders).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from sim.calibration.importers.request_lengths import RequestLengths
from sim.calibration.importers.sglang_log import SglangLog
from sim.calibration.importers.vllm_metrics import SpecDecodeCounters
from sim.errors import SpecsimError


@dataclass(frozen=True, slots=True)
class BaselinePoint:
    """Plain-decoding throughput (tok/s, batch 1) and its standard error; ``context_tokens``:
    the mean context its passes ran at, where the file says (None: it does not)."""

    tok_s: float
    sigma: float
    source: str
    context_tokens: float | None = None


@dataclass(frozen=True, slots=True)
class SpecPoint:
    """Speculative throughput at ``num_steps`` with the accept length measured in that run;
    ``topk`` > 1: an SGLang tree of ``num_draft_tokens`` (its cycle is the tree's);
    ``context_tokens``: the mean context its passes ran at, where the file says."""

    num_steps: int
    accept_length: float
    tok_s: float
    tok_s_sigma: float
    accept_length_sigma: float
    source: str
    topk: int = 1
    num_draft_tokens: int | None = None
    context_tokens: float | None = None

    @property
    def is_tree(self) -> bool:
        return self.topk > 1

    def label(self) -> str:
        """``num_steps 5`` or ``tree 5/4/8`` (num_steps/topk/num_draft_tokens)."""
        if self.is_tree:
            return f"tree {self.num_steps}/{self.topk}/{self.num_draft_tokens}"
        return f"num_steps {self.num_steps}"


@dataclass(frozen=True, slots=True)
class AcceptLengthObs:
    """A mean accept length (bonus included) measured at ``num_steps``."""

    num_steps: int
    accept_length: float
    sigma: float
    source: str


@dataclass(frozen=True, slots=True)
class CumulativeObs:
    """vLLM cumulative rate c_position (1-based position) and its standard error."""

    position: int
    rate: float
    sigma: float
    source: str


@dataclass(frozen=True, slots=True)
class ServerFact:
    """What a file says about the server its figures came from: ``what`` is ``engine``
    (vllm, sglang, trtllm), ``model`` (a Hugging Face id or path), ``tensor_parallel``,
    ``num_steps``, ``kv_cache_dtype``, ``engine_version``, ``expert_parallel``,
    ``quantization`` (as the file spells them, ``none`` for unquantized weights),
    ``decoding_mode`` (as spelled) or ``drafter`` (the ``--drafter`` name of that mode;
    these five read by ``specsim init``)."""

    what: str
    value: str | int
    source: str


@dataclass(frozen=True, slots=True)
class Measurements:
    """Everything calibration fits to; combine several sources with ``+``."""

    baselines: tuple[BaselinePoint, ...] = ()
    points: tuple[SpecPoint, ...] = ()
    accept_lengths: tuple[AcceptLengthObs, ...] = ()
    cumulative: tuple[CumulativeObs, ...] = ()
    cuda_graph: bool | None = None
    notes: tuple[str, ...] = ()
    #: What each imported file held, as read (the JSON output reports it).
    imported: tuple[dict[str, Any], ...] = ()
    #: Speculative figures held out of the timing fit and scored against it (real-drafter
    #: runs when timing comes from synthetic-acceptance runs).
    checks: tuple[SpecPoint, ...] = ()
    #: What the files say about the server they came from (sim/calibration/server_match.py).
    server: tuple[ServerFact, ...] = ()
    #: The prompt and answer lengths the files' runs had (``specsim init`` writes them as
    #: the workload, sim/calibration/init_workload.py; calibration fits nothing to them).
    lengths: tuple[RequestLengths, ...] = ()

    def __add__(self, other: Measurements) -> Measurements:
        graphs = {g for g in (self.cuda_graph, other.cuda_graph) if g is not None}
        return Measurements(
            self.baselines + other.baselines,
            self.points + other.points,
            self.accept_lengths + other.accept_lengths,
            self.cumulative + other.cumulative,
            graphs.pop() if len(graphs) == 1 else None,
            self.notes + other.notes,
            self.imported + other.imported,
            self.checks + other.checks,
            self.server + other.server,
            self.lengths + other.lengths,
        )

    def timing_only(self) -> Measurements:
        """Only the tok/s figures (a run with synthetic or forced acceptance: its accept
        length is what the engine was told, not what the drafter does)."""
        return Measurements(
            baselines=self.baselines,
            points=self.points,
            cuda_graph=self.cuda_graph,
            notes=self.notes,
            imported=self.imported,
            server=self.server,
            lengths=self.lengths,
        )

    def acceptance_only(self) -> Measurements:
        """Only the acceptance figures; the speculative tok/s figures become checks."""
        return Measurements(
            accept_lengths=self.accept_lengths,
            cumulative=self.cumulative,
            notes=self.notes,
            imported=self.imported,
            checks=self.checks + self.points,
            server=self.server,
            lengths=self.lengths,
        )

    @property
    def empty(self) -> bool:
        return not (self.baselines or self.points or self.accept_lengths or self.cumulative)


#: A batch-1 figure's tok/s range: a token every 1000 s to one a microsecond (no decode step
#: is shorter than a kernel launch, sim/calibration/importers/physical.py).
MIN_TOK_S, MAX_TOK_S = 1e-3, 1e6


def _check_positive(value: float, what: str, source: str) -> None:
    if not (math.isfinite(value) and value > 0):
        raise SpecsimError(f"{what} must be a positive number, got {value}", source=source)
    if not MIN_TOK_S <= value <= MAX_TOK_S:
        raise SpecsimError(
            f"{what} {value:.3g} is outside [{MIN_TOK_S:g}, {MAX_TOK_S:g}] (a token every "
            "1000 s to one a microsecond: a unit slip?)",
            source=source,
        )


def baseline_measurement(tok_s: float, rel_error: float, source: str) -> Measurements:
    """A baseline tok/s figure with standard error ``rel_error * tok_s``."""
    _check_positive(tok_s, "baseline tok/s", source)
    return Measurements(baselines=(BaselinePoint(tok_s, rel_error * tok_s, source),))


def point_measurement(
    num_steps: int, accept_length: float, tok_s: float, rel_error: float, source: str
) -> Measurements:
    """A speculative figure: tok/s feeds the timing fit, accept length the acceptance fit."""
    if num_steps < 1:
        raise SpecsimError(f"num_steps must be >= 1, got {num_steps}", source=source)
    _check_positive(tok_s, "tok/s", source)
    if not 1.0 <= accept_length <= num_steps + 1:
        raise SpecsimError(
            f"accept length {accept_length} is outside [1, num_steps + 1 = {num_steps + 1}]",
            source=source,
        )
    al_sigma = rel_error * accept_length
    return Measurements(
        points=(SpecPoint(num_steps, accept_length, tok_s, rel_error * tok_s, al_sigma, source),),
        accept_lengths=(AcceptLengthObs(num_steps, accept_length, al_sigma, source),),
    )


def parse_point(text: str, rel_error: float, source: str = "--point") -> Measurements:
    """``'K:AL:TOKS'`` (num_steps, accept length, speculative tok/s) as a measurement, or
    ``'K/TOPK/NDT:AL:TOKS'``, an SGLang tree row (num_steps, topk, num_draft_tokens: the
    label calibrate prints, ``tree 5/4/8``): its tok/s on the tree's cycle, its accept
    length through the tree's closed form (docs/trees.md), as ``--sglang-bench`` tree rows."""
    parts = text.split(":")
    shape = parts[0].split("/") if parts else []
    try:
        if len(parts) != 3 or len(shape) not in (1, 3):
            raise ValueError
        k, al, tok_s = int(shape[0]), float(parts[1]), float(parts[2])
        topk, ndt = (int(shape[1]), int(shape[2])) if len(shape) == 3 else (1, None)
    except ValueError:
        raise SpecsimError(
            f"expected NUM_STEPS:ACCEPT_LENGTH:TOK_S (e.g. 2:2.0:60) or, for an SGLang tree, "
            f"NUM_STEPS/TOPK/NUM_DRAFT_TOKENS:ACCEPT_LENGTH:TOK_S (e.g. 5/4/8:3.7:219), got "
            f"{text!r}",
            source=source,
        ) from None
    where = f"{source} {text}"
    if len(shape) == 1:
        return point_measurement(k, al, tok_s, rel_error, where)
    return tree_point_measurement(k, topk, ndt, al, tok_s, rel_error, where)


def tree_point_measurement(
    num_steps: int,
    topk: int,
    num_draft_tokens: int | None,
    accept_length: float,
    tok_s: float,
    rel_error: float,
    source: str,
) -> Measurements:
    """An SGLang tree row (topk > 1) given as figures; topk 1 is a chain, whose
    num_draft_tokens SGLang sets to num_steps + 1."""
    # lazy: the speculation section's own rules check the tree's shape (start-up)
    from pydantic import ValidationError

    from sim.scenario.sections.speculation import SpeculationSpec

    if topk == 1:
        if num_draft_tokens != num_steps + 1:
            raise SpecsimError(
                f"topk 1 is a chain: SGLang sets num_draft_tokens to num_steps + 1 = "
                f"{num_steps + 1}, not {num_draft_tokens} (give K:AL:TOKS)",
                source=source,
            )
        return point_measurement(num_steps, accept_length, tok_s, rel_error, source)
    try:
        SpeculationSpec(num_steps=num_steps, topk=topk, num_draft_tokens=num_draft_tokens)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or None
        msg = err["msg"].removeprefix("Value error, ")
        raise SpecsimError(msg, source=source, field=field) from None
    _check_positive(tok_s, "tok/s", source)
    depth = min(num_steps + 1, num_draft_tokens or 0)
    if not 1.0 <= accept_length <= depth:
        raise SpecsimError(
            f"accept length {accept_length} is outside [1, {depth}] (a tree of "
            f"{num_draft_tokens} tokens, {num_steps} deep: at most min(num_steps + 1, "
            "num_draft_tokens))",
            source=source,
        )
    point = SpecPoint(
        num_steps, accept_length, tok_s, rel_error * tok_s, rel_error * accept_length, source,
        topk=topk, num_draft_tokens=num_draft_tokens,
    )  # fmt: skip
    return Measurements(points=(point,))


def cumulative_checks(
    cumulative: tuple[float | None, ...] | list[float | None], accept_length: float
) -> list[str]:
    """What vLLM's per-position figures contradict, as notes (empty when nothing does).

    vLLM counts a token accepted at position i in the per-position counter i and in the
    accepted-token counter together (vllm/v1/spec_decode/metrics.py), so the cumulative
    rates c_i = P(positions 1..i accepted) never rise with i, and 1 + sum(c_i) is the
    accept length. A scrape taken mid-update, counters of different engines or an edited
    result break either; the fit uses the per-position rates, so the note says so.
    ``cumulative``: c_1..c_k (None where a position is missing: the sum is then skipped).
    """
    notes = []
    present = [c for c in cumulative if c is not None]
    if any(b > a + 1e-12 for a, b in itertools.pairwise(present)):
        notes.append(
            "cumulative rates increase with position somewhere (vLLM's cannot): check the "
            "scrape or file"
        )
    if present and len(present) == len(cumulative):
        accepted, listed = accept_length - 1.0, float(sum(present))
        mismatch = (listed / accepted - 1.0) if accepted > 0 else (0.0 if listed == 0 else math.inf)
        if abs(mismatch) > 0.005:
            notes.append(
                f"per-position rates sum to {100 * mismatch:+.1f}% of the accepted tokens the "
                f"accept length {accept_length:.4f} implies (vLLM keeps them equal; the fit "
                "uses the per-position rates): scrape taken mid-update, or mixed counters?"
            )
    return notes


def vllm_measurement(counters: SpecDecodeCounters) -> Measurements:
    """Cumulative per-position rates (or, without them, the accept length) from vLLM counters.

    Standard errors: binomial for c_i, sqrt(c_i (1 - c_i) / drafts), floored at 0.5 / drafts
    (positions share drafts, so they are correlated; this is ignored). Without per-position
    counters the accept length at k gets sqrt(k (AL - 1) / drafts), an upper bound on the
    standard error of a mean of L - 1 in [0, k].
    """
    n = counters.num_drafts
    src = f"vllm metrics {counters.source}"
    k = counters.num_spec_tokens
    present = [(i + 1, c) for i, c in enumerate(counters.cumulative) if c is not None]

    def fmt(xs: tuple[float | None, ...]) -> str:
        return "[" + ", ".join("-" if x is None else f"{x:.4f}" for x in xs) + "]"

    notes = [
        f"vLLM {counters.source}: k {k}, {n:.0f} drafts, accept length "
        f"{counters.accept_length:.4f}, draft acceptance rate "
        f"{counters.draft_acceptance_rate:.4f}, cumulative {fmt(counters.cumulative)}, "
        f"conditional {fmt(counters.conditional)}"
    ]
    notes += cumulative_checks(counters.cumulative, counters.accept_length)
    facts = (ServerFact("engine", "vllm", src),) + ((ServerFact("num_steps", k, src),) if k else ())
    facts += tuple(ServerFact("model", name, src) for name in counters.models)
    if counters.label_sets > 1:
        notes.append(f"vLLM counters summed over {counters.label_sets} label sets (engines/models)")
    if present:
        missing = [i + 1 for i, c in enumerate(counters.cumulative) if c is None]
        if missing:
            notes.append(f"vLLM per-position counters missing for positions {missing}")
        obs = tuple(
            CumulativeObs(pos, c, max(math.sqrt(c * (1.0 - c) / n), 0.5 / n), src)
            for pos, c in present
        )
        return Measurements(cumulative=obs, notes=tuple(notes), server=facts)
    if k is None or k < 1:
        raise SpecsimError("no drafts in the vLLM counters", source=counters.source)
    al = counters.accept_length
    sigma = max(math.sqrt(k * (al - 1.0) / n), 0.5 / n)
    notes.append("no per-position counters: only the accept length is used")
    return Measurements(
        accept_lengths=(AcceptLengthObs(k, al, sigma, src),), notes=tuple(notes), server=facts
    )


def sglang_measurement(
    log: SglangLog, num_steps: int | None, rel_error: float, *, default_num_steps: int
) -> Measurements:
    """Accept length (and, from single-request intervals, tok/s) from an SGLang log.

    num_steps: given, else implied by accept len / accept rate (= k + 1 for chains), else
    ``default_num_steps`` (the base scenario's). The accept length's standard error is the
    spread of the per-interval values over sqrt(intervals), floored at 0.005 (two decimals
    are printed); tok/s is the median over single-request intervals with standard error
    max(rel_error x tok/s, spread / sqrt(intervals)).
    """
    src = f"sglang log {log.source}"
    q10, q50, q90 = log.accept_length_quantiles()
    tok_s_text = (
        f"{log.single_request_tok_s:.2f} tok/s (median of {len(log.single_request)} "
        "single-request intervals)"
        if log.single_request_tok_s is not None
        else "no single-request interval"
    )
    notes = [
        f"SGLang log {log.source}: {len(log.lines)} speculative decode lines, "
        f"{log.skipped} other lines skipped ({log.non_speculative} decode lines without "
        f"speculation); accept len mean {log.accept_length_mean:.3f}, sd "
        f"{log.accept_length_std:.3f}, 10/50/90% {q10:.2f}/{q50:.2f}/{q90:.2f}; cuda graph: "
        f"{'mixed or not logged' if log.cuda_graph is None else log.cuda_graph}; "
        f"gen throughput {tok_s_text}"
    ]
    implied = log.implied_num_draft_tokens
    if num_steps is not None and implied is not None and implied != num_steps + 1:
        notes.append(
            f"the log implies num_draft_tokens {implied} (accept len / accept rate), not "
            f"num_steps + 1 = {num_steps + 1}: wrong --num-steps, or tree drafting (topk > 1)?"
        )
    if num_steps is None:
        if implied is not None and implied >= 2:
            num_steps = implied - 1
            notes.append(f"num_steps {num_steps} implied by accept len / accept rate in the log")
        else:
            num_steps = default_num_steps
            notes.append(f"num_steps {num_steps} taken from the base scenario")
    if num_steps < 1:
        raise SpecsimError("num_steps must be >= 1 for a speculative log", source=log.source)
    n = len(log.lines)
    al = log.accept_length_mean
    if al > num_steps + 1 + 1e-9:
        raise SpecsimError(
            f"mean accept length {al:.3f} exceeds num_steps + 1 = {num_steps + 1}: "
            "wrong --num-steps?",
            source=log.source,
        )
    al_sigma = max(log.accept_length_std / math.sqrt(n), 0.005)
    data = Measurements(
        accept_lengths=(AcceptLengthObs(num_steps, al, al_sigma, src),),
        cuda_graph=log.cuda_graph,
        notes=tuple(notes),
        server=(ServerFact("engine", "sglang", src),),
    )
    tok_s = log.single_request_tok_s
    if tok_s is None:
        return data + Measurements(
            notes=("no single-request interval in the log: its tok/s is not used",)
        )
    singles = [d.gen_tok_s for d in log.single_request if d.gen_tok_s > 0]
    spread = (
        math.sqrt(sum((x - tok_s) ** 2 for x in singles) / (len(singles) - 1))
        if len(singles) > 1
        else 0.0
    )
    sigma = max(rel_error * tok_s, spread / math.sqrt(len(singles)))
    point = SpecPoint(
        num_steps,
        al,
        tok_s,
        sigma,
        al_sigma,
        f"{src} (median of {len(singles)} single-request intervals)",
    )
    return data + Measurements(points=(point,))
