"""Step 2 of ``best_k`` (sim/studies/serving/best_k.py), the engine forms of a
selection.

In a closed loop without think time the decode batch is about C, so the best k at C
becomes the k of the batch sizes nearest C. Where the best k changes between two grid
loads the boundary is the concurrency at which the two k tie (their paired gain bisected
on common random numbers, ``refined_ends``), otherwise the geometric midpoint
(``midpoint_ends``): a vLLM ``num_speculative_tokens_per_batch_size`` table of
``[start_bs, end_bs, K]`` rows (``table_rows``; vllm
docs/features/speculative_decoding/dynamic_speculative_decoding.md; sim/model/policy.py
``KTable``), and an SGLang-style threshold: one k up to a batch size, plain decoding
above (``disable_threshold``, ``DisableAbove``; SGLang PR 13376's
``--speculative-batch-size-threshold``, vLLM V0's ``speculative_disable_by_batch_size``).
The threshold's k is the one whose objective, relative to the best at each load, is
highest on average over the loads below the threshold. A threshold cannot express
speculation that only starts paying at high load; then there is none, and the reason is
given.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from sim.model.policy import DisableAbove, FixedK
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.best_k_selection import LoadChoice
from sim.studies.serving.break_even import cell_loads, find_crossings
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.paired_metrics import Load, gain

__all__ = ["disable_threshold", "midpoint_ends", "refined_ends", "table_row_k", "table_rows"]


def midpoint_ends(choices: Sequence[LoadChoice]) -> list[int]:
    """The last batch size of each grid load's range: the geometric midpoint (rounded
    down) of neighbouring loads; the last load's own value."""
    ends = [math.floor(math.sqrt(a.users * b.users)) for a, b in itertools.pairwise(choices)]
    return [*ends, choices[-1].users]


def table_rows(
    choices: Sequence[LoadChoice], ends: Sequence[int] | None = None
) -> tuple[tuple[int, int, int], ...]:
    """vLLM ``[start_bs, end_bs, K]`` rows from the best k at increasing concurrencies:
    the batch sizes up to ``ends[i]`` (default ``midpoint_ends``) after the previous range
    take load i's k, equal neighbouring rows merged; the last row ends at the last grid
    load (vLLM uses the last K beyond it)."""
    ends = list(ends) if ends is not None else midpoint_ends(choices)
    rows: list[list[int]] = []
    start = 1
    for c, given_end in zip(choices, ends, strict=True):
        end = max(start, given_end)
        if rows and rows[-1][2] == c.best:
            rows[-1][1] = end
        else:
            rows.append([start, end, c.best])
        start = end + 1
    return tuple((a, b, k) for a, b, k in rows)


def disable_threshold(
    choices: Sequence[LoadChoice], rows: Sequence[tuple[int, int, int]]
) -> tuple[DisableAbove | FixedK | None, str]:
    """The SGLang-style form of the selection and what it means in words.

    Speculation on up to the end of the first run of rows with k > 0 and off beyond, if
    the best k stays 0 from there on; FixedK when it never turns off; None (with the
    reason) when plain decoding is best at batch 1 or speculation turns on again.
    """
    if rows[0][2] == 0:
        return None, (
            "plain decoding is best at batch size 1: a disable-above threshold cannot express "
            "speculation that only pays at higher load (use the table)"
        )
    first_off = next((i for i, r in enumerate(rows) if r[2] == 0), None)
    if first_off is not None and any(r[2] > 0 for r in rows[first_off:]):
        return None, (
            "speculation pays again after a plain-decoding range: a single threshold "
            "cannot express it (use the table)"
        )
    limit = rows[first_off - 1][1] if first_off is not None else None
    on = [c for c in choices if limit is None or c.users <= limit]
    ks = sorted({k for c in on for k in c.levels if k > 0})

    def score(k: int) -> float:
        return sum(c.levels[k].mean / c.levels[c.best].mean for c in on) / len(on)

    k_best = max(ks, key=lambda k: (score(k), -k))
    if limit is None:
        return FixedK(k_best), f"speculation pays at every load: k = {k_best} throughout"
    return DisableAbove(k_best, limit), (
        f"k = {k_best} up to batch size {limit}, plain decoding above "
        f"(SGLang --speculative-batch-size-threshold {limit}; vLLM V0 "
        f"speculative_disable_by_batch_size {limit + 1})"
    )


def refined_ends(
    evaluator: PointEvaluator, choices: Sequence[LoadChoice], objective: str
) -> tuple[list[int], list[str]]:
    """``midpoint_ends`` with each boundary between two different best k moved to where
    their paired gain crosses 1 (bisected between the two grid loads on common random
    numbers, sim/studies/serving/break_even.py); a boundary stays at the midpoint when the gain
    does not cross once (noise, or a third k best in between), said in the notes."""
    ends = midpoint_ends(choices)
    notes = []
    # each boundary bisects one grid cell (its estimate), two policies a midpoint: the
    # bisections' bound, for the progress total
    evaluator.expect(
        sum(
            2 * cell_loads(a.users, b.users, 1, integer=True, rtol=0.02)
            for a, b in itertools.pairwise(choices)
            if a.best != b.best
        )
    )
    for i, (a, b) in enumerate(itertools.pairwise(choices)):
        if a.best == b.best:
            continue
        lower, upper = FixedK(a.best), FixedK(b.best)

        def curve(x: float, lower: FixedK = lower, upper: FixedK = upper) -> Ratio:
            load = Load("concurrency", x)
            evaluator.ensure([(load, upper), (load, lower)], step=True)  # a pair: one step
            return gain(evaluator(load, upper), evaluator(load, lower), objective)

        def simulated(lower: FixedK = lower, upper: FixedK = upper) -> list[float]:
            return [
                float(load.value)
                for load, p in evaluator.memo
                if p == upper and load.kind == "concurrency" and (load, lower) in evaluator.memo
            ]

        found = find_crossings(  # the boundary reads the estimate, not its 95% interval
            [float(a.users), float(b.users)], curve, integer=True, seen=simulated, bands=False
        )
        if len(found) == 1:
            ends[i] = max(a.users, math.floor(found[0].at))
        else:
            notes.append(
                f"k {a.best} -> {b.best} between {a.users} and {b.users} users: no single "
                "crossing, boundary at the geometric midpoint"
            )
    return ends, notes


def table_row_k(table: Sequence[tuple[int, int, int]], users: int) -> int | None:
    """The k a vLLM table's row ``[lo, hi, k]`` gives a batch of ``users`` (None: none)."""
    return next((k for lo, hi, k in table if lo <= users <= hi), None)
