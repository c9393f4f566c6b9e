"""Injected policies: how many drafts at which batch size, and how the scheduler batches.

Speculation policies (``k_for_batch(batch)``, the batch being the requests that decode in
the iteration; ``max_k`` bounds every answer and sets the KV lookahead):

* ``FixedK``: always k (k = 0 is plain decoding, the baseline);
* ``DisableAbove``: k up to a batch size, plain decoding above it (SGLang's
  ``--speculative-batch-size-threshold`` proposal, sgl-project/sglang PR 13376; vLLM V0's
  ``speculative_disable_by_batch_size``, vllm/spec_decode/spec_decode_worker.py, which
  disables at ``running >= threshold``, i.e. ``DisableAbove(k, threshold - 1)``);
* ``KTable``: vLLM's dynamic speculative decoding table of ``[start_bs, end_bs, K]`` rows
  (vllm docs/features/speculative_decoding/dynamic_speculative_decoding.md and
  vllm/v1/spec_decode/dynamic/utils.py): ranges inclusive, the first starting at 1, a gap
  inheriting the previous row's K, batch sizes past the last row using the last K.

``SchedulerConfig`` holds the continuous-batching knobs (vLLM ``max_num_seqs`` /
``max_num_batched_tokens``, SGLang ``max_running_requests`` / ``chunked_prefill_size``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = [
    "DEFAULT_TOKEN_BUDGET",
    "DisableAbove",
    "FixedK",
    "KTable",
    "SchedulerConfig",
    "SpeculationPolicy",
    "k_lookup",
]

#: Tokens per iteration: vLLM's API-server default ``max_num_batched_tokens`` on >= 70 GiB
#: GPUs (vllm/engine/arg_utils.py ``get_batch_defaults``) and SGLang's default
#: ``chunked_prefill_size`` for GPUs under 160 GB (python/sglang/srt/server_args.py).
DEFAULT_TOKEN_BUDGET = 8192


class SpeculationPolicy(Protocol):
    """Draft length per decode batch size."""

    @property
    def max_k(self) -> int: ...

    def k_for_batch(self, batch: int) -> int: ...


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


def k_lookup(policy: SpeculationPolicy, max_batch: int) -> list[int]:
    """k at every decode batch size 0..max_batch (index = batch size; entry 0 unused)."""
    return [0] + [policy.k_for_batch(b) for b in range(1, max_batch + 1)]


@dataclass(frozen=True)
class SchedulerConfig:
    """Continuous batching, iteration by iteration.

    ``max_running_requests``: requests admitted at once (decoding or prefilling);
    ``batching``: ``prefill_first`` (SGLang: an iteration with prompts to prefill runs only
    prefill, up to ``token_budget`` prompt tokens, longer prompts in chunks) or ``chunked``
    (vLLM: each iteration schedules the decoding requests first, k + 1 tokens each, then
    prompt chunks up to ``token_budget`` tokens in all, in one fused pass);
    ``kv_capacity_tokens``: KV cache size in tokens (None: unlimited); each running request
    holds its context plus ``max_k + 1`` lookahead slots for the verify pass's tokens;
    ``prefill``: ``model`` (a request with a prompt is prefilled first, in passes that
    cost time, and the prefill emits its first token; a request without one decodes from
    admission) or ``skip`` (every request decodes from admission, no prefill pass and no
    prefill token: an idealisation under which concurrency 1 is exactly the batch-1
    engines' model).
    """

    max_running_requests: int
    batching: Literal["prefill_first", "chunked"] = "prefill_first"
    token_budget: int = DEFAULT_TOKEN_BUDGET
    kv_capacity_tokens: int | None = None
    prefill: Literal["model", "skip"] = "model"

    def __post_init__(self) -> None:
        if self.max_running_requests < 1:
            raise ValueError(f"max_running_requests must be >= 1, got {self.max_running_requests}")
        if self.token_budget < 1:
            raise ValueError(f"token_budget must be >= 1, got {self.token_budget}")
        if self.kv_capacity_tokens is not None and self.kv_capacity_tokens < 1:
            raise ValueError(f"kv_capacity_tokens must be >= 1, got {self.kv_capacity_tokens}")
        if self.batching not in ("prefill_first", "chunked"):
            raise ValueError(f"unknown batching {self.batching!r}")
        if self.prefill not in ("model", "skip"):
            raise ValueError(f"unknown prefill {self.prefill!r}")

    def check_policy(self, policy: SpeculationPolicy) -> None:
        """Chunked batching must fit every decode request's k + 1 tokens in the budget."""
        if self.batching != "chunked":
            return
        worst = max(
            (b * (k + 1) for b, k in enumerate(k_lookup(policy, self.max_running_requests))),
            default=0,
        )
        if worst > self.token_budget:
            raise ValueError(
                f"token_budget {self.token_budget} is below the {worst} decode tokens of a full "
                "batch (max_running_requests x (k + 1)); raise it or lower max_running_requests"
            )
