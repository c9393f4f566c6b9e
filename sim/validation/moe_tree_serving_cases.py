"""A MoE under load in the validation report: Qwen3-30B-A3B on H100s with SGLang, plain
decoding against EAGLE-3, two public curves (sim/validation/serving_data.py): 4x H100 with a
tree (4 steps, topk 4, 16 draft tokens) at batch 1-64 (``ANGELSLIM_*``) and 2x H100 with a
chain of 3 at batch 1 and 4, plain decoding to 64 (``SPECFORGE_*``); calibrated on batch 1
only.

What a user with the batch-1 rows would do: the plain batch-1 throughput gives the decode
pass; the speculative arm's batch-1 accept length gives its acceptance (a tree's top-1
rate, ranks below it by the residual shares of the Sequoia profile, a prior:
sim/validation/tree_cases.py ``PRIOR``; a chain's one conditional rate); its batch-1
throughput gives the per-cycle overhead the derived drafter and verify passes leave
unexplained. Every other batch is simulated as the benchmark ran it (``CONVERSATIONS``:
min(B, N) threads over N two-turn MT-bench conversations, throughput over the whole job,
prefill, scheduling and tail included) and both arms' tok/s are scored, never used to
calibrate.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import optimize

from sim.binding.bound import bind
from sim.model.closed_forms import alpha_for_accept_length
from sim.model.host_work import DEFAULT_US_PER_REQUEST, PLAIN_US_PER_REQUEST, SGLANG_SPEC_FACTOR
from sim.model.tree.metrics import from_tree_accept_length
from sim.model.tree.presets import rank_profile
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.lengths import LogNormal
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import (
    BASELINE,
    SPECULATIVE,
    serving_setup,
    with_load,
)
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.workload import ClosedLoop, Workload
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.data_files import read_table
from sim.validation.llama8b_mt_bench import MT_BENCH_WORKLOAD
from sim.validation.monte_carlo import sd_from_ci95
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED
from sim.validation.tree_cases import PRIOR

__all__ = ["moe_tree_serving_cases"]

_WEIGHTS = read_table("moe_growth")["qwen3_30b_a3b"]

#: The benchmark both issues ran: SpecForge's benchmarks/bench_eagle3.py (sgl-project/
#: SpecForge at 3e0cda08, 2025-12-01, the version both issues' dates fall on; these lines
#: unchanged to a6b6b02): ``--benchmark-list mtbench:N`` takes the first N MT-bench
#: questions (benchmarker/mtbench.py), each a two-turn program (the second question sent
#: with the first answer, utils.create_multi_turn_sgl_function), run by SGLang's
#: ``run_batch(..., num_threads=batch_size, max_new_tokens=2048, temperature=0)``
#: (benchmarker/base.py) on a server launched with ``--max-running-requests batch_size``;
#: throughput = both turns' completion tokens / the wall time of the whole run_batch
#: (utils.compute_metrics). So at most min(batch, N) conversations are in flight.
TURNS = 2
#: SpecForge #339 prints its command: ``mtbench:20``. AngelSlim #163 does not; its batch-1
#: row (latency 795.87 s x 218.89 tok/s) is 174.2k output tokens, more than 20 x 2 turns
#: x 2048 can hold, so N >= 43: DERIVED as the script's default ``mtbench:80`` (all of
#: MT-bench; 1,089 tokens a turn on average).
CONVERSATIONS = {"AngelSlim #163": 80, "SpecForge #339": 20}
#: The benchmark's cap on every answer: ``Benchmarker.get_max_new_tokens`` (2048), passed to
#: ``run_batch`` and to each turn's ``sgl.gen`` (benchmarks/benchmarker/base.py, mtbench.py).
MAX_NEW_TOKENS = 2048
#: SGLang's iteration in these runs is host-bound (serving.host_batch1_share = 1, sim/model/
#: host_work.py): DERIVED from the batch-1 steps, 4.57 ms at TP 4 and 4.49 ms at TP 2 while
#: the weights a GPU reads halve from TP 2 to TP 4, and from the growth, about 1 ms per
#: running request at both (case 15, docs/moe-growth.md).
HOST_BATCH1_SHARE = 1.0
#: The one row the host work per request is fitted to (``host_us_per_request``), then
#: used by both curves and never scored: SpecForge #339's plain decoding at batch 4.
HOST_FIT = ("SpecForge #339", 4)
#: The top of the fit's bracket (us): 50 x the top of the public 7-38 us a request.
HOST_US_BRACKET = 2000.0

#: Qwen3-30B-A3B (config.json, sim/validation/data/moe_growth.toml): 48 layers, hidden 2048,
#: 128 experts (8 a token) of 4.72M, 4 KV heads of 128. KV per token and rank (TP 4: one KV
#: head a rank): 1 x 128 x 2 (K, V) x 2 bytes x 48 layers; attention FLOPs per (query, key)
#: pair and rank: 32 / 4 heads x 128 x 2 x 2 x 48. Drafter ASSUMED (AngelSlim's EAGLE-3 for
#: Qwen3-a3B, its config not in the issue): one decoder layer over the 2 x 2048 fused input
#: (q 4096 x 4096, k and v 4096 x 512, o 4096 x 2048: 29.4M; a dense MLP 3 x 2048 x 6144:
#: 37.7M), the 3 x 2048 -> 2048 fusion (12.6M) and a 32,000-token head (65.5M): 0.145B.
QWEN3_30B_MODEL: dict[str, Any] = {
    "name": "Qwen3-30B-A3B",
    "layers": _WEIGHTS["layers"],
    "hidden_size": 2048,
    "experts": _WEIGHTS["experts"],
    "experts_per_token": _WEIGHTS["experts_per_token"],
    # every pass here is CUDA-graphed (SGLang), so the count does not enter the case
    "kernels_per_layer": 14,
    "layer_params": _WEIGHTS["layer_params"],
    "lm_head_params": _WEIGHTS["lm_head_params"],
    "expert_params": _WEIGHTS["expert_params"],
    "weight_bytes_per_param": _WEIGHTS["weight_bytes_per_param"],
    "draft_params": 0.145e9,
    "kv_bytes_per_token": 24576.0,
    "attention_flops_per_pair": 196608.0,
}


@dataclass(frozen=True, slots=True)
class MoeCurve:
    """One published Qwen3-30B-A3B curve: plain decoding and one speculative arm (``arm``)
    by batch size, the arm's accept length by batch size, its draft and the GPUs."""

    label: str
    url: str
    gpus: int
    tok_s: Mapping[str, Mapping[int, float]]
    accept_length: Mapping[int, float]
    arm: str
    draft: tuple[int, int, int]  # num_steps, topk, num_draft_tokens
    latency_s: Mapping[int, float]  # the plain rows' job wall time, where the source prints it

    @property
    def tree(self) -> bool:
        return self.draft[1] > 1

    def scored(self) -> tuple[int, ...]:
        return tuple(b for b in sorted(self.tok_s["baseline"]) if b != 1)


