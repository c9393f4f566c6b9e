"""Batched pass physics: one forward pass over a batch's tokens and contexts.

A pass processes ``tokens`` T (summed over the batch's requests: 1 per decode, k + 1 per
verify, a prompt chunk per prefill), reads the KV cache of ``kv_tokens`` C context tokens
(summed over requests: context + new tokens) and computes attention over ``pairs`` P
query-key pairs (summed over requests: new tokens x context). Per tensor-parallel rank:

    memory_ms = (weight bytes read over T tokens / gpus + kv_bytes_per_token x C) / bandwidth
    flop_ms   = 2 x active params x T / gpus / (GEMM_FLOP_EFFICIENCY x peak)
                + attention_flops_per_pair x P / peak
    work_ms   = memory_ms + flop_ms
    compute_ms = curve(work_ms)

Memory and compute time add (kernels do not overlap them perfectly): the form fitted
step-time models take, e.g. SpecDecode-Bench/simulator predictor.py for Llama-3.1-8B on an
H100, ``a kv_tokens + b batched_tokens + c`` with a per-KV-token coefficient (3.93e-8 s)
equal to 131,072 bytes / 3.35 TB/s and a per-token one (21 us) close to 2 x 8B FLOPs at
H100 peak. The pass is memory-bound at small batches and compute-bound beyond the roofline
knee, where flop_ms passes memory_ms (for an 8B model on an H100, a few hundred tokens).
Weights are read once per pass (not once per request); routed experts are read as the
expected union over the pass's T tokens, E (1 - (1 - e/E)^T) per MoE layer
(sim/hardware/experts.py, through ``Weights.bytes_read``); KV reads grow with context.
The pass time is the critical path of its
kernel schedule (sim/hardware/launch.py): all-reduce messages of T x hidden x bytes
(sim/hardware/allreduce.py, so communication grows with the batch's tokens), plus launch
costs when the pass is not graphed.

Calibration turns the work into real compute time: ``compute_ms = curve(work_ms)``, a
piecewise-linear curve through the measured passes. At each measured point the compute
time is the one that makes the critical path equal the measurement
(``launch.calibrate_compute_ms``); between points the curve is linear in the work
and beyond the last point it keeps the last segment's slope. With one measured point (the
batch-1 pass) the slope is ``DEFAULT_SLOPE`` = 1: the time the measurement spends above the
work is a fixed overhead and growth costs the extra bytes at peak bandwidth and the extra
weight FLOPs at the GEMMs' efficiency (``GEMM_FLOP_EFFICIENCY``, 0.75 of peak, from public
linear-layer profiles). Public measurements put the real slope on both sides of 1, so 1
stays, as the middle of the evidence rather than a bound (``DEFAULT_SLOPE``). A second
point at another batch size fixes the slope (1 / the achieved fraction of peak). A pass is
exact at every measured point. ``kv_bytes_per_token`` and ``attention_flops_per_pair`` are per
rank (MLA's latent KV is replicated on every tensor-parallel rank; GQA heads are split).

Routed experts under a fused-MoE kernel (``PassPhysics.moe_kernel``, sim/hardware/
experts.py): their reads enter the work as the kernel costs them, per distinct expert a
fixed ``expert_us`` plus its bytes at ``hbm_efficiency`` x peak, instead of bytes at peak,
and the FLOPs of their token-expert pairs at ``pair_flop_efficiency`` x peak (public
fused-MoE curves past the union's saturation: 0.22-0.80 of peak), instead of at peak;
and the union counts each sequence's consecutive tokens as overlapping
(``expert_overlap``, ``sequence_union_tokens``) when the caller says how many sequences
the tokens belong to. Beyond the last measured point a MoE pass's curve grows at most at
``max_tail_slope`` (1: the kernel's own per-expert cost): a steeper measured segment at
small batches holds costs the kernel benchmarks do not show recurring, and extending it
linearly over-prices large batches. A pass measured at batch 1 only can follow the curve
of a pass on the same weights (``calibrated_pass(follow=...)``): the same marginal cost
per unit of work, shifted through its own point.

CUDA-graph capture. An engine replays a graph only for the batch shapes it captured at
start-up; a pass beyond the largest runs eagerly, so its critical path carries the
per-kernel CPU launch work of an ungraphed pass (sim/hardware/launch.py) and eager
all-reduces, at the same compute. ``PassPhysics.graph_max_tokens`` (vLLM V1 captures by
token count: ``max_cudagraph_capture_size`` = min(max_num_seqs x (1 + k) x 2, 512,
max_num_batched_tokens), and ``cudagraph_dispatcher.py`` runs a batch of more tokens with
``CUDAGraphMode.NONE``; vllm/config/vllm.py ``_set_cudagraph_sizes``) and
``graph_max_rows`` (SGLang captures by batch size: ``cuda_graph_max_bs``, 160 on GPUs of
25 GB or more, 8 below at TP < 4, python/sglang/srt/server_args.py; a larger batch fails
``CudaGraphRunner.can_run`` and runs eagerly) say where; the defaults per engine and
version are in sim/calibration/engine_defaults.py. The step is in the pass's shape only:
work and compute are those of the same tokens, so a pass within the limits, batch 1's
included, is unchanged. Where the GPU work exceeds the launch work (a large model, many
tokens) the step costs about one kernel's launch; it matters for launch-bound passes
(small models, the drafter's one-layer passes over many rows).

Padding to captured sizes. SGLang captures a list of batch sizes and, with padding on,
replays a batch on the graph of the next captured size up: the verify and draft-step
passes run over that many rows, the padded rows' tokens through every GEMM (their
sequence lengths set to 1, so they add no KV reads). python/sglang/srt/model_executor/
cuda_graph_runner.py ``replay_prepare`` (``bisect_left(capture_bs, raw_bs)``) and
python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py ``replay``, v0.4.4.post2
and later. ``PassPhysics.graph_rows`` is that list (None: every batch size captured, no
padding); ``padded_shape`` gives the tokens and rows a pass really runs, and the pass's
weight, FLOP and launch terms are those of the padded shape. Batch 1 is captured in every
list, so the batch-1 pass is unchanged.

KV re-reads. A backend that reads each sequence's KV once for all its query rows (a
prefill-style or packed decode kernel) reads ``kv_tokens`` C; one that runs every query row
as its own decode row reads sum_j (c + j) over a sequence's rows, the pass's ``pairs`` P.
``PassPhysics.kv_rereads`` r prices the share of those re-reads that reach memory: the KV
term is kv_bytes_per_token x ((1 - r) C + r P) (0: once; 1: once a query row, none a cache
hit; a backend that tiles q rows in blocks of b re-reads (ceil(m / b) - 1) of the m - 1 a
row would, docs/studies/verify-kv-rereads.md). A one-token pass has P = C, so only a verify or an
extend moves.
Where its parts live: the physics and the shape a graphed pass runs
(sim/hardware/pass_physics.py), the compute curve (sim/hardware/compute_curve.py), the
token-count terms shared between passes (sim/hardware/pass_terms.py), the calibration to
measured points (sim/hardware/calibrated_pass.py); ``BatchedPass`` here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from sim.hardware.compute_curve import ComputeCurve
from sim.hardware.envelope import Envelope, envelope_of
from sim.hardware.experts import (
    log_miss,
    sequence_union_tokens,
    skewed_distinct_experts,
    tile_extra_rows,
)
from sim.hardware.launch import KernelSchedule
from sim.hardware.pass_physics import PassPhysics, padded_shape, replays_graph
from sim.hardware.pass_terms import SHARED_ENTRIES, PassTerms
from sim.hardware.passes import PassShape, pass_allreduce, pass_kernels

__all__ = ["GEMM_FLOP_EFFICIENCY", "SLOPE_RANGE", "BatchedPass"]

#: What public measurements say of the slope beyond the measured points (growth ms per ms of
#: work at peak; ``DEFAULT_SLOPE``, sim/hardware/compute_curve.py, when one point is all
#: there is), 0.1-1.35:
#:
#: * below 1 for dense GEMMs up to a few hundred tokens: microsoft/vidur's profiles of the
#:   linear layers (attention projections and MLP, data/profiling/compute/{h100,a100,a40}/,
#:   Llama-2-7B/70B, Llama-3-8B, CodeLlama-34B) grow from 1 token to 128 by 0.1-0.9 of the
#:   extra FLOPs at peak at TP 1-2 (H100 TP1 Llama-2-70B: 18 us against 220 us at peak),
#:   since the weight read covers the FLOPs until the roofline's knee;
#: * at or above 1 beyond the knee: the same profiles at 1,024-4,096 tokens take 1.0-1.35x
#:   the FLOPs at peak (a smooth roofline fitted to all 40 curves: 0.75 of peak FLOPs);
#: * about 1.3 for a whole engine step averaged over batches 1-64: SpecDecode-Bench/
#:   simulator predictor.py (Llama-3.1-8B, H100, vLLM, fitted on batch 1-64 step times)
#:   charges 21.0 us per batched token against 16.2 us of FLOPs at peak, its per-KV-token
#:   term at peak bandwidth; that step may hold host work too (vLLM before 0.14 did not
#:   overlap it), which sim/model/host_work.py prices apart.
#:
#: The plausible range that evidence spans (a load sweep that cannot identify the slope
#: carries it as this range: sim/calibration/load_fit.py).
SLOPE_RANGE: tuple[float, float] = (0.1, 1.35)
#: The fraction of the GPU's dense BF16 peak a pass's weight GEMMs reach once FLOPs bound
#: them (a prompt chunk, a verify over many tokens): the smooth roofline fitted to vidur's
#: 40 linear-layer profiles above (1,024-4,096 tokens at 1.0-1.35x the FLOPs at peak) puts
#: them at 0.75 of peak. Work counts their FLOPs at this efficiency (memory at peak
#: bandwidth, attention FLOPs at peak), so the slope above applies to both alike.
GEMM_FLOP_EFFICIENCY = 0.75
#:
#: Tried as the default, 1 / 0.77 moved the serving validation's SGLang curves toward the
#: measurements and its vLLM RTX 3090 curves away (README, "How far to trust it"), so it
#: is not used: the slope scales the extra bytes too, which those profiles do not measure.
#: The FLOPs alone take the profiles' efficiency instead (``GEMM_FLOP_EFFICIENCY``).


class BatchedPass:
    """A pass kind with its calibration curve: ``pass_ms(tokens, kv_tokens, pairs)``.

    Everything that depends only on the token count (weight bytes read, which involves the
    expert union; FLOPs; the all-reduce; the critical-path envelope) is computed once per
    token count and physics, in ``terms`` (a ``PassTerms`` its builder shares with the
    other passes it builds; None: a table of its own); the per-call work is a few array
    operations over the KV-dependent terms, so a serving engine can evaluate many
    iterations at once.
    """

    def __init__(self, physics: PassPhysics, curve: ComputeCurve, terms: PassTerms | None = None):
        self.physics = physics
        self.curve = curve
        self._terms = PassTerms() if terms is None else terms
        gpu = physics.hardware.gpu
        assert gpu is not None
        gpus = physics.hardware.gpus
        self._bytes_per_ms = gpu.memory_bandwidth_gbps * 1e9 / 1e3
        self._flops_per_ms = gpu.bf16_tflops * 1e12 / 1e3
        self._gpus = gpus
        self._bandwidth_gbps = gpu.memory_bandwidth_gbps
        self._per_tokens, self._kernels, self._points = self._terms.of(physics)
        self._kv_ms, self._pair_ms = self._attention_coefficients()
        self._log_miss = self._expert_log_miss()

    def _expert_log_miss(self) -> np.ndarray | None:
        """The routed experts' ``log_miss`` (E,) under ``expert_skew``, built once for
        every token count this pass prices; None where ``_weight_terms`` takes no skewed
        union (no fused-MoE kernel, dense weights, or uniform routing)."""
        p, w = self.physics, self.physics.weights
        if p.moe_kernel is None or not w.is_moe or p.expert_skew == 0.0:
            return None
        assert w.experts and w.experts_per_token
        return log_miss(w.experts, w.experts_per_token, p.expert_skew)

    def _attention_coefficients(self) -> tuple[float, float]:
        """(ms a KV token, ms a pair): the KV bytes at peak bandwidth and the attention
        FLOPs at peak; with ``kv_rereads`` r > 0 the KV term becomes (1 - r) kv + r pairs
        (a query row's read of its sequence's KV is one pair's worth of KV a key), so the
        KV coefficient is scaled by 1 - r and r x it joins the pair's."""
        p = self.physics
        kv_ms = p.kv_bytes_per_token / self._bytes_per_ms
        pair_ms = p.attention_flops_per_pair / self._flops_per_ms
        r = p.kv_rereads
        if r:
            return kv_ms * (1.0 - r), pair_ms + r * kv_ms
        return kv_ms, pair_ms

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its token-count terms (its ``PassTerms`` pickles as its owner's
        name), kernel schedules and measured points: the copy reads the receiving process's
        table of that owner and builds its schedules again."""
        state = dict(self.__dict__)
        del state["_per_tokens"], state["_kernels"], state["_points"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._per_tokens, self._kernels, self._points = self._terms.of(self.physics)

    def _weight_terms(self, tokens: int, sequences: int | None) -> tuple[float, float]:
        """(weight-read ms per rank, FLOPs in peak-equivalents) of a pass over ``tokens``
        tokens of ``sequences`` sequences (None: independent tokens). FLOPs: 2 x active
        params x tokens (all ranks together) at ``GEMM_FLOP_EFFICIENCY``, the routed
        experts' share (the token-expert pairs) at the fused-MoE kernel's
        ``pair_flop_efficiency`` instead when one runs them, with the rows its blocks pad
        beyond the 16-row floor under ``moe_tiles`` "sglang-default" (2 x expert params x
        MoE layers a row, ``tile_extra_rows``); reads: the routed experts' through that
        kernel (their union over the sequences, skewed), else every weight the tokens use."""
        p, w = self.physics, self.physics.weights
        flops = w.flops(tokens)
        if p.moe_kernel is None or not w.is_moe:
            memory_ms = w.bytes_read(tokens) / self._gpus / self._bytes_per_ms
            return memory_ms, flops / GEMM_FLOP_EFFICIENCY
        assert w.experts and w.experts_per_token and w.expert_params
        union = float(tokens)
        if sequences is not None and p.expert_overlap:
            union = float(sequence_union_tokens(sequences, tokens / sequences, p.expert_overlap))
        distinct = float(
            skewed_distinct_experts(
                w.experts, w.experts_per_token, union, p.expert_skew, self._log_miss
            )
        )
        kernel = p.moe_kernel
        per_expert_us = kernel.per_expert_us(w.expert_bytes / self._gpus, self._bandwidth_gbps)
        experts_ms = w.moe_layers * distinct * per_expert_us / 1e3
        memory_ms = w.dense_bytes / self._gpus / self._bytes_per_ms + experts_ms
        pairs = 2.0 * w.moe_layers * w.experts_per_token * w.expert_params * tokens
        gemm = (flops - pairs) / GEMM_FLOP_EFFICIENCY
        padding = 0.0
        if p.moe_tiles == "sglang-default":
            rows = tile_extra_rows(w.experts, w.experts_per_token, tokens, p.expert_skew)
            padding = 2.0 * w.moe_layers * w.expert_params * rows
        return memory_ms, gemm + (pairs + padding) / p.moe_kernel.pair_flop_efficiency

    def kernels(self, shape: PassShape) -> KernelSchedule:
        """``pass_kernels`` of this pass run as ``shape`` (its all-reduces at 0 ms): the
        same for every token count, built once a physics (its ``PassTerms``)."""
        kernels = self._kernels.get(shape.graphed)
        if kernels is None:
            p = self.physics
            kernels = self._kernels[shape.graphed] = pass_kernels(shape, p.hardware, p.geometry)
        return kernels

    def graphed(self, tokens: int, sequences: int | None = None) -> bool:
        """``replays_graph`` of this pass's physics."""
        return replays_graph(self.physics, tokens, sequences)

    def _token_terms(
        self, tokens: int, sequences: int | None = None
    ) -> tuple[float, float, Envelope]:
        """(weight memory ms, weight flop ms, critical-path envelope) for ``tokens`` tokens
        of ``sequences`` sequences, at the shape the pass runs (``padded_shape``)."""
        if sequences is not None and not 1 <= sequences <= tokens:
            raise ValueError(f"need 1 <= sequences <= tokens, got {sequences}, {tokens}")
        key = (tokens, sequences)
        terms = self._per_tokens.get(key)
        if terms is None:
            p = self.physics
            graphed = self.graphed(tokens, sequences)
            tokens, sequences = padded_shape(p, tokens, sequences)
            memory_ms, flops = self._weight_terms(tokens, sequences)
            flop_ms = flops / self._gpus / self._flops_per_ms
            shape = PassShape(p.name, tokens, p.layers, graphed)
            allreduce, _ = pass_allreduce(shape, p.hardware, p.geometry)
            schedule = self.kernels(shape).with_allreduce_ms(allreduce.us / 1000.0)
            terms = (memory_ms, flop_ms, envelope_of(schedule))
            if len(self._per_tokens) >= SHARED_ENTRIES:
                self._per_tokens.clear()
            self._per_tokens[key] = terms
        return terms

    def work_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        """The work per rank (ms): memory time + FLOP time of passes over ``tokens`` (of
        ``sequences`` sequences, None: independent tokens); array of the broadcast shape of
        ``kv_tokens`` and ``pairs``."""
        if tokens < 1:
            raise ValueError(f"a pass covers at least 1 token, got {tokens}")
        memory_ms, flop_ms, _ = self._token_terms(tokens, sequences)
        mem = memory_ms + np.asarray(kv_tokens, dtype=float) * self._kv_ms
        flo = flop_ms + np.asarray(pairs, dtype=float) * self._pair_ms
        return mem + flo

    def compute_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        """Calibrated compute time: the curve at the work."""
        return self.curve.at(self.work_ms(tokens, kv_tokens, pairs, sequences))

    def scalar_pass(
        self, tokens: int, sequences: int | None = None
    ) -> Callable[[float, float], float]:
        """``pass_ms`` over ``tokens`` tokens as a function of one (kv tokens, pairs), in
        Python floats: the same operations in the same order, so the same bits, for the
        few values a serving block evaluates (an array costs more than the arithmetic)."""
        if tokens < 1:
            raise ValueError(f"a pass covers at least 1 token, got {tokens}")
        memory_ms, flop_ms, envelope = self._token_terms(tokens, sequences)
        kv_ms, pair_ms = self._kv_ms, self._pair_ms
        compute, path = self.curve.at_scalar, envelope.at_scalar

        def ms(kv_tokens: float, pairs: float) -> float:
            return path(compute((memory_ms + kv_tokens * kv_ms) + (flop_ms + pairs * pair_ms)))

        return ms

    def pass_ms(
        self,
        tokens: int,
        kv_tokens: ArrayLike,
        pairs: ArrayLike,
        sequences: int | None = None,
    ) -> np.ndarray:
        """Pass time (ms): the critical path at the calibrated compute time."""
        envelope = self._token_terms(tokens, sequences)[2]
        return envelope.at(self.compute_ms(tokens, kv_tokens, pairs, sequences))
