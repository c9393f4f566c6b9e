"""What the two drafters of the EAGLE-3 paper's SGLang Table 3 rows cost apart, and what the
published rows ask of them (evidence for docs/studies/table3-drafters.md; not in the report).

The two rows (EAGLE-1 and EAGLE-3 drafters, Llama-3.1-8B, one H100, SGLang, a chain of 3)
share the target, the server and the chain, so a cost that does not depend on the drafter
moves both. ``implied_gaps`` turns each measured speed-up S into the cycle it implies,
AL x T_decode(B) / S (the renewal-reward law the serving cases calibrate with, at the mean
context, the model's plain step and accept lengths), and subtracts the model's own EAGLE-1
minus EAGLE-3 cycle: what is left is the drafter-dependent cost a cycle the rows ask for
beyond the model, treating whatever the EAGLE-3 row misses as shared.

``drafter_terms_ms`` prices, from the drafters' configs and the GPU's datasheet, what
differs between two drafters a cycle at B requests as SGLang v0.4.4.post2 runs them (read in
the released wheel): ``passes`` head passes a cycle (the draft extend over the accepted
tokens and ``num_steps - 1`` draft steps, eagle_worker.py ``draft_forward``: "We don't need
to run the last forward"), each over B rows (the draft extend's LogitsProcessor keeps each
request's last token in extend mode, layers/logits_processor.py), every row through the
head, the fp32 cast, ``torch.softmax`` and ``fast_topk`` (``torch.max`` at topk 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sim.hardware.batched import GEMM_FLOP_EFFICIENCY
from sim.hardware.gpus import GpuPreset
from sim.scenario.schema import Scenario
from sim.validation.per_token_candidates import DRAFT_ROW_BYTES_PER_LOGIT
from sim.validation.speedup_fit import renewal_terms

__all__ = [
    "EAGLE1_LLAMA31",
    "EAGLE3_LLAMA31",
    "DrafterShape",
    "DrafterTerms",
    "ImpliedGap",
    "drafter_terms_ms",
    "implied_gaps",
]

#: Bytes of one bf16 weight.
WEIGHT_BYTES = 2


@dataclass(frozen=True, slots=True)
class DrafterShape:
    """What one drafter pass reads: its LM head (``vocab`` x hidden parameters, the rows it
    scores) and its fc over the target's hidden states (``fc_params``)."""

    name: str
    vocab: int
    hidden: int
    fc_params: float

    @property
    def head_params(self) -> float:
        """vocab x hidden."""
        return float(self.vocab * self.hidden)


#: yuhuili/EAGLE-LLaMA3.1-Instruct-8B: fc 2 x 4096 -> 4096 over [embedding, the target's last
#: hidden state], no head of its own (SGLang's EAGLE worker gives it the target's,
#: ``set_embed_and_head``): the 128,256-token head of meta-llama/Llama-3.1-8B-Instruct.
EAGLE1_LLAMA31 = DrafterShape("EAGLE-1", 128_256, 4096, 2 * 4096 * 4096)
#: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: fc 3 x 4096 -> 4096 over three target layers'
#: hidden states (llama_eagle3.py), its own head over ``draft_vocab_size`` 32,000 tokens
#: mapped back to the target's through ``d2t``.
EAGLE3_LLAMA31 = DrafterShape("EAGLE-3", 32_000, 4096, 3 * 4096 * 4096)