ANGELSLIM = MoeCurve(
    "AngelSlim #163",
    pub.ANGELSLIM_URL,
    4,
    pub.ANGELSLIM_TOK_S,
    pub.ANGELSLIM_AL,
    "tree 4/4/16",
    (4, 4, 16),
    pub.ANGELSLIM_LATENCY_S,
)
SPECFORGE = MoeCurve(
    "SpecForge #339",
    pub.SPECFORGE_URL,
    2,
    pub.SPECFORGE_TOK_S,
    pub.SPECFORGE_AL,
    "chain 3",
    (3, 1, 4),
    {},
)


def answer_tokens(curve: MoeCurve) -> float | None:
    """Mean output tokens of a turn: the plain batch-1 job's output tokens (wall time x
    tok/s) over its ``CONVERSATIONS`` x ``TURNS`` turns, where the source prints the wall
    time (AngelSlim #163: 795.87 s x 218.89 tok/s / 160 turns, 1,089 tokens); None where it
    does not (SpecForge #339)."""
    if 1 not in curve.latency_s:
        return None
    job_tokens = curve.latency_s[1] * curve.tok_s["baseline"][1]
    return job_tokens / (CONVERSATIONS[curve.label] * TURNS)


def workload(curve: MoeCurve) -> tuple[dict[str, Any], float]:
    """The job's lengths and the mean context while a turn decodes: MT-bench prompts of
    ~128 tokens (lognormal, ``MT_BENCH_WORKLOAD``), answers capped at ``MAX_NEW_TOKENS``
    with the mean ``answer_tokens`` gives (the lognormal's mean solved so that the capped
    mean is it) or, where the source gives none, ``MT_BENCH_WORKLOAD``'s ASSUMED 512."""
    base = {**MT_BENCH_WORKLOAD, "output_max_tokens": MAX_NEW_TOKENS}
    mean = answer_tokens(curve)
    if mean is None:
        capped = LogNormal(base["output_tokens"], base["output_sigma"], MAX_NEW_TOKENS).mean
        return base, base["input_tokens"] + capped / 2
    sigma = base["output_sigma"]
    uncapped = optimize.brentq(
        lambda x: LogNormal(x, sigma, MAX_NEW_TOKENS).mean - mean, mean, 4 * MAX_NEW_TOKENS
    )
    return {**base, "output_tokens": round(uncapped)}, base["input_tokens"] + mean / 2


