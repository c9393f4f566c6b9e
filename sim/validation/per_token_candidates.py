"""Per-token costs of a batched pass that the model does not price, sized from public figures.

The Kimi serving case (docs/validation.md, Kimi-K2.5 on 8x RTX PRO 6000) misses the growth
of the measured verify at high load: from 64 to 128 users its cycle grows by about 0.2 ms
per verify token, the model's by about 0.12 (FLOPs and PCIe all-reduces). This
module prices the candidates named for that gap, per token of a pass, each from a cited
public figure, so that the case's note can say how much of the gap they hold. None is added
to the pass model: each would also slow plain decoding, which the model already prices too
slow from 32 users (the note gives the numbers).

* ``logits_gather_us``: vLLM's ``LogitsProcessor`` gathers the vocabulary-parallel logits
  of every token across the tensor-parallel ranks (``tensor_model_parallel_all_gather`` or
  ``_gather``, vllm/model_executor/layers/logits_processor.py): per token vocab x 2 bytes
  (bf16), of which each rank receives (n - 1) / n, at the interconnect's bus bandwidth
  (nccl-tests PERFORMANCE.md: all-gather busbw = algbw x (n - 1) / n). Derived.
* ``SAMPLING_US_PER_ROW_32K``: sampling one row of logits, FlashInfer's top-k/top-p kernel
  and PyTorch's sort-based path, vllm-project/vllm PR #40376 (the benchmark table of the PR
  that made FlashInfer the default: top-p over the whole batch, 128 rows, a 32,768-token
  vocabulary, 0.046 ms FlashInfer and 0.626 ms PyTorch), scaled linearly with the
  vocabulary (both scan every logit); greedy decoding samples by an arg-max (about 0). The
  Kimi report does not publish its benchmark's sampling parameters: assumed, range 0 to the
  sort path.
* ``moe_compute_extra_us``: the fused Marlin MoE kernel's compute below peak. Its marginal
  cost per (token, expert) pair where every expert is already read, from FlagGems PR #3609's
  vLLM Marlin W4A16 column on an H20 (E = 512, hidden 4,096, intermediate 1,024, top-10:
  2.227 ms at 256 tokens, 5.646 ms at 1,024; 509 of 512 experts are read at 256 tokens, so
  the growth is compute): ``MARLIN_PEAK_FRACTION`` of the H20's peak. Priced as the
  expert FLOPs at that fraction less the same FLOPs at the fused-MoE kernel's efficiency
  the model already charges (sim/hardware/experts.py ``PAIR_FLOP_EFFICIENCY``), at least 0;
  the lower end with FP8 activations at twice the BF16 rate (the Kimi report's
  ``VLLM_MARLIN_INPUT_DTYPE=fp8``).

The EAGLE row of the EAGLE-3 paper's SGLang table (and its crossover) misses in the other
direction: a cost that only the EAGLE-1 drafter pays. ``draft_row_us`` bounds the one its
128k-token head brings, the softmax and top-k of every draft row over the target's
vocabulary where the EAGLE-3 drafter scores 32,000 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.hardware.experts import PAIR_FLOP_EFFICIENCY
from sim.hardware.gpus import gpu_preset

__all__ = [
    "DRAFT_ROW_BYTES_PER_LOGIT",
    "EAGLE3_DRAFT_VOCAB",
    "LLAMA31_VOCAB",
    "LOGIT_BYTES",
    "MARLIN_PEAK_FRACTION",
    "SAMPLING_US_PER_ROW_32K",
    "PerTokenCandidates",
    "draft_row_us",
    "logits_gather_us",
    "marlin_peak_fraction",
    "moe_compute_extra_us",
    "per_token_candidates",
    "sampling_us_per_row",
]

#: Bytes of one logit as the LM head writes it (bf16) before the gather.
LOGIT_BYTES = 2
#: vllm-project/vllm PR #40376, batch 128, vocabulary 32,768, top-p over the whole batch:
#: (FlashInfer, PyTorch sort) ms for the 128 rows, as us per row.
SAMPLING_VOCAB = 32_768
SAMPLING_US_PER_ROW_32K: tuple[float, float] = (0.046e3 / 128, 0.626e3 / 128)
#: FlagGems PR #3609 (flagos-ai/FlagGems), vLLM Marlin W4A16 fused MoE on an H20: (tokens,
#: ms) at E = 512 experts, hidden 4,096, intermediate 1,024, top-10.
MARLIN_H20_POINTS: tuple[tuple[int, float], tuple[int, float]] = ((256, 2.227), (1024, 5.646))
MARLIN_H20_SHAPE = {"hidden": 4096, "intermediate": 1024, "top_k": 10}


def logits_gather_us(vocab: float, gpus: int, bus_bandwidth_gbps: float) -> float:
    """Microseconds per token of gathering ``vocab`` logits across ``gpus`` ranks:
    (n - 1) / n x vocab x ``LOGIT_BYTES`` at the bus bandwidth; 0 on one GPU."""
    if vocab <= 0 or gpus < 1 or bus_bandwidth_gbps <= 0:
        raise ValueError("need vocab > 0, gpus >= 1 and a positive bus bandwidth")
    return (gpus - 1) / gpus * vocab * LOGIT_BYTES / (bus_bandwidth_gbps * 1e3)


def sampling_us_per_row(vocab: float) -> tuple[float, float]:
    """(FlashInfer, PyTorch sort) microseconds to sample one row of ``vocab`` logits."""
    if vocab <= 0:
        raise ValueError(f"vocab must be > 0, got {vocab}")
    low, high = SAMPLING_US_PER_ROW_32K
    return low * vocab / SAMPLING_VOCAB, high * vocab / SAMPLING_VOCAB


def marlin_peak_fraction() -> float:
    """The share of the H20's BF16 peak that Marlin's marginal token-expert pairs reach
    (``MARLIN_H20_POINTS``): pairs x 2 x 3 x hidden x intermediate FLOPs over the time."""
    (t0, ms0), (t1, ms1) = MARLIN_H20_POINTS
    s = MARLIN_H20_SHAPE
    pairs = (t1 - t0) * s["top_k"]
    flops = pairs * 2.0 * 3.0 * s["hidden"] * s["intermediate"]
    achieved_tflops = flops / ((ms1 - ms0) * 1e-3) / 1e12
    return achieved_tflops / gpu_preset("H20").bf16_tflops


#: ``marlin_peak_fraction()``: about 0.382.
MARLIN_PEAK_FRACTION = marlin_peak_fraction()


def moe_compute_extra_us(
    expert_flops_per_token: float, peak_tflops: float, fp8_activations: bool = False
) -> float:
    """Microseconds per token the MoE kernel's compute adds beyond what the model charges:
    ``expert_flops_per_token`` (per rank) at ``MARLIN_PEAK_FRACTION`` of the peak (twice
    the peak with FP8 activations) less the same FLOPs at ``PAIR_FLOP_EFFICIENCY`` x
    ``peak_tflops``, at least 0."""
    if expert_flops_per_token < 0 or peak_tflops <= 0:
        raise ValueError("need expert FLOPs >= 0 and a positive peak")
    rate = peak_tflops * (2.0 if fp8_activations else 1.0) * MARLIN_PEAK_FRACTION
    charged = peak_tflops * PAIR_FLOP_EFFICIENCY
    return max(
        0.0, expert_flops_per_token / (rate * 1e6) - expert_flops_per_token / (charged * 1e6)
    )


@dataclass(frozen=True, slots=True)
class PerTokenCandidates:
    """The candidates' microseconds per verify token on one server: the logits gather
    (derived), sampling (low, high: FlashInfer, sort; 0 when greedy) and the MoE kernel's
    compute below peak (low, high: FP8, BF16 activations)."""

    vocab: float
    gather_us: float
    sampling_us: tuple[float, float]
    moe_us: tuple[float, float]

    @property
    def total_us(self) -> tuple[float, float]:
        """(low, high) of the three together: greedy sampling at the low end."""
        return (
            self.gather_us + self.moe_us[0],
            self.gather_us + self.sampling_us[1] + self.moe_us[1],
        )


def per_token_candidates(
    *,
    vocab: float,
    gpus: int,
    bus_bandwidth_gbps: float,
    expert_params: float,
    experts_per_token: int,
    moe_layers: int,
    peak_tflops: float,
) -> PerTokenCandidates:
    """The candidates for a tensor-parallel MoE server (experts split over ``gpus``)."""
    flops = 2.0 * expert_params * experts_per_token * moe_layers / gpus
    return PerTokenCandidates(
        vocab,
        logits_gather_us(vocab, gpus, bus_bandwidth_gbps),
        sampling_us_per_row(vocab),
        (
            moe_compute_extra_us(flops, peak_tflops, fp8_activations=True),
            moe_compute_extra_us(flops, peak_tflops),
        ),
    )


#: At most the bytes a draft row moves per logit in SGLang's EAGLE worker, whose every draft
#: pass takes ``torch.softmax(logits_output.next_token_logits)`` then ``fast_topk`` over the
#: drafter's whole vocabulary (python/sglang/srt/speculative/eagle_worker.py): the bf16
#: logits written and read, an fp32 copy written, the softmax reading it and writing fp32
#: probabilities, the top-k reading them (2 + 2 + 4 + 4 + 4 + 4).
DRAFT_ROW_BYTES_PER_LOGIT = 20
#: Vocabularies the drafters of the EAGLE-3 paper's Llama-3.1-8B rows score: the EAGLE-1
#: drafter reads the target's head (meta-llama/Llama-3.1-8B-Instruct config.json
#: vocab_size), the EAGLE-3 drafter its own (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
#: config.json draft_vocab_size).
LLAMA31_VOCAB = 128_256
EAGLE3_DRAFT_VOCAB = 32_000


def draft_row_us(vocab: float, bandwidth_gbps: float) -> float:
    """At most the microseconds one draft row's softmax and top-k over ``vocab`` logits
    take at the GPU's peak bandwidth (``DRAFT_ROW_BYTES_PER_LOGIT`` a logit)."""
    if vocab <= 0 or bandwidth_gbps <= 0:
        raise ValueError("need vocab > 0 and a positive bandwidth")
    return DRAFT_ROW_BYTES_PER_LOGIT * vocab / (bandwidth_gbps * 1e3)
