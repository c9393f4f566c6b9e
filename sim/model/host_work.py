"""Host (CPU) work of a serving iteration that grows with the batch, and whether the engine
hides it behind the GPU.

Every iteration of a serving engine runs Python on the host for each running request:
scheduling, building the batch's metadata, appending the sampled tokens, checking stop
conditions, streaming the output. An engine with an *overlap* (asynchronous) scheduler
prepares iteration n + 1 while the GPU runs iteration n, so that work costs nothing until
it exceeds the GPU's; without one it adds to every iteration. Engines have shipped with the
overlap for plain decoding but not for speculative decoding:

* SGLang: the overlap scheduler is on by default since v0.4 (sgl-project/sglang PR #2067,
  "Enable overlap by default"; the v0.4 release post, lmsys.org/blog/2024-12-04-sglang-v0-4,
  "zero-overhead batch scheduler"), and ``server_args.py`` turns it off for EAGLE and
  EAGLE-3 ("Overlap scheduler is disabled because of using eagle speculative decoding",
  v0.4.x-v0.5.6; overlap for speculative decoding, "spec v2", came as an opt-in in late
  2025, sgl-project/sglang issue #11762);
* TensorRT-LLM: "Disable overlap for speculative decoding" (NVIDIA/TensorRT-LLM PR #3625,
  2025-04);
* vLLM V1: no asynchronous scheduling by default until v0.14 (2026-01), which turned it
  on with EAGLE/MTP too (vllm-project/vllm PR #31998): before it, plain and speculative
  iterations alike pay their host work.

``overlap`` says which iterations hide it: ``baseline`` (plain decoding only: SGLang,
TensorRT-LLM), ``both`` (vLLM >= 0.14) or ``none`` (vLLM before 0.14).

How much per request (``DEFAULT_US_PER_REQUEST``, assumed, ``US_PER_REQUEST_RANGE``):

* SGLang's overlap hides 0.61 ms per plain decode iteration at 16 running requests
  (Llama-3.1-8B, TP4: 3,053.86 -> 3,458.31 tok/s, sgl-project/sglang PR #5608), of which
  about 0.5 ms does not depend on the batch (0.74 ms hidden at one request: LFM2 on an
  RTX 5090, 364.3 -> 498.5 tok/s, sgl-project/sglang PR #38131): about 7 us per request
  for plain decoding, the range's low end;
* the range's high end, 38 us: all of PR #5608's 0.61 ms charged to its 16 requests; the
  same as vLLM's scheduler, input preparation and sampler per request in microsoft/vidur's
  CPU profile (data/profiling/a100/cpu_overheads.csv, Llama-2-7B on an A100 host, medians
  from batch 8 to 64: 14 + 15.5 + 8.6 = 38 us a request);
* a speculative iteration runs that loop and more: SGLang's EAGLE worker builds a batch
  for each of its draft, verify and draft-extend passes, and its verify appends and
  checks every accepted token of every request in Python (python/sglang/srt/speculative/
  eagle_utils.py, ``verify``): about three times plain decoding's 7 us, 20 us.

The central value was settled from this evidence after a screen of 10-80 us on the serving
validation's curves (docs/validation.md discloses it). Only the growth beyond one request
is added: the batch-1 pass times already hold the batch-1 host work.

A speculative iteration's work a request over a plain one's (``spec_factor``, default 1):
the default 20 us above is a speculative iteration's and is charged to both kinds, so a
scenario with the default needs no factor. A host work measured on plain decoding (a load
sweep of plain runs, a host-bound server fitted on its plain rows) is a plain iteration's;
a speculative iteration of SGLang's EAGLE worker then costs ``SGLANG_SPEC_FACTOR`` =
20 / 7 (about 2.86) times it a request: the two values above, the speculative 20 us
(three batches built a cycle and the verify's loop over every accepted token) over the
7 us of a plain decode iteration (sgl-project/sglang PR #5608). Only iterations that
draft and verify pay the factor; a speculating server's plain iterations pay the plain
work. The factor changes nothing at one request.

How much of the batch-1 iteration is host work (``batch1_share``, default 0): an overlapped
iteration lasts as long as the longer of its GPU work and its host work, so its host
work shows once h (b - 1) + share x T1 passes the iteration's GPU time T(b), T1 the batch-1
iteration. At share 0 (the default: the batch-1 iteration is GPU-bound, its host work
hidden) the growth shows only once it alone passes T(b); at share 1 (a host-bound server:
the batch-1 iteration is the host's loop) every request's host work beyond the GPU's own
growth shows. The share is the user's or a load sweep's to set: an engine whose batch-1
steps do not change with the tensor-parallel size although the weights a GPU reads halve
is host-bound (docs/moe-growth.md: SGLang runs of Qwen3-30B-A3B at TP 2 and TP 4, 4.49 and
4.57 ms, growing about 1 ms per running request at both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "DEFAULT_US_PER_REQUEST",
    "OVERLAPS",
    "PLAIN_US_PER_REQUEST",
    "SGLANG_SPEC_FACTOR",
    "US_PER_REQUEST_RANGE",
    "HostWork",
]

#: Host work per running request per speculative iteration (us), and its plausible range.
DEFAULT_US_PER_REQUEST = 20.0
US_PER_REQUEST_RANGE: tuple[float, float] = (7.0, 38.0)
#: Host work per running request per plain decode iteration of SGLang (us; PR #5608).
PLAIN_US_PER_REQUEST = 7.0
#: SGLang's EAGLE worker: a request's host work in a speculative iteration over a plain one's.
SGLANG_SPEC_FACTOR = DEFAULT_US_PER_REQUEST / PLAIN_US_PER_REQUEST

Overlap = Literal["baseline", "both", "none"]
#: Which iterations hide their host work behind the GPU (see the module docstring).
OVERLAPS: tuple[str, ...] = ("baseline", "both", "none")


@dataclass(frozen=True, slots=True)
class HostWork:
    """Host work per running request per iteration (``us_per_request``), which iterations
    overlap it with the GPU (``overlap``, one of ``OVERLAPS``), the share of the batch-1
    iteration that is host work (``batch1_share``, in [0, 1]) and how many times a plain
    iteration's work a request costs in an iteration that drafts and verifies
    (``spec_factor``, default 1; module docstring)."""

    us_per_request: float = 0.0
    overlap: Overlap = "baseline"
    batch1_share: float = 0.0
    spec_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.us_per_request < 0:
            raise ValueError(f"us_per_request must be >= 0, got {self.us_per_request}")
        if self.overlap not in OVERLAPS:
            raise ValueError(f"overlap must be one of {OVERLAPS}, got {self.overlap!r}")
        if not 0.0 <= self.batch1_share <= 1.0:
            raise ValueError(f"batch1_share must be in [0, 1], got {self.batch1_share}")
        if self.spec_factor < 0:
            raise ValueError(f"spec_factor must be >= 0, got {self.spec_factor}")

    def serial(self, speculating: bool) -> bool:
        """True when an iteration of a server that speculates (``speculating``) or not
        adds its host work to the GPU's."""
        if self.overlap == "none":
            return True
        return self.overlap == "baseline" and speculating

    def growth_ms(self, batch: int, drafting: bool = False) -> float:
        """Host work beyond one request's (ms) of an iteration over ``batch`` requests;
        ``drafting``: the iteration drafts and verifies (``spec_factor`` x the work a
        request)."""
        if batch < 1:
            raise ValueError(f"an iteration has at least one request, got {batch}")
        us = self.us_per_request
        if drafting and self.spec_factor != 1.0:
            us = self.spec_factor * us
        return us * (batch - 1) / 1000.0

    def extra_ms(
        self,
        batch: int,
        speculating: bool,
        iteration_ms: ArrayLike,
        batch1_ms: float = 0.0,
        drafting: bool = False,
    ) -> np.ndarray:
        """What the host work adds to iterations of ``iteration_ms`` (any shape, same shape
        out): its growth beyond one request when serial, else only the part of the host's
        iteration, ``batch1_share`` x ``batch1_ms`` (the batch-1 iteration) + that growth,
        the iteration's own time does not cover; 0 at one request either way (an iteration
        is never shorter than the batch-1 one it grows from)."""
        gpu = np.asarray(iteration_ms, dtype=float)
        growth = self.growth_ms(batch, drafting)
        if self.serial(speculating):
            return np.full(gpu.shape, growth)
        return np.maximum(self.batch1_share * batch1_ms + growth - gpu, 0.0)