def _tree_accept_length(curve: MoeCurve, top1: float) -> float:
    """The accept length of the tree the serving plan builds at top-1 rate ``top1``."""
    sc = _scenario(curve, {"alpha": top1, "rank_profile": PRIOR}, 0.0)
    bound = bind(sc)
    plan = serving_setup(bound, source="validation").plan
    return plan.tree_acceptance(bound.drafting.draft).mean_accept_length()


def _acceptance(curve: MoeCurve) -> tuple[dict[str, Any], float]:
    """The acceptance the batch-1 accept length gives: a tree's top-1 rate (ranks below
    by ``PRIOR``'s residual shares) solved on the tree the serving plan builds, or a
    chain's one equal conditional rate."""
    steps, topk, tokens = curve.draft
    al = curve.accept_length[1]
    if curve.tree:
        shares = tuple(rank_profile(PRIOR).shares()[: topk - 1])
        start = from_tree_accept_length(al, steps, topk, tokens, shares, PRIOR).top1
        top1 = optimize.brentq(
            lambda x: _tree_accept_length(curve, x) - al,
            0.8 * start,
            min(1.2 * start, 0.999),
            xtol=1e-6,
        )
        return {"alpha": top1, "rank_profile": PRIOR}, top1
    alpha = alpha_for_accept_length(al, steps)
    assert alpha is not None
    return {"alpha": alpha}, alpha


