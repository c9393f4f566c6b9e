"""The scheduler's configuration: continuous batching knobs of SGLang and vLLM."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sim.model.drafts import Draft, verify_tokens
from sim.model.policy import SpeculationPolicy, k_lookup
from sim.model.recurrent_state import PooledState

__all__ = ["DEFAULT_TOKEN_BUDGET", "SchedulerConfig", "admission_cap"]

#: Tokens per iteration: vLLM's API-server default ``max_num_batched_tokens`` on >= 70 GiB
#: GPUs (vllm/engine/arg_utils.py ``get_batch_defaults``) and SGLang's default
#: ``chunked_prefill_size`` for GPUs under 160 GB (python/sglang/srt/server_args.py).
DEFAULT_TOKEN_BUDGET = 8192


def admission_cap(policy: SpeculationPolicy, plain: int, speculative: int | None) -> int:
    """The admission cap ``policy`` runs with: ``speculative`` for a policy that drafts
    (when set: the speculating server's own, ``serving.max_running_requests_speculative``),
    else ``plain``."""
    return speculative if policy.max_k > 0 and speculative is not None else plain


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Continuous batching, iteration by iteration.

    ``max_running_requests``: requests admitted at once (decoding or prefilling);
    ``batching``: ``prefill_first`` (SGLang: an iteration with prompts to prefill runs only
    prefill, up to ``token_budget`` prompt tokens, longer prompts in chunks) or ``chunked``
    (vLLM: each iteration schedules the decoding requests first, k + 1 tokens each (a
    tree's nodes), then
    prompt chunks up to ``token_budget`` tokens in all, in one fused pass);
    ``kv_capacity_tokens``: KV cache size in tokens (None: unlimited); each running request
    holds its context plus the policy's lookahead slots (``max_k + 1`` for a chain: the
    verify pass's tokens; sim/model/drafts.py ``lookahead_tokens``);
    ``plain_kv_capacity_tokens``: the KV cache of a policy that never drafts (a server
    without the drafter's weights and KV; None: ``kv_capacity_tokens``);
    ``max_running_requests_speculative``: the admission cap of a policy that drafts, when
    the speculating server's differs (SGLang resets its cap to 48 with any speculative
    algorithm, server_args.py; None: ``max_running_requests``);
    ``pooled_state``: a hybrid target's recurrent state as the KV pool holds it (None: no
    state, or not in the pool): each running request also holds its state's slots
    (``state_tokens``);
    ``kv_block_tokens``: the KV block a running request's context and lookahead slots are
    held in, whole blocks (vLLM: 16, or a hybrid's block layout's; 1: per token, SGLang;
    sim/model/kv_blocks.py); ``plain_kv_block_tokens``: the plain server's (None:
    ``kv_block_tokens``);
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
    plain_kv_capacity_tokens: int | None = None
    max_running_requests_speculative: int | None = None
    pooled_state: PooledState | None = None
    kv_block_tokens: int = 1
    plain_kv_block_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "max_running_requests",
            "max_running_requests_speculative",
            "kv_block_tokens",
            "plain_kv_block_tokens",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.token_budget < 1:
            raise ValueError(f"token_budget must be >= 1, got {self.token_budget}")
        for name in ("kv_capacity_tokens", "plain_kv_capacity_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.plain_kv_capacity_tokens is not None and self.kv_capacity_tokens is None:
            raise ValueError("plain_kv_capacity_tokens needs kv_capacity_tokens")
        if self.batching not in ("prefill_first", "chunked"):
            raise ValueError(f"unknown batching {self.batching!r}")
        if self.prefill not in ("model", "skip"):
            raise ValueError(f"unknown prefill {self.prefill!r}")

    def kv_capacity(self, policy: SpeculationPolicy) -> int | None:
        """The KV cache ``policy`` runs with: ``plain_kv_capacity_tokens`` for a policy
        that never drafts (when set), else ``kv_capacity_tokens``."""
        if policy.max_k == 0 and self.plain_kv_capacity_tokens is not None:
            return self.plain_kv_capacity_tokens
        return self.kv_capacity_tokens

    def block_tokens(self, policy: SpeculationPolicy) -> int:
        """The KV block ``policy``'s requests are held in: ``plain_kv_block_tokens`` for a
        policy that never drafts (when set), else ``kv_block_tokens``; 1 (per token)
        without a KV capacity."""
        if self.kv_capacity(policy) is None:
            return 1
        if policy.max_k == 0 and self.plain_kv_block_tokens is not None:
            return self.plain_kv_block_tokens
        return self.kv_block_tokens

    def state_tokens(self, policy: SpeculationPolicy, drafts: Sequence[Draft]) -> int:
        """KV tokens a running request's recurrent state takes under ``policy`` (drafting
        ``drafts``): its slots, one per token the widest of its passes verifies (1 in plain
        decoding, k + 1 for a chain of k: vLLM's 1 + ``num_speculative_tokens``), in the
        pool of its server (``PooledState.tokens``); 0 without a pooled state or a KV
        capacity."""
        state = self.pooled_state
        if state is None or self.kv_capacity(policy) is None:
            return 0
        slots = max(policy.max_k + 1, *(verify_tokens(d) for d in drafts))
        return state.tokens(slots, policy.max_k > 0)

    def max_running(self, policy: SpeculationPolicy) -> int:
        """The admission cap ``policy`` runs with (``admission_cap``)."""
        return admission_cap(
            policy, self.max_running_requests, self.max_running_requests_speculative
        )

    @property
    def largest_running(self) -> int:
        """The most requests any policy admits at once (the batch sizes a plan covers)."""
        return max(self.max_running_requests, self.max_running_requests_speculative or 0)

    def check_policy(self, policy: SpeculationPolicy) -> None:
        """``check_drafts`` of the policy's draft at every batch size."""
        self.check_drafts(k_lookup(policy, self.max_running(policy)))

    def check_drafts(self, by_batch: Sequence[Draft]) -> None:
        """Chunked batching must fit every decode request's k + 1 tokens (a tree's nodes)
        in the budget; ``by_batch``: the draft at each batch size (index = batch size)."""
        if self.batching != "chunked":
            return
        worst = max((b * verify_tokens(k) for b, k in enumerate(by_batch)), default=0)
        if worst > self.token_budget:
            raise ValueError(
                f"token_budget {self.token_budget} is below the {worst} decode tokens of a full "
                "batch (max_running_requests x (k + 1)); raise it or lower max_running_requests"
            )
