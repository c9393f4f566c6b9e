"""The GPU work over the vocabulary for every row of logits a decode iteration produces.

A target pass computes logits for every token it must sample or check: one row per request
in plain decoding, one per verified token in a speculative verify (SGLang's
``LogitsProcessor`` takes every hidden state for ``forward_mode.is_decode()`` and
``is_target_verify()``, python/sglang/srt/layers/logits_processor.py; vLLM's rejection
sampler takes the target logits of every draft position and the bonus one). A chain of k
therefore processes k + 1 rows a request, a tree its ``num_draft_tokens``, where plain
decoding processes one. Each row then goes through the same steps:

* the tensor-parallel ranks each hold a vocabulary shard of the LM head's output and
  all-gather them (``tensor_model_parallel_all_gather`` in SGLang's and vLLM's logits
  processors): (n - 1) / n x vocab x 2 bytes (bf16) a row over the interconnect, at its bus
  bandwidth (nccl-tests: all-gather bus bandwidth = algorithm bandwidth x (n - 1) / n);
* every rank casts the gathered row to fp32 (``logits[:, : vocab_size].float()``) and
  picks or samples from it on its own, at the GPU's memory bandwidth:
  ``bytes_per_logit`` bytes moved per vocabulary entry.

How many bytes a logit (``DEFAULT_BYTES_PER_LOGIT``, ``BYTES_PER_LOGIT_RANGE``):

* default 12, greedy decoding as SGLang and vLLM run it: the bf16 row written by the gather
  and read by the cast (2 + 2), the fp32 copy written (4) and read by the arg-max (4)
  (SGLang's verify: ``torch.argmax(logits_output.next_token_logits)``; vLLM's greedy sampler
  and rejection sampler: ``argmax`` of the fp32 logits);
* low end 4: an engine that reads the bf16 row once for its arg-max (no fp32 copy);
* high end 40, sampling at a temperature: the greedy 12 plus a softmax writing and reading
  fp32 probabilities (8), a top-k and a top-p renormalisation each reading and writing them
  at least once (8 + 8) and the sampling kernel reading them (4). SGLang's EAGLE verify ran
  both renormalisations over every one of its batch x draft-token rows whatever the request's
  top-k and top-p until sgl-project/sglang PR #9404 (2025-08, top-p: "the top_p_renorm
  operation is time-consuming in Eagle3 verify stage", issue #6949) and PR #31294
  (2026-07, top-k: "each EAGLE renormalization therefore processes draft_token_num times as
  many vocabulary rows"), while its plain sampler skipped them.

What a row costs does not depend on the batch, so only the rows beyond the batch-1 cycle's
are added (``growth_ms``): batch 1 stays the batch-1 cycle exactly, its own rows being in its
measured or derived passes. The drafter's rows (its own head over B x topk rows each step)
are not priced: a scenario does not say the drafter's vocabulary (an EAGLE-3 drafter keeps
a 32k one, an EAGLE-1 drafter reads the target's head).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.model.drafts import Draft, verify_tokens

__all__ = [
    "BYTES_PER_LOGIT_RANGE",
    "DEFAULT_BYTES_PER_LOGIT",
    "GATHER_BYTES_PER_LOGIT",
    "LogitRows",
    "logit_row_ms",
]

#: Bytes a rank moves per vocabulary entry of a row after the gather (greedy decoding), and
#: the range from an arg-max over the bf16 row to sampling with top-k and top-p.
DEFAULT_BYTES_PER_LOGIT = 12.0
BYTES_PER_LOGIT_RANGE: tuple[float, float] = (4.0, 40.0)
#: Bytes a logit of the LM head's bf16 output is gathered in.
GATHER_BYTES_PER_LOGIT = 2.0


def logit_row_ms(
    vocab: float,
    bytes_per_logit: float,
    bandwidth_gbps: float,
    gpus: int = 1,
    bus_bandwidth_gbps: float | None = None,
) -> float:
    """Milliseconds one row of ``vocab`` logits costs a rank: ``bytes_per_logit`` x vocab at
    the GPU's ``bandwidth_gbps``, plus, over ``gpus`` > 1 tensor-parallel ranks, the
    all-gather's (gpus - 1) / gpus x vocab x ``GATHER_BYTES_PER_LOGIT`` at the interconnect's
    ``bus_bandwidth_gbps``."""
    if vocab < 0 or bytes_per_logit < 0:
        raise ValueError("vocab and bytes_per_logit must be >= 0")
    if bandwidth_gbps <= 0 or gpus < 1:
        raise ValueError("need a positive bandwidth and at least one GPU")
    local = vocab * bytes_per_logit / (bandwidth_gbps * 1e6)
    if gpus == 1:
        return local
    if bus_bandwidth_gbps is None or bus_bandwidth_gbps <= 0:
        raise ValueError("a tensor-parallel gather needs a positive bus bandwidth")
    gather = (gpus - 1) / gpus * vocab * GATHER_BYTES_PER_LOGIT / (bus_bandwidth_gbps * 1e6)
    return local + gather


@dataclass(frozen=True, slots=True)
class LogitRows:
    """``row_ms``: what one row of target logits costs (``logit_row_ms``; 0: not priced),
    a row of ``vocab`` logits at ``bytes_per_logit`` bytes each (0: not priced);
    ``given``: those bytes are the scenario's own (``serving.bytes_per_logit``), not
    ``DEFAULT_BYTES_PER_LOGIT``."""

    row_ms: float = 0.0
    vocab: float = 0.0
    bytes_per_logit: float = 0.0
    given: bool = False

    def __post_init__(self) -> None:
        if self.row_ms < 0:
            raise ValueError(f"row_ms must be >= 0, got {self.row_ms}")

    def growth_ms(self, batch: int, draft: Draft) -> float:
        """The rows of ``batch`` requests beyond one request's, at ``row_ms``: a request
        brings the tokens its target pass covers (``verify_tokens``: 1 in plain decoding,
        k + 1 for a chain, a tree's draft tokens); 0.0 at one request."""
        if batch < 1:
            raise ValueError(f"an iteration has at least one request, got {batch}")
        if batch == 1 or not self.row_ms:
            return 0.0
        return (batch - 1) * verify_tokens(draft) * self.row_ms