def _scenario(
    curve: MoeCurve, acceptance: dict[str, Any], overhead_ms: float, host_us: float | None = None
) -> Scenario:
    """The curve's scenario; ``host_us``: host work per request of a host-bound server
    (``HOST_BATCH1_SHARE``), None: the defaults (20 us, a GPU-bound batch 1)."""
    steps, topk, tokens = curve.draft
    lengths, context = workload(curve)
    host = (
        {}
        if host_us is None
        else {
            "host_us_per_request": host_us,
            "host_batch1_share": HOST_BATCH1_SHARE,
            # the host work is fitted on a plain row: SGLang's EAGLE worker's is the
            # speculative iteration's per request over a plain one's
            "host_spec_factor": SGLANG_SPEC_FACTOR,
        }
    )
    return scenario_from_dict(
        {
            "name": f"qwen3-30b-a3b-{curve.gpus}xh100-sglang",
            "model": QWEN3_30B_MODEL,
            "server": {"engine": "sglang", "tensor_parallel": curve.gpus},
            "hardware": {"gpus": curve.gpus, "interconnect": "nvlink4", "gpu": "H100"},
            "timing": {
                "decode_ms": 1000.0 / curve.tok_s["baseline"][1],
                "verify_cuda_graph": True,
                "context_tokens": context,
                "cycle_overhead_ms": overhead_ms,
            },
            "speculation": {"num_steps": steps, "topk": topk, "num_draft_tokens": tokens},
            "acceptance": acceptance,
            "workload": lengths,
            # SGLang: prefill first; its overlap scheduler hides host work in plain decoding
            # only (off with EAGLE)
            "serving": {"batching": "prefill_first", "host_overlap": "baseline", **host},
        },
        source=f"sim.validation.moe_tree_serving_cases ({curve.label})",
    )


def calibrated(curve: MoeCurve) -> tuple[Scenario, float, float, float]:
    """The scenario calibrated on batch 1, its fitted rate (a tree's top-1, a chain's
    alpha), the arm's measured batch-1 cycle (ms) and the cycle the derived passes give
    without overhead (ms)."""
    acceptance, rate = _acceptance(curve)
    host_us = host_us_per_request()
    bare = _scenario(curve, acceptance, 0.0, host_us)
    bound = bind(bare)
    setup = serving_setup(bound, source="validation")
    derived_ms = float(
        setup.plan.cost.decode_ms(1, bound.drafting.draft, np.array([workload(curve)[1]]))[0]
    )
    cycle_ms = 1000.0 * curve.accept_length[1] / curve.tok_s[curve.arm][1]
    fitted = _scenario(curve, acceptance, max(cycle_ms - derived_ms, 0.0), host_us)
    return fitted, rate, cycle_ms, derived_ms


@functools.cache
def host_us_per_request() -> float:
    """Host work per running request (us) of the host-bound server: the value at which the
    benchmark's simulated job at the ``HOST_FIT`` row (prefill and tail included, as the
    scored rows are simulated) gives its measured plain tok/s; brentq to 1 us on the
    simulation's common random numbers."""
    label, batch = HOST_FIT
    curve = {c.label: c for c in (ANGELSLIM, SPECFORGE)}[label]
    acceptance, _ = _acceptance(curve)
    target = curve.tok_s["baseline"][batch]

    def miss(us: float) -> float:
        scenario = _scenario(curve, acceptance, 0.0, us)
        return _simulate(scenario, curve.label, batch)["baseline"][0] - target

    return float(optimize.brentq(miss, 0.0, HOST_US_BRACKET, xtol=1.0))