@dataclass(frozen=True, slots=True)
class DrafterTerms:
    """ms a cycle that drafter ``a`` costs beyond drafter ``b`` at ``batch`` requests:
    ``head_bytes_ms`` the extra head weights read (the same at any batch below the GEMM's
    ridge), ``head_flops_ms`` their FLOPs at ``GEMM_FLOP_EFFICIENCY`` of peak (hidden under
    the bytes while memory-bound), ``rows_ms`` the cast, softmax and top-k over the extra
    vocabulary (``DRAFT_ROW_BYTES_PER_LOGIT`` a logit at peak bandwidth), ``fc_ms`` the fc
    weights' difference (negative when ``a``'s is smaller); ``ridge_rows`` the rows a pass
    over bf16 weights needs to be compute-bound (1 FLOP a byte a row)."""

    batch: int
    head_bytes_ms: float
    head_flops_ms: float
    rows_ms: float
    fc_ms: float
    ridge_rows: float

    @property
    def growth_ms(self) -> float:
        """What grows with the batch, at most: the head's FLOPs on top of its bytes plus
        the rows (an upper bound: below the ridge the FLOPs hide under the bytes)."""
        return self.head_flops_ms + self.rows_ms


def drafter_terms_ms(
    a: DrafterShape, b: DrafterShape, batch: int, gpu: GpuPreset, passes: int = 3
) -> DrafterTerms:
    """The terms of ``DrafterTerms`` for ``passes`` head passes a cycle over ``batch`` rows
    each (a chain: topk 1) on ``gpu``."""
    if batch < 1 or passes < 1:
        raise ValueError("need batch >= 1 and passes >= 1")
    bandwidth = gpu.memory_bandwidth_gbps * 1e9  # bytes a second
    flops = gpu.bf16_tflops * 1e12 * GEMM_FLOP_EFFICIENCY
    head = a.head_params - b.head_params
    return DrafterTerms(
        batch,
        passes * head * WEIGHT_BYTES / bandwidth * 1e3,
        passes * 2.0 * head * batch / flops * 1e3,
        passes * batch * (a.vocab - b.vocab) * DRAFT_ROW_BYTES_PER_LOGIT / bandwidth * 1e3,
        (a.fc_params - b.fc_params) * WEIGHT_BYTES / bandwidth * 1e3,
        flops / bandwidth,
    )


@dataclass(frozen=True, slots=True)
class ImpliedGap:
    """At ``batch`` users: the measured speed-ups' ratio (EAGLE-1 over EAGLE-3) and the
    model's, and ``excess_ms``, the EAGLE-1 minus EAGLE-3 cycle the measured rows imply less
    the model's (ms a cycle; 1000 x excess_ms / batch us a request)."""

    batch: int
    measured_ratio: float
    model_ratio: float
    excess_ms: float

    @property
    def accept_ratio(self) -> float:
        """The EAGLE-1 accept length, over the one calibrated, that the measured ratio asks
        for at the model's costs: measured_ratio / model_ratio (each speed-up is AL x plain
        step / cycle, so at fixed cycles the ratio moves with AL1 / AL3; EAGLE-3's accept
        length held, as ``excess_ms`` counts its miss as shared). The acceptance reading of
        the same gap: docs/acceptance-under-load.md."""
        return self.measured_ratio / self.model_ratio


def implied_gaps(
    eagle3: Scenario,
    eagle1: Scenario,
    measured: Mapping[str, Mapping[int, float]],
    context_tokens: float,
) -> tuple[ImpliedGap, ...]:
    """``ImpliedGap`` at every batch of ``measured`` ("EAGLE-3" and "EAGLE" speed-ups by
    batch) for the two calibrated scenarios, at ``context_tokens`` a request."""
    k = eagle3.num_steps
    al3, cost3 = renewal_terms(eagle3)
    al1, cost1 = renewal_terms(eagle1)
    gaps = []
    for batch in sorted(measured["EAGLE"]):
        ctx = np.array([batch * context_tokens])
        plain = float(cost3.decode_ms(batch, 0, ctx)[0])
        t3 = float(cost3.decode_ms(batch, k, ctx)[0])
        t1 = float(cost1.decode_ms(batch, k, ctx)[0])
        s3, s1 = measured["EAGLE-3"][batch], measured["EAGLE"][batch]
        implied = al1 * plain / s1 - al3 * plain / s3
        gaps.append(ImpliedGap(batch, s1 / s3, (al1 / al3) * (t3 / t1), implied - (t1 - t3)))
    return tuple(gaps)
