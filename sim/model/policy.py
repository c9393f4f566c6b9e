"""Speculation policies: what to draft at which batch size.

A policy answers ``k_for_batch(batch)``, the batch being the requests that decode in the
iteration, with a ``Draft`` (sim/model/drafts.py): an int k (a chain of k drafts, 0 = plain
decoding), SGLang's ``TreeDraft`` or a static ``Tree``; every policy below takes a Draft
wherever it takes k, so a tree can fall back to a chain or to plain decoding by batch
size. ``max_k`` bounds the depth of every answer (the acceptance it needs);
``policy_drafts`` lists every answer (a server reserves KV lookahead for the largest).

* ``FixedK``: always k (k = 0 is plain decoding, the baseline);
* ``DisableAbove``: k up to a batch size, plain decoding above it (SGLang's
  ``--speculative-batch-size-threshold`` proposal, sgl-project/sglang PR 13376; vLLM V0's
  ``speculative_disable_by_batch_size``, vllm/spec_decode/spec_decode_worker.py, which
  disables at ``running >= threshold``, i.e. ``DisableAbove(k, threshold - 1)``);
* ``KTable``: vLLM's dynamic speculative decoding table of ``[start_bs, end_bs, K]`` rows
  (vllm docs/features/speculative_decoding/dynamic_speculative_decoding.md and
  vllm/v1/spec_decode/dynamic/utils.py): ranges inclusive, the first starting at 1, a gap
  inheriting the previous row's K, batch sizes past the last row using the last K.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sim.model.drafts import Draft, acceptance_depth, describe_draft

__all__ = [
    "DisableAbove",
    "FixedK",
    "KTable",
    "SpeculationPolicy",
    "k_lookup",
    "policy_drafts",
]


class SpeculationPolicy(Protocol):
    """What to draft per decode batch size."""

    @property
    def max_k(self) -> int: ...

    def k_for_batch(self, batch: int) -> Draft: ...

    def describe(self) -> str: ...


def _short(draft: Draft) -> str:
    return f"k = {draft}" if isinstance(draft, int) else describe_draft(draft)


@dataclass(frozen=True, slots=True)
class FixedK:
    """``k`` (a Draft: k drafts, or a tree) at every batch size."""

    k: Draft

    def __post_init__(self) -> None:
        acceptance_depth(self.k)  # validates

    @property
    def max_k(self) -> int:
        return acceptance_depth(self.k)

    def k_for_batch(self, batch: int) -> Draft:
        return self.k

    def describe(self) -> str:
        return describe_draft(self.k)


@dataclass(frozen=True, slots=True)
class DisableAbove:
    """``k`` (a Draft) while the decode batch has at most ``max_batch`` requests, none above."""

    k: Draft
    max_batch: int

    def __post_init__(self) -> None:
        acceptance_depth(self.k)
        if self.max_batch < 0:
            raise ValueError("max_batch must be >= 0")

    @property
    def max_k(self) -> int:
        return acceptance_depth(self.k)

    def k_for_batch(self, batch: int) -> Draft:
        return self.k if batch <= self.max_batch else 0

    def describe(self) -> str:
        return f"{_short(self.k)} up to batch {self.max_batch}, then 0"


@dataclass(frozen=True, slots=True)
class KTable:
    """vLLM-style ``[start_bs, end_bs, K]`` rows (see the module docstring); K may be any
    Draft (a tree at small batches, a chain or 0 beyond)."""

    rows: tuple[tuple[int, int, Draft], ...]

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("a k table needs at least one [start_bs, end_bs, K] row")
        if self.rows[0][0] != 1:
            raise ValueError(f"the first row must start at batch size 1, got {self.rows[0][0]}")
        prev_end = 0
        for i, (start, end, k) in enumerate(self.rows):
            bad_k = isinstance(k, int) and k < 0
            if start > end or start <= prev_end or bad_k:
                raise ValueError(
                    f"row {i} [{start}, {end}, {k}]: need start <= end, rows in increasing "
                    "non-overlapping order and K >= 0"
                )
            acceptance_depth(k)
            prev_end = end

    @property
    def max_k(self) -> int:
        return max(acceptance_depth(k) for _, _, k in self.rows)

    def k_for_batch(self, batch: int) -> Draft:
        k = self.rows[0][2]
        for start, _, row_k in self.rows:
            if batch < start:
                break
            k = row_k
        return k

    def describe(self) -> str:
        def entry(k: Draft) -> str:
            return str(k) if isinstance(k, int) else describe_draft(k)

        return "k table " + ", ".join(f"{a}-{b}: {entry(k)}" for a, b, k in self.rows)


def k_lookup(policy: SpeculationPolicy, max_batch: int) -> list[Draft]:
    """The draft at every decode batch size 0..max_batch (index = batch size; entry 0
    unused)."""
    return [0] + [policy.k_for_batch(b) for b in range(1, max_batch + 1)]


def policy_drafts(policy: SpeculationPolicy, max_batch: int) -> tuple[Draft, ...]:
    """Every draft the policy answers for batch sizes 1..max_batch, in first-use order."""
    seen: dict[Draft, None] = {}
    for draft in k_lookup(policy, max_batch)[1:]:
        seen.setdefault(draft, None)
    return tuple(seen)