def _simulate(scenario: Scenario, label: str, batch: int) -> dict[str, Any]:
    """The benchmark's run at ``batch``: ``batch`` threads over the job's
    ``CONVERSATIONS[label]`` two-turn conversations, throughput over the whole job
    (prefill and tail included)."""
    sc = with_load(scenario, concurrency=batch, source="validation")
    setup = serving_setup(bind(sc), source="validation")
    conversations = CONVERSATIONS[label]
    job = Workload(
        ClosedLoop(batch, 0.0, conversations, TURNS),
        setup.plan.workload.output_tokens,
        setup.plan.workload.input_tokens,
        requests=conversations * TURNS,
    )
    plan = replace(setup.plan, workload=job)
    run = simulate_serving(
        plan, work_out(plan, setup.policies), replications=SERVING_REPLICATIONS, seed=SERVING_SEED
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    base, spec = summary.policies[BASELINE], summary.policies[SPECULATIVE]
    r = summary.replications
    return {
        "baseline": (base.aggregate_tok_s.mean, sd_from_ci95(base.aggregate_tok_s.ci95, r)),
        "spec": (spec.aggregate_tok_s.mean, sd_from_ci95(spec.aggregate_tok_s.ci95, r)),
        "al": spec.accept_length.mean,
    }


def case_qwen3_30b(curve: MoeCurve) -> Case:
    """A Qwen3-30B-A3B curve on SGLang: plain and speculative aggregate tok/s by batch."""
    fitted, rate, cycle_ms, derived_ms = calibrated(curve)
    steps, topk, tokens = curve.draft
    kind = (
        f"tree ({steps} steps, topk {topk}, {tokens} draft tokens)"
        if curve.tree
        else (f"chain of {steps}")
    )
    rows: list[Row] = []
    sides: list[str] = []
    right = decided = 0
    job = CONVERSATIONS[curve.label]
    plain_at: dict[int, float] = {}
    for batch in curve.scored():
        p = _simulate(fitted, curve.label, batch)
        plain_at[batch] = p["baseline"][0]
        fit_row = (curve.label, batch) == HOST_FIT
        arms = [] if fit_row else [("baseline", "no speculation", p["baseline"])]
        if batch in curve.tok_s[curve.arm]:
            arms.append((curve.arm, curve.arm, p["spec"]))
        for arm, what, (mean, sd) in arms:
            rows.append(
                Row(
                    f"aggregate tok/s ({what})",
                    f"{curve.label} {arm} bs={batch}",
                    f"{min(batch, job)} threads over {job} two-turn conversations",
                    curve.tok_s[arm][batch],
                    mean,
                    sd,
                    load=batch,
                    # the host fit is a plain-decoding row: it calibrates the plain arm
                    calibrated_loads=(1.0, HOST_FIT[1])
                    if curve.label == HOST_FIT[0] and arm == "baseline"
                    else (1.0,),
                    side="plain" if arm == "baseline" else "speculative",
                )
            )
        if batch in curve.tok_s[curve.arm]:
            measured = curve.tok_s[curve.arm][batch] / curve.tok_s["baseline"][batch]
            predicted = p["spec"][0] / p["baseline"][0]
            decided += 1
            right += (measured > 1.0) == (predicted > 1.0)
            sides.append(
                f"bs={batch}: measured {measured:.2f}, specsim {predicted:.2f} (AL "
                f"{p['al']:.2f} against {curve.accept_length[batch]})"
            )
    answer = answer_tokens(curve)
    plain = curve.tok_s["baseline"]
    top = max(plain)
    return Case(
        f"{curve.label}: Qwen3-30B-A3B on {curve.gpus}x H100, SGLang, EAGLE-3 {kind} against "
        "plain decoding, aggregate tok/s against batch size",
        (curve.url,),
        (
            f"{curve.label} baseline bs=1",
            f"{curve.label} {curve.arm} bs=1",
            f"{curve.label} {curve.arm} bs=1 AL",
            f"{HOST_FIT[0]} baseline bs={HOST_FIT[1]} (host work per request)",
        ),
        tuple(rows),
        setup=(
            f"Qwen3-30B-A3B (config.json: 48 layers, 128 experts of 4.72M, 8 a token) on "
            f"{curve.gpus}x H100 (preset), TP {curve.gpus} over NVLink4, SGLang prefill-first, "
            "verify graphed; KV capacity derived by SGLang's rule",
            f"calibrated on batch 1: decode {1000.0 / plain[1]:.3f} ms ({plain[1]} tok/s "
            f"plain); {'top-1 rate' if curve.tree else 'one conditional rate'} {rate:.4f} "
            f"from the AL {curve.accept_length[1]}"
            + (f" (ranks 2..{topk} by {PRIOR}, a prior)" if curve.tree else "")
            + f"; per-cycle overhead {max(cycle_ms - derived_ms, 0.0):.2f} ms so that the "
            f"batch-1 cycle is {cycle_ms:.2f} ms ({curve.tok_s[curve.arm][1]} tok/s; the "
            f"derived passes give {derived_ms:.2f} ms)",
            f"host-bound server (serving.host_batch1_share {HOST_BATCH1_SHARE:g}, DERIVED: the "
            f"batch-1 steps at TP {SPECFORGE.gpus} and TP {ANGELSLIM.gpus} are "
            f"{1000.0 / SPECFORGE.tok_s['baseline'][1]:.2f} and "
            f"{1000.0 / ANGELSLIM.tok_s['baseline'][1]:.2f} ms while the weights a GPU "
            "reads halve; docs/moe-growth.md): its iteration is the longer of the GPU's and "
            f"the host's, and the host's grows {host_us_per_request():.0f} us per running "
            f"request (serving.host_us_per_request, fitted so that the simulated job gives "
            f"{HOST_FIT[0]}'s plain tok/s at batch {HOST_FIT[1]}; that row is not scored); "
            f"an iteration that drafts and verifies pays {SGLANG_SPEC_FACTOR:.2f} times it a "
            "request (serving.host_spec_factor: SGLang's EAGLE worker, the default "
            f"speculative {DEFAULT_US_PER_REQUEST:g} us over a plain iteration's "
            f"{PLAIN_US_PER_REQUEST:g} us, sim/model/host_work.py; not fitted here)",
            "ASSUMED: the drafter (0.145B a pass: one EAGLE-3 layer and a 32k head), "
            "prompts ~128 tokens lognormal for each turn (the second turn's context, the "
            "first prompt and answer, not carried: the engine has no prefix cache); answers "
            f"lognormal (sigma 0.5 ASSUMED) capped at the benchmark's {MAX_NEW_TOKENS} "
            + (
                f"max_new_tokens with a mean of {answer:,.0f} tokens a turn (DERIVED: the "
                f"batch-1 job's {curve.latency_s[1]} s x {plain[1]} tok/s over {job} x "
                f"{TURNS} turns)"
                if answer is not None
                else "max_new_tokens with a mean of ~512 tokens a turn (ASSUMED: the source "
                "prints no job time)"
            ),
            f"the benchmark as run: batch B as min(B, {job}) threads over {job} conversations "
            f"of {TURNS} turns (CONVERSATIONS: "
            + ("mtbench:20 as printed" if job == 20 else "mtbench:80 derived, >= 43 bound")
            + "), a turn sent when the "
            "previous one is answered; tok/s = all output tokens / the whole job's time "
            f"(prefill and tail included); {SERVING_REPLICATIONS} replications, seed "
            f"{SERVING_SEED}; the ± is the Monte Carlo standard error",
        ),
        notes=(
            "Speculative / plain tok/s: "
            + "; ".join(sides)
            + f". The side (pays or not) right at {right} of {decided} batches. "
            f"{error_summary(rows, 0)}. Plain decoding "
            f"measured scales {plain[top] / plain[1]:.1f}x from batch 1 to {top}, specsim "
            f"{plain_at[top] / plain[1]:.1f}x ("
            + (
                f"beyond batch {job} the benchmark holds no more than its {job} conversations; "
                if top > job
                else ""
            )
            + "the tail, the last conversations running alone, is in the time). Left out: "
            "the second turn's context (the first prompt and answer, prefix-cached by "
            "SGLang). The step beyond batch 1 grows by about 1 ms per running request at "
            "TP 2 and TP 4 alike (case 15), which the expert reads (halved per rank at TP 4) "
            "do not explain: it is priced as the host work above, fitted on one plain row, "
            "and the speculative arm pays SGLang's factor on it; whether it is the server's "
            "or the benchmark harness's is not identified (docs/moe-growth.md).",
        ),
    )


def moe_tree_serving_cases() -> tuple[Case, ...]:
    return (case_qwen3_30b(ANGELSLIM), case_qwen3_30b(SPECFORGE))
