"""Validation cases of the hardware model: the eager-execution model on graphed-vs-eager
pairs, the NCCL model on nccl-tests points, the custom all-reduce on its held-out sizes.

Each case is calibrated on some figures and scored on others (sim/validation/cases.py
``Case``); the figures and their sources are sim/validation/hardware_data.py.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from sim.binding.decompose import scenario_hardware
from sim.hardware.allreduce import allreduce_time, custom_allreduce_us, nccl_tests_time_us
from sim.hardware.eager import (
    DEFAULT_EAGER_COSTS,
    EAGER_KERNEL_US,
    NATIVE_OP_GPU_US,
    NATIVE_OP_US,
    EagerCosts,
    eager_schedule,
    host_ms_from_graphed,
    with_layer_gpu_ms,
)
from sim.hardware.interconnects import PRESETS, SGLANG_2904_CUSTOM_US, Interconnect
from sim.hardware.launch import KernelSchedule, calibrate_compute_ms, critical_path_ms
from sim.hardware.passes import compose_pass
from sim.scenario.schema import Scenario
from sim.validation.cases import Case, Row
from sim.validation.hardware_data import (
    EAGER_PAIRS,
    NCCL_LL_BYTES_PER_CHANNEL_8_RANKS,
    NCCL_POINTS,
    NCCL_PRESET_SOURCES,
    PIE_348,
    SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS,
    SGLANG_KIMI_LAYER_OPS,
    STAS00_A100_SWEEP_US,
    VLLM_MLA_PREFILL_KERNELS,
    VOIPMONITOR_NO_MTP_TOK_S,
    VOIPMONITOR_TOK_S,
    EagerPair,
    NcclPoint,
    layer_kernels,
    piecewise_layer_kernels,
    vllm_mla_decode_kernels,
    voipmonitor_pair,
)

__all__ = [
    "HARDWARE_NOT_RECONSTRUCTED",
    "case_custom_allreduce",
    "case_eager_pairs",
    "case_nccl_points",
    "eager_prediction_ms",
    "eager_split_ms",
    "nccl_point_us",
]


def _pair_schedule(pair: EagerPair, costs: EagerCosts, mode: str) -> KernelSchedule:
    tp = pair.gpus > 1
    ar_ms = 0.0
    if tp:
        assert pair.interconnect is not None
        ic = PRESETS[pair.interconnect]
        nbytes = pair.tokens * pair.hidden_size * 2
        # Inside a graph (or a captured piece) the all-reduce is a graphed one.
        ar = allreduce_time(ic, pair.gpus, nbytes, graphed=mode != "eager", library=pair.library)
        ar_ms = ar.us / 1000.0
    unfused = pair.unfused_kernels_per_layer if mode == "eager" else 0
    schedule = eager_schedule(
        layers=pair.layers,
        kernels_per_layer=pair.kernels_per_layer,
        allreduces_per_layer=pair.allreduces_per_layer,
        allreduce_ms=ar_ms,
        tensor_parallel=tp,
        costs=costs,
        mode=mode,  # type: ignore[arg-type]
        attention_kernels=pair.attention_kernels,
        unfused_kernels=unfused,
    )
    if mode == "graphed" or not pair.ungraphed_extra_gpu_ms:
        return schedule
    # The first attention kernel of each layer (after the projection and any unfused ops).
    return with_layer_gpu_ms(
        schedule, pair.layers, pair.ungraphed_extra_gpu_ms / pair.layers, unfused + 1
    )


def eager_split_ms(
    pair: EagerPair, costs: EagerCosts = DEFAULT_EAGER_COSTS, *, at_floor: bool | None = None
) -> tuple[float, float]:
    """(host ms, compute ms) of the pair's graphed step: the compute calibrated on the
    graphed time; with ``at_floor`` (default: the pair's ``split_host``) the compute is the
    pass's GPU floor instead and the rest of the step the engine's host work
    (sim/hardware/eager.py)."""
    graphed = _pair_schedule(pair, costs, "graphed")
    compute = calibrate_compute_ms(graphed, pair.graphed_ms)
    if not (pair.split_host if at_floor is None else at_floor) or pair.gpu_floor_ms is None:
        return 0.0, compute
    compute = min(compute, pair.gpu_floor_ms)
    return host_ms_from_graphed(pair.graphed_ms, critical_path_ms(graphed, compute)), compute


def eager_prediction_ms(
    pair: EagerPair, costs: EagerCosts = DEFAULT_EAGER_COSTS, *, at_floor: bool | None = None
) -> float:
    """The ungraphed step predicted from the graphed one: the same host work plus the
    ungraphed schedule's critical path over the same compute."""
    host, compute = eager_split_ms(pair, costs, at_floor=at_floor)
    return host + critical_path_ms(_pair_schedule(pair, costs, pair.mode), compute)


def sglang_kimi_kernels() -> tuple[int, int]:
    """(low, high) kernels of a Kimi-K2.5 layer run eagerly by SGLang, counted from its
    source (sim/validation/hardware_data.py ``SGLANG_KIMI_LAYER_OPS``)."""
    return layer_kernels(SGLANG_KIMI_LAYER_OPS)


def _seed_verify_ms(seed: Scenario, kernels_per_layer: int | None = None) -> float:
    """The seed's ungraphed verify at the public per-kernel cost, with the verify's GPU
    work from the graphed decode, at the scenario's kernels per layer or the given ones."""
    if kernels_per_layer is not None:
        seed = seed.model_copy(
            update={"model": seed.model.model_copy(update={"kernels_per_layer": kernels_per_layer})}
        )
    hw = scenario_hardware(seed)
    m0 = hw.measured_verify_tokens
    compute = hw.verify_compute_from_decode_ms(m0)
    point = hw.reference.with_launch_us(EAGER_KERNEL_US)
    shape = hw.shape("verify", m0, point)
    return compose_pass(shape, point, hw.geom, compute, "derived").total_ms


def _seed_row(seed: Scenario) -> Row:
    """The seed's own pair: its ungraphed verify predicted from its graphed decode."""
    predicted = _seed_verify_ms(seed)
    m0 = scenario_hardware(seed).measured_verify_tokens
    assert seed.timing.verify_ms is not None and seed.timing.decode_ms is not None
    return Row(
        "eager pass ms",
        "seed ungraphed verify",
        f"graphed decode {seed.timing.decode_ms:g} ms + {m0 - 1} x "
        f"{_growth_text(seed)}, {seed.model.kernels_per_layer} kernels/layer",
        seed.timing.verify_ms,
        predicted,
    )


def _growth_text(seed: Scenario) -> str:
    slope = seed.timing.verify_ms_per_extra_token
    return f"{slope:g} ms" if slope is not None else "the derived growth"


def case_eager_pairs(seed: Scenario) -> Case:
    """Graphed-vs-eager pairs: the ungraphed time predicted from the graphed one."""
    rows = []
    for pair in EAGER_PAIRS:
        predicted = eager_prediction_ms(pair)
        kind = "same kernels" if pair.same_kernels else "other kernels too"
        inputs = f"{pair.mode}, {pair.layers} layers x {pair.kernels_per_layer}, {kind}"
        if pair.unfused_kernels_per_layer:
            inputs += f", +{pair.unfused_kernels_per_layer} unfused/layer"
        host, _ = eager_split_ms(pair)
        if host > 0:
            inputs += f", host {host:.3g} ms"
        if pair.ungraphed_extra_gpu_ms:
            inputs += f", +{pair.ungraphed_extra_gpu_ms:.2g} ms prefill branch"
        if pair.key == "voipmonitor":
            before, after = VOIPMONITOR_TOK_S[2000]
            rows.append(
                Row(
                    "tok/s (ungraphed)",
                    "voipmonitor ungraphed tok/s",
                    inputs,
                    before,
                    after * pair.graphed_ms / predicted,
                )
            )
            continue
        rows.append(Row("eager pass ms", f"{pair.key} eager", inputs, pair.eager_ms, predicted))
    rows.append(_seed_row(seed))
    hw = scenario_hardware(seed)
    low, high = sglang_kimi_kernels()
    within = [r for r in rows if abs(r.error) <= 0.15]
    same = [
        r for r, p in zip(rows, (*EAGER_PAIRS, None), strict=True) if p is None or p.same_kernels
    ]
    return Case(
        title="Eager execution: ungraphed decode passes predicted from graphed ones",
        sources=(PIE_348.source, *dict.fromkeys(p.source for p in EAGER_PAIRS)),
        calibrated_on=("pie #348 eager 22.68 ms",),
        rows=tuple(rows),
        setup=(
            f"calibrated: per-kernel CPU cost {EAGER_KERNEL_US:g} us (sim/hardware/eager.py: "
            f"{PIE_348.title}, launch-bound 1200 kernels)",
            "each pair: the graphed step split into the pass's GPU work and the engine's "
            "host work, then host work + the critical path of CPU issue work and GPU work "
            "(piecewise: the attention op eager, one launch per captured piece)",
            "host work per step (not removed by a graph): the graphed step less the pass "
            "at its GPU floor (weights read at the GPU's peak bandwidth) where that floor is "
            "a small share of the step (GPT-2: 0.05 ms of weights in a 1.0-1.3 ms step, "
            "deepspeedai/DeepSpeed PR #8352), else none",
            f"unfused ops without torch.compile (vLLM enforce_eager): {NATIVE_OP_US:.3g} us "
            f"of CPU and {NATIVE_OP_GPU_US:.3g} us of GPU per extra kernel (vLLM PRs #51480, "
            "#55329); counted from vLLM's source where it runs: Qwen2.5-Omni's MRoPE",
            f"kernels per layer: dense 15 (pie #348's count), Kimi under SGLang {low}-{high} "
            f"(counted from its source; the seed scenario's {seed.model.kernels_per_layer}), "
            "Kimi under vLLM's piecewise graphs 18 (an assumption that only spreads the GPU "
            f"work), vLLM's MLA decode attention op (TRITON_MLA before its FULL-graph fix) "
            f"{_range(vllm_mla_decode_kernels(False))}, {_range(vllm_mla_decode_kernels(True))} "
            "with decode context parallelism's collectives (counted from vLLM's source, the "
            "low end scored), the MLA prefill "
            f"branch's {VLLM_MLA_PREFILL_KERNELS} (counted from vLLM's common.py; the "
            f"voipmonitor verify's ungraphed side); the seed fixes its own per-kernel cost at "
            f"{hw.current.launch_us:.1f} us under verify_compute = decode",
        ),
        notes=(
            f"{len(within)} of {len(rows)} scored within 15% (median |error| "
            f"{100 * float(np.median([abs(r.error) for r in rows])):.1f}%); the pairs whose "
            "two sides run "
            f"the same kernels ({', '.join(r.figure for r in same)}) are the model's domain. "
            "Where the ungraphed side ran other kernels too (vLLM's enforce_eager also "
            "turns torch.compile's fusions off; metaseq's graph PR reworked decoding; the "
            "voipmonitor fix also moved the verify to the decode attention kernel, and "
            "its gain grows with context) the measured gap is more than launch overhead, "
            "and a model of CPU issue work under-predicts it. The unfused-op term counts "
            "only what vLLM's source shows running unfused (Qwen2.5-Omni's MRoPE: "
            f"+{_unfused_ms('vllm-omni-7960'):.2f} ms a step), far from the gap.",
            _held_out_note(rows, seed),
            _host_bound_note(),
            _context_note(),
            _voipmonitor_note(),
            _counted_kimi_note(seed),
        ),
    )


def _held_out_note(rows: list[Row], seed: Scenario) -> str:
    """The pairs added after the model was fixed, and what the DeepSeek-V3 one implies."""
    held = [(r, p) for r, p in zip(rows, EAGER_PAIRS, strict=False) if p.held_out]
    within = [r for r, _ in held if abs(r.error) <= 0.15]
    parts = ", ".join(f"{r.figure} {100 * r.error:+.1f}%" for r, _ in held)
    dsv3 = _pair("sglang-5090-dsv3")
    low, high = layer_kernels(SGLANG_DEEPSEEK_V3_FP8_LAYER_OPS)
    kernels = [dsv3.layers * k for k in (high, low)]
    implied = [1000 * (dsv3.eager_ms - dsv3.graphed_ms / n) / n for n in kernels]
    per_layer = (dsv3.eager_ms - eager_prediction_ms(dsv3)) / dsv3.layers
    others = sum(
        1
        for r, p in zip(rows, EAGER_PAIRS, strict=False)
        if p.same_kernels and p is not dsv3 and abs(r.error) <= 0.15
    )
    kimi_low, kimi_high = sglang_kimi_kernels()
    seed_hw = scenario_hardware(seed)
    seed_us = (seed_hw.launch_us_at_kernels(kimi_high), seed_hw.launch_us_at_kernels(kimi_low))
    return (
        f"Held out (added after every choice of the eager model was fixed, issue 14's search "
        f"for more public pairs): {len(within)} of {len(held)} within 15% ({parts}). The "
        "DeepSeek-V3 pair is the one public SGLang graphed/ungraphed comparison of the seed's "
        f"architecture on 8 GPUs: its ungraphed step, {dsv3.eager_ms:.0f} ms, is "
        f"{dsv3.eager_ms / dsv3.graphed_ms:.1f}x the graphed one, and at the {low}-{high} "
        "kernels a layer counted from SGLang's source it implies "
        f"{implied[0]:.0f}-{implied[1]:.0f} us of CPU a kernel, against the calibrated "
        f"{EAGER_KERNEL_US:.1f} and the {seed_us[0]:.1f}-{seed_us[1]:.1f} the seed's own SGLang "
        "Kimi verify (Marlin MoE) implies: the eager DeepSeek-V3 path (Triton block-FP8 "
        f"MoE, April 2025) spent {per_layer:.1f} ms a layer that issue work at the public "
        "cost does not explain and the seed's own measurement does not show, so it is not "
        "the per-kernel "
        f"constant (one pair, against the seed's and {others} other same-kernel pairs within "
        "15%). The PR does not "
        "profile its eager side; the pair's graphed step is "
        f"{100 * (dsv3.gpu_floor_ms or 0.0) / dsv3.graphed_ms:.0f}% weight reads, so a "
        "host share of it would not close the gap either (the bound below)."
    )


def _counted_kimi_note(seed: Scenario) -> str:
    """What SGLang's own kernel count does to the seed row."""
    low, high = sglang_kimi_kernels()
    at_low, at_high = (_seed_verify_ms(seed, k) for k in (low, high))
    measured = seed.timing.verify_ms or 0.0
    seed_hw = scenario_hardware(seed)
    old = 18  # the count the seed scenario assumed before it was counted
    return (
        "The seed row is not public (the user's own measurement). Counted from SGLang's "
        f"source, an eager Kimi-K2.5 layer issues {low}-{high} kernels (fused or "
        "PyTorch-native rotary, triton or flashinfer attention, fused or compiled top-k; "
        "sim/validation/hardware_data.py; the seed scenario takes "
        f"{seed.model.kernels_per_layer} with the range): at the public per-kernel cost "
        f"that puts the seed's ungraphed verify at {at_low:.1f}-{at_high:.1f} ms "
        f"({100 * (at_low / measured - 1):+.0f}% to {100 * (at_high / measured - 1):+.0f}%; "
        f"the row is the scenario's count), and the measured {measured:g} ms implies "
        f"{seed_hw.launch_us_at_kernels(high):.1f}-{seed_hw.launch_us_at_kernels(low):.1f} us a "
        f"kernel (the public cost is {EAGER_KERNEL_US:.1f}), which the seed scenario derives "
        "at its count (its graphed-verify what-if does not depend on either: the graphed "
        "verify's GPU work comes from the graphed decode). The count the scenario assumed "
        f"before it was counted, {old}, put the row at {_seed_verify_ms(seed, old):.1f} ms. "
        "No op of that layer syncs with the host (the expert alignment runs on the GPU), so "
        "no host sync is modelled."
    )


def _range(low_high: tuple[int, int]) -> str:
    low, high = low_high
    return f"{low}" if low == high else f"{low}-{high}"


def _voipmonitor_note() -> str:
    """What the voipmonitor report itself says its ungraphed sides ran."""
    no_mtp = _pair("voipmonitor-no-mtp")
    low, high = vllm_mla_decode_kernels(True)
    at_high = replace(
        no_mtp, attention_kernels=high, kernels_per_layer=piecewise_layer_kernels(high)
    )
    errors = [100 * (eager_prediction_ms(p) / p.eager_ms - 1) for p in (no_mtp, at_high)]
    mtp = _pair("voipmonitor")
    missed = mtp.eager_ms - eager_prediction_ms(mtp)
    return (
        "The voipmonitor report also measured graphing alone on the same server: one user, "
        f"no speculation, DCP 8, PIECEWISE {VOIPMONITOR_NO_MTP_TOK_S[0]:g} -> FULL "
        f"{VOIPMONITOR_NO_MTP_TOK_S[1]:g} tok/s, the eager attention op costing "
        f"{no_mtp.eager_ms - no_mtp.graphed_ms:.1f} ms of a {no_mtp.eager_ms:.1f} ms step. "
        f"With that op counted from vLLM's source ({low}-{high} kernels a layer, DCP's three "
        "collectives included) the model gives "
        f"{errors[0]:+.1f}% at {low} and {errors[1]:+.1f}% at {high}: vLLM's piecewise "
        "penalty there is what the CPU issue work of the counted op predicts. Its "
        "speculative pair's ungraphed "
        "verify went down the chunked-prefill branch, whose metadata build waited on a "
        "`.cpu()` copy every step (the report's debugging-methodology.md); removing that "
        "sync alone gave no throughput gain (its image list: cu130-mtp-fix-v1, 'no "
        "throughput win'), so no host sync is modelled there. What the model leaves of "
        f"that pair's ungraphed cycle, {missed:.1f} ms of the "
        f"{mtp.eager_ms - mtp.graphed_ms:.1f} ms it adds over the graphed one at 2k, is the "
        "prefill branch beyond its floor and its kernels' issue, which no public source "
        "times."
    )


def _context_note() -> str:
    """The voipmonitor report at its longer contexts (not scored: one mechanism's reach)."""
    pairs = {context: voipmonitor_pair(context) for context in VOIPMONITOR_TOK_S}
    parts = [
        f"{context // 1000}k {after * pair.graphed_ms / eager_prediction_ms(pair):.0f} tok/s "
        f"against {before:g}"
        for context, pair in pairs.items()
        if context != 2000
        for before, after in [VOIPMONITOR_TOK_S[context]]
    ]
    first, last = pairs[min(pairs)], pairs[max(pairs)]
    # Growth of the ungraphed cycle beyond the graphed one's, 2k -> 30k: measured vs the
    # prefill branch's floor.
    measured = (last.eager_ms - last.graphed_ms) - (first.eager_ms - first.graphed_ms)
    floor = last.ungraphed_extra_gpu_ms - first.ungraphed_extra_gpu_ms
    return (
        "The voipmonitor fix took the verify off vLLM's MLA chunked-prefill branch, which "
        "up-projects the whole cached context into keys and values in every layer "
        "(sim/hardware/mla.py, at peak bandwidth): why its gain grows with context. At the "
        f"longer contexts the model gives {', '.join(parts)}; from 2k to 30k the branch's "
        f"floor is {floor:.1f} ms of the {measured:.1f} ms the ungraphed cycle grew beyond "
        "the graphed one, the rest the branch's kernels running below peak at a 4-token "
        "query, or more than the floor reads (not scored: the same report's contexts)."
    )


def _pair(key: str) -> EagerPair:
    (pair,) = [p for p in EAGER_PAIRS if p.key == key]
    return pair


def _unfused_ms(key: str) -> float:
    """What a pair's unfused-op kernels add to its predicted ungraphed step (ms)."""
    pair = _pair(key)
    without = replace(pair, unfused_kernels_per_layer=0)
    return eager_prediction_ms(pair) - eager_prediction_ms(without)


def _host_bound_note() -> str:
    """How far the no-host-share assumption can be off, for the pairs with a GPU floor."""
    bounded = [p for p in EAGER_PAIRS if p.gpu_floor_ms is not None and not p.split_host]
    parts = [
        f"{p.key} {100 * (eager_prediction_ms(p, at_floor=True) / p.eager_ms - 1):+.0f}% "
        f"(floor {100 * (p.gpu_floor_ms or 0.0) / p.graphed_ms:.0f}% of the step)"
        for p in bounded
    ]
    split = [p for p in EAGER_PAIRS if p.split_host and p.gpu_floor_ms is not None]
    shares = sorted(100 * (p.gpu_floor_ms or 0.0) / p.graphed_ms for p in split)
    missed = [p for p in bounded if abs(eager_prediction_ms(p) / p.eager_ms - 1) > 0.15]
    short = all(eager_prediction_ms(p, at_floor=True) < p.eager_ms for p in missed)
    verdict = (
        "the pairs out of 15% stay short even there, so host work that graphs do not "
        "remove is not what they miss"
        if short
        else "host work could explain some of the misses"
    )
    return (
        f"Host work: split off only for GPT-2, whose pass at its floor is {shares[0]:.0f}-"
        f"{shares[-1]:.0f}% of the graphed step. For the larger models the floor is a large "
        "share and the split is unknown; at its bound (all of the step above the floor "
        "taken as host work) the errors of the ungraphed step times become "
        f"{', '.join(parts)}: {verdict}."
    )


def _ic_for(point: NcclPoint) -> Interconnect:
    ic = PRESETS[point.interconnect]
    if "NVLS off" in point.note:
        ic = ic.model_copy(update={"nvls_latency_us": None, "nvls_bandwidth_gbps": None})
    return ic.model_copy(update={"custom_allreduce": None})


def nccl_point_us(point: NcclPoint) -> float:
    """The NCCL model's answer for one measured point (an eager nccl-tests style loop)."""
    return nccl_tests_time_us(
        _ic_for(point), point.gpus, point.nbytes, gpus_per_process=point.gpus_per_process
    )


def _size(nbytes: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def case_nccl_points() -> Case:
    """nccl-tests all-reduce points against NCCL alone (``library = nccl``)."""
    rows = tuple(
        Row(
            "all-reduce us",
            f"{p.setting} {_size(p.nbytes)}",
            f"{p.gpus} GPUs, {p.interconnect}, {p.gpus_per_process} GPU(s) a process",
            p.measured_us,
            nccl_point_us(p),
        )
        for p in NCCL_POINTS
    )
    ratios = np.array([r.predicted / r.measured for r in rows])
    within_2x = int(np.sum((ratios <= 2.0) & (ratios >= 0.5)))
    return Case(
        title="NCCL all-reduce (library = nccl) against nccl-tests points, 8 B - 1 GB",
        sources=tuple(dict.fromkeys(p.source for p in NCCL_POINTS)),
        calibrated_on=NCCL_PRESET_SOURCES,
        rows=rows,
        setup=(
            "NCCL 2.30.7's tuner model (sim/hardware/interconnects.py) on the preset; a "
            "loop iteration takes the longer of the GPU time and the host's launches (5 us a "
            "GPU the thread drives: nccl-tests -g N, sim/hardware/allreduce.py "
            "nccl_tests_time_us)",
            *(f"{p.setting}: {p.note}" for p in NCCL_POINTS if p.note and p.nbytes == 256),
        ),
        notes=(
            f"{within_2x} of {len(rows)} points within 2x; median |error| "
            f"{100 * float(np.median(np.abs(ratios - 1))):.0f}%. NCCL's tuner model is what "
            "NCCL uses to choose an algorithm, not a fit to measurements.",
            "The RTX PRO 6000 rows without P2P were timed by p2pmark, whose NCCL loop "
            "(lukealonso/p2pmark bench_nccl_ar at 3c39f36) issues every GPU's all-reduce "
            "from one thread inside one ncclGroupStart/End, as nccl-tests -g N does, so they "
            "are scored with that thread's launches (an earlier version of this case took "
            "them as one GPU a process and had their small messages 58-63% low).",
            _a100_note(rows),
        ),
    )


def _a100_note(rows: tuple[Row, ...]) -> str:
    """The mid-size excess of 8x A100 runs with one thread for 8 GPUs, and its shape."""
    a100 = [r for r, p in zip(rows, NCCL_POINTS, strict=True) if p.interconnect == "nvlink3"]
    mid = [
        r
        for r, p in zip(rows, NCCL_POINTS, strict=True)
        if p.interconnect == "nvlink3" and (1 << 20) <= p.nbytes <= (8 << 20)
    ]
    low = min(r.error for r in mid)
    high = max(r.error for r in mid)
    sizes = sorted(STAS00_A100_SWEEP_US)
    steps = [
        (STAS00_A100_SWEEP_US[b] - STAS00_A100_SWEEP_US[a])
        / ((b - a) / NCCL_LL_BYTES_PER_CHANNEL_8_RANKS)
        for a, b in itertools.pairwise(sizes)
        if b <= 512 * 1024
    ]
    return (
        f"8x A100 with one thread driving the 8 GPUs, two sources ({len(a100)} rows): from "
        f"1 to 8 MB both take longer than NCCL's tuner says ({100 * low:+.0f}% to "
        f"{100 * high:+.0f}%). In stas00's sweep each doubling from 32 KB to 512 KB adds "
        f"{min(steps):.1f}-{max(steps):.1f} us per channel NCCL's LL protocol opens (one "
        "per 32 KB on 8 ranks, NVIDIA/nccl enqueue.cc), and the time then stays at "
        f"{STAS00_A100_SWEEP_US[1 << 20]:.0f}-{STAS00_A100_SWEEP_US[4 << 20]:.0f} us from 1 "
        "to 4 MB once every channel is open: a cost per channel an iteration that "
        "the tuner's model does not have. No source times it, so it is not modelled; the "
        "H20 rows (18.7 us at 32 KB, not one thread's 8 launches) show none."
    )


def case_custom_allreduce() -> Case:
    """SGLang's custom all-reduce: fitted on four sizes, scored on the two left out."""
    fitted = (4096, 262144, 524288, 1048576)
    held_out = [b for b in SGLANG_2904_CUSTOM_US if b not in fitted]
    rows = []
    for nbytes in held_out:
        modelled = custom_allreduce_us(PRESETS["nvlink4"], 8, nbytes)
        assert modelled is not None
        rows.append(
            Row(
                "all-reduce us",
                f"SGLang custom all-reduce {_size(nbytes)}",
                "8x H100, no graph",
                SGLANG_2904_CUSTOM_US[nbytes],
                modelled.us,
            )
        )
    return Case(
        title="Custom all-reduce (SGLang, 8x H100 NVLink4): one-shot and two-shot",
        sources=("https://github.com/sgl-project/sglang/pull/2904",),
        calibrated_on=tuple(f"SGLang #2904 tp8 {_size(b)}" for b in fitted),
        rows=tuple(rows),
        setup=(
            "one-shot: latency + 7 S / (0.44 x 370 GB/s); two-shot: about twice the "
            "latency + 1.75 S / (0.21 x 370 GB/s) (sim/hardware/interconnects.py)",
        ),
    )


HARDWARE_NOT_RECONSTRUCTED = (
    "GPT-2 on 1x H200, vLLM and SGLang, eager 4.8 ms vs graphed 1.0-1.3 ms a token "
    "(deepspeedai/DeepSpeed PR #8352): the graphed step of a 0.25 GB model is the engine's "
    "per-step CPU work, not GPU work, which the pass model takes the graphed time to be.",
    "DeepSeek-Coder-V2-Lite, SGLang, 1 GPU, 6.22 ms graphed, '4x faster' than eager "
    "(sgl-project/sglang PR #1401): the eager time is cut from the stored copy.",
    "DeepSeek-V4 on 8x RTX PRO 6000, SGLang, 240 -> 97.5 ms (sgl-project/sglang PR #24047): "
    "the change also removed .item()/.nonzero() syncs and a per-expert Python loop, so it is "
    "not graphing alone.",
    "Llama-2-7B EAGLE tree (topk 8, 64 draft tokens), SGLang, 185.5 -> 337.1 tok/s with "
    "CUDA graphs (sgl-project/sglang PRs #3466, #3500): the cycle's pass times and accept "
    "length are not given.",
    "DeepSeek-V3 + NextN/EAGLE speculation on SGLang with CUDA graphs, 62.73 tok/s at accept "
    "length 2.59 (sgl-project/sglang PR #5090): the ungraphed speculative run the seed-class "
    "comparison needs is cut from the stored copy (its non-speculative pair is scored in "
    "case 18).",
    "Llama-3.1-8B + EAGLE-3 (topk 1, FA3), SGLang send_one, 128.80 tok/s at accept length "
    "2.17 without CUDA graphs vs 196.24 at 2.13 with the draft and verify passes graphed "
    "(sgl-project/sglang PR #5050): num_steps, the draft token count and the GPU are not in "
    "the stored copy, and the draft-extend pass stays eager on both sides.",
    "C++/Rust engines, graphs on vs off: llama.cpp LLaMA-2-7B Q4_0 tg 116.31 -> 128.27 t/s "
    "(RTX 3090), 138.31 -> 146.81 (RTX 4090) (ggml-org/llama.cpp PR #6766), Q4_K_M on an "
    "H100-PCIe 143.35 -> 163.83 (issue #6763); xLLM Qwen3-0.6B TPOT 4.20 -> 2.72 ms at "
    "concurrency 1 (xLLM-AI/xllm PR #713); realizar Qwen2.5 3.8 -> 3.0 ms over 647 kernels "
    "(paiml/realizar issue #201, 1.2 us a kernel): their per-kernel CPU cost is a bare "
    "launch, not a Python engine's all-in 18.9 us, and the model has no constant for them.",
    "GLM-OCR on vLLM, A100 80GB, 60.08 tok/s eager vs 465.31 graphed without MTP "
    "(zai-org/GLM-OCR issue #218): OCRBench throughput at an unstated concurrency, and "
    "enforce_eager also turns torch.compile off.",
    "GLM-5.3-Flash on 4 DGX Spark (GB10), vLLM + DFlash2 k=7: --enforce-eager 26.7 -> "
    "FULL_AND_PIECEWISE 32.5 tok/s (tonyd2wild/GLM-5.3-Flash-NVFP4-1M-KV-4x-DGX-Spark PR "
    "#5), while the same fleet's PR #2 measured eager faster than PIECEWISE (98.8 vs 80.0 "
    "tok/s): no GB10 preset, no public layer count, and the two reports disagree.",
)
