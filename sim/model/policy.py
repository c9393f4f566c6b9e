"""Speculation policies: how many drafts at which batch size.

A policy answers ``k_for_batch(batch)``, the batch being the requests that decode in the
iteration; ``max_k`` bounds every answer (a server reserves KV lookahead for it).

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

__all__ = ["DisableAbove", "FixedK", "KTable", "SpeculationPolicy", "k_lookup"]


class SpeculationPolicy(Protocol):
    """Draft length per decode batch size."""

    @property
    def max_k(self) -> int: ...

    def k_for_batch(self, batch: int) -> int: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class FixedK:
    """k drafts at every batch size."""

    k: int

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k}")

    @property
    def max_k(self) -> int:
        return self.k

    def k_for_batch(self, batch: int) -> int:
        return self.k

    def describe(self) -> str:
        return "no speculation (k = 0)" if self.k == 0 else f"k = {self.k}"


@dataclass(frozen=True)
class DisableAbove:
    """k drafts while the decode batch has at most ``max_batch`` requests, none above."""

    k: int
    max_batch: int

    def __post_init__(self) -> None:
        if self.k < 0 or self.max_batch < 0:
            raise ValueError("k and max_batch must be >= 0")

    @property
    def max_k(self) -> int:
        return self.k

    def k_for_batch(self, batch: int) -> int:
        return self.k if batch <= self.max_batch else 0

    def describe(self) -> str:
        return f"k = {self.k} up to batch {self.max_batch}, then 0"


@dataclass(frozen=True)
class KTable:
    """vLLM-style ``[start_bs, end_bs, K]`` rows (see the module docstring)."""

    rows: tuple[tuple[int, int, int], ...]

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("a k table needs at least one [start_bs, end_bs, K] row")
        if self.rows[0][0] != 1:
            raise ValueError(f"the first row must start at batch size 1, got {self.rows[0][0]}")
        prev_end = 0
        for i, (start, end, k) in enumerate(self.rows):
            if start > end or start <= prev_end or k < 0:
                raise ValueError(
                    f"row {i} [{start}, {end}, {k}]: need start <= end, rows in increasing "
                    "non-overlapping order and K >= 0"
                )
            prev_end = end

    @property
    def max_k(self) -> int:
        return max(k for _, _, k in self.rows)

    def k_for_batch(self, batch: int) -> int:
        k = self.rows[0][2]
        for start, _, row_k in self.rows:
            if batch < start:
                break
            k = row_k
        return k

    def describe(self) -> str:
        return "k table " + ", ".join(f"{a}-{b}: {k}" for a, b, k in self.rows)


def k_lookup(policy: SpeculationPolicy, max_batch: int) -> list[int]:
    """k at every decode batch size 0..max_batch (index = batch size; entry 0 unused)."""
    return [0] + [policy.k_for_batch(b) for b in range(1, max_batch + 1)]
