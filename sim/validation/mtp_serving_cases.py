"""Serving validation: DeepSeek-V3 with its MTP drafter on 8x AMD MI300X (SGLang), mean
end-to-end latency against max concurrency, with and without speculation.

The curve (LMSYS blog, AMD, 2025-09-02; sim/validation/data/serving_curves.toml
``amd_mtp_dsv3``): ``sglang.bench_serving`` on the random dataset, input and output lengths
up to 1,024 tokens, at max concurrency 1, 2, 4, ..., 64, both arms on one SGLang
v0.4.10.post1 server build (TP 8). It is calibrated on concurrency 1 only and scored at
every other concurrency, both arms:

* plain decoding: the batch-1 decode step so that the mean end-to-end latency at one user
  is the measured one (the prefill as the hardware model derives it);
* MTP: the accept length is not published for this run. The cycle is the derived passes
  (the verify over 3 tokens anchored on the fitted decode, the drafter's passes from the
  roofline) with no per-cycle overhead (ASSUMED), and the chain's one conditional rate is
  set so that the mean end-to-end latency at one user is the measured one. (The accept
  length SGLang published for the same model and draft, 2.18 with 3 draft tokens and topk 1
  on 16 H200 under another workload, LMSYS blog 2025-07-17, cannot give this run's 2.11x
  at one user: that needs a cycle of at most 2.18 / 2.11 = 1.03 decode steps.)

Engine facts taken from the source the curve names, not fitted:

* SGLang resets ``max_running_requests`` to 48 when a speculative algorithm is on and the
  user gives none (python/sglang/srt/server_args.py: NEXTN is run as EAGLE, "Max running
  requests is reset to 48 for speculative decoding", from v0.4.5); the blog's MTP server
  sets none, so at 64 users 16 requests wait in its queue. The plain server admits what
  its KV pool holds: the scenario states the speculating server's own cap
  (``serving.max_running_requests_speculative``).
* SGLang runs plain decoding with its overlap scheduler and turns it off for EAGLE/NEXTN
  (host work: sim/model/host_work.py, the default 20 us a request); prefills run before
  decoding (``prefill_first``); the whole prompt is one chunk (--chunked-prefill-size
  131072).
* ``sglang.bench_serving``'s random dataset at its default range ratio (0) draws every
  request's input and output lengths uniformly from 1..1,024 (``sample_random_requests``:
  ``np.random.randint(max(int(len x ratio), 1), len + 1)``) and asks for exactly that many
  output tokens (``ignore_eos``): the lengths here are that uniform distribution.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from scipy import optimize

from sim.binding.bound import bind
from sim.model.host_work import SGLANG_SPEC_FACTOR
from sim.model.pass_curves import PrefillLoad
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.serving.lengths import Empirical
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving, work_out
from sim.simulation.serving.workload import ClosedLoop, Workload
from sim.validation import serving_data as pub
from sim.validation.cases import Case, Row, error_summary
from sim.validation.hardware_data import SGLANG_5090, SGLANG_5090_TOK_S
from sim.validation.moe_tree_serving_cases import HOST_BATCH1_SHARE, host_us_per_request
from sim.validation.monte_carlo import sd_from_ci95
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED

__all__ = ["case_dsv3_mtp_mi300x", "mtp_serving_cases"]

#: DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json: 61 layers, the first 3 dense, hidden
#: 7168, 256 routed experts of intermediate 2048, 8 a token, one shared expert, MLA with
#: q_lora_rank 1536, kv_lora_rank 512, 128 heads of 128 + 64 rope dims, vocab 129,280;
#: FP8 weights). MLA 187.1M (q_a 11.0M, q_b 37.7M, kv_a 4.1M, kv_b 16.8M, o 117.4M) + shared
#: expert 44.0M a MoE layer; a dense layer 187.1M + 3 x 7168 x 18432; a routed expert
#: 3 x 7168 x 2048 = 44.04M; LM head 129,280 x 7168 = 926.7M (58 x (231.1M + 256 x 44.04M) +
#: 3 x 583.5M + 926.7M = 670B, the published 671B). KV: MLA's latent 512 + 64 rope dims in
#: BF16 a layer, replicated on every rank: 576 x 2 x 61 = 70,272 bytes a token; attention
#: FLOPs a (query, key) pair on one of 8 ranks: 128 heads x (576 + 512) x 2 x 61 / 8.
#: The NextN drafter (DeepSeek-V3-NextN: one MoE decoder layer, eh_proj 2 x 7168 -> 7168,
#: the target's embedding and LM head) reads at one token its MLA and shared expert, 8
#: routed experts, eh_proj and the LM head: 187.1 + 44.0 + 352.3 + 102.8 + 926.7 = 1.61B
#: (a batch's union of its routed experts is not priced: at most 256 x 44.04M / 8 ranks =
#: 1.4 GB a pass a rank, about 0.27 ms at the MI300X's peak bandwidth).
DSV3_MODEL: dict[str, Any] = {
    "name": "DeepSeek-V3",
    "layers": 61,
    "hidden_size": 7168,
    "experts": 256,
    "experts_per_token": 8,
    # every pass here is graphed (SGLang's decode and target-verify graphs), so the count
    # does not enter the case
    "kernels_per_layer": 28,
    "dense_layers": 3,
    "layer_params": 231.15e6,
    "dense_layer_params": 583.47e6,
    "expert_params": 44.04e6,
    "lm_head_params": 926.68e6,
    "weight_bytes_per_param": 1.0,
    "draft_params": 1.613e9,
    "kv_bytes_per_token": 70272.0,
    "attention_flops_per_pair": 2.124e6,
    "draft_kv_bytes_per_token": 1152.0,
}

#: ``sglang.bench_serving --dataset-name random --random-input 1024 --random-output 1024`` at
#: the default range ratio: lengths uniform over 1..1,024 (module docstring).
RANDOM_MAX_TOKENS = 1024
RANDOM_LENGTHS = tuple(range(1, RANDOM_MAX_TOKENS + 1))
#: Mean context while decoding: the mean prompt and half the mean answer.
CONTEXT_TOKENS = float(np.mean(RANDOM_LENGTHS)) * 1.5
#: SGLang's default admission cap with a speculative algorithm (module docstring).
SGLANG_SPEC_MAX_RUNNING = 48
#: The MTP draft: --speculative-num-steps 2 --speculative-eagle-topk 1 (3 draft tokens).
NUM_STEPS = 2
PLAIN, MTP = "without MTP", "with MTP"
#: Measured requests a replication: the uniform lengths (sd 296 tokens) need a few hundred
#: for a mean within a few percent.
MIN_REQUESTS, REQUESTS_PER_USER = 400, 6


def _scenario(
    decode_ms: float,
    overhead_ms: float,
    alpha: float,
    max_running: int | None = None,
    host: dict[str, float] | None = None,
    points: list[dict[str, Any]] | None = None,
) -> Scenario:
    """The curve's scenario; ``max_running``: the speculating server's admission cap
    (None: the KV pool's, as the plain server's); ``host``: host-work fields of
    ``[serving]`` (None: the defaults); ``points``: ``[[timing.points]]`` (None: none, the
    prefill priced from the decode's calibration, sim/binding/serving_cost.py)."""
    serving: dict[str, Any] = {"batching": "prefill_first", "host_overlap": "baseline"}
    if max_running is not None:
        serving["max_running_requests_speculative"] = max_running
    serving.update(host or {})
    return scenario_from_dict(
        {
            "name": "deepseek-v3-8xmi300x-sglang-mtp",
            "model": DSV3_MODEL,
            "server": {"engine": "sglang", "tensor_parallel": 8},
            "hardware": {"gpus": 8, "interconnect": "xgmi-mi300x", "gpu": "MI300X"},
            "timing": {
                "decode_ms": decode_ms,
                "verify_cuda_graph": True,
                "context_tokens": CONTEXT_TOKENS,
                "cycle_overhead_ms": overhead_ms,
                **({"points": points} if points else {}),
            },
            "speculation": {"num_steps": NUM_STEPS},
            "acceptance": {"alpha": alpha},
            # replaced by the uniform lengths in ``_simulate``; these set the means the
            # scenario's own checks see
            "workload": {"input_tokens": 512, "output_tokens": 512},
            "serving": serving,
        },
        source="sim.validation.mtp_serving_cases",
    )


def _simulate(scenario: Scenario, users: int) -> dict[str, tuple[float, float]]:
    """Mean end-to-end latency (ms) and its Monte Carlo standard error, both policies, of
    a closed loop of ``users`` with the random dataset's lengths."""
    sc = with_load(scenario, concurrency=users, source="validation")
    setup = serving_setup(bind(sc), source="validation")
    requests = max(MIN_REQUESTS, REQUESTS_PER_USER * users)
    job = Workload(
        ClosedLoop(users),
        Empirical(RANDOM_LENGTHS),
        Empirical(RANDOM_LENGTHS),
        requests=requests,
        warmup=max(users, requests // 10),
    )
    plan = replace(setup.plan, workload=job)
    run = simulate_serving(
        plan, work_out(plan, setup.policies), replications=SERVING_REPLICATIONS, seed=SERVING_SEED
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    out = {}
    for name in (BASELINE, SPECULATIVE):
        e2e = summary.policies[name].metrics["e2e_ms"]
        out[name] = (e2e.mean, sd_from_ci95(e2e.ci95, summary.replications))
    return out


def calibrated(
    points: list[dict[str, Any]] | None = None,
) -> tuple[Scenario, float, float]:
    """(the scenario, fitted alpha, the MTP arm's accept length): the batch-1 decode, then
    the chain's one conditional rate, so that one user's simulated mean end-to-end latency
    is the measured one in each arm, each by a root search on the simulation's common
    random numbers (to 0.1% of the latency); ``points``: measured passes the scenario
    states (``_scenario``)."""
    curves = pub.AMD_MTP_E2E_MS
    first = curves[PLAIN][1] / float(np.mean(RANDOM_LENGTHS))  # ms a token, prefill in

    def plain_gap(decode_ms: float) -> float:
        sc = _scenario(decode_ms, 0.0, 0.5, points=points)
        return _simulate(sc, 1)[BASELINE][0] - curves[PLAIN][1]

    decode_ms = optimize.brentq(plain_gap, 0.5 * first, 1.5 * first, xtol=1e-3 * first)

    def spec_gap(alpha: float) -> float:
        sc = _scenario(decode_ms, 0.0, alpha, SGLANG_SPEC_MAX_RUNNING, points=points)
        return _simulate(sc, 1)[SPECULATIVE][0] - curves[MTP][1]

    alpha = optimize.brentq(spec_gap, 0.05, 0.999, xtol=1e-4)
    scenario = _scenario(decode_ms, 0.0, alpha, SGLANG_SPEC_MAX_RUNNING, points=points)
    return scenario, alpha, 1.0 + alpha + alpha**2


def host_bound_what_if(
    plain: Scenario, alpha: float
) -> tuple[float, tuple[float, ...], dict[float, tuple[float, ...]]]:
    """A what-if chosen after seeing this curve's rows (docs/studies/case38-deepseek-mi300x.md): the
    host-bound SGLang server of cases 36 and 37 (``serving.host_batch1_share`` 1, the host
    work a request fitted on SpecForge #339's plain batch-4 row, another model, GPU and
    harness), at the speculative host factors 1 and SGLang's 20 / 7. Batch 1 is unchanged
    (the term adds nothing at one request), so the calibration stands. Returns (the host
    work a request in us, the plain arm's errors by load, each factor's MTP errors by
    load)."""
    curves = pub.AMD_MTP_E2E_MS
    h = host_us_per_request()
    decode_ms = plain.timing.decode_ms
    assert decode_ms is not None
    loads = [u for u in sorted(curves[PLAIN]) if u != 1]

    def host(factor: float) -> dict[str, float]:
        return {
            "host_us_per_request": h,
            "host_batch1_share": HOST_BATCH1_SHARE,
            "host_spec_factor": factor,
        }

    base = _scenario(decode_ms, 0.0, alpha, SGLANG_SPEC_MAX_RUNNING, host(1.0))
    plain_errors = tuple(_simulate(base, u)[BASELINE][0] / curves[PLAIN][u] - 1.0 for u in loads)
    spec_errors = {}
    for factor in (1.0, SGLANG_SPEC_FACTOR):
        sc = _scenario(decode_ms, 0.0, alpha, SGLANG_SPEC_MAX_RUNNING, host(factor))
        spec_errors[factor] = tuple(
            _simulate(sc, u)[SPECULATIVE][0] / curves[MTP][u] - 1.0 for u in loads
        )
    return h, plain_errors, spec_errors


def eager_prefill_point() -> dict[str, Any]:
    """The eager DeepSeek-V3 pass of sgl-project/sglang PR #5090 as a measured one-token
    prefill (``[[timing.points]]``): one request, ``--disable-cuda-graph``, 8x H200, TP 8,
    1000 / 4.60 tok/s = 217.4 ms a step (sim/validation/hardware_data.py, validation case
    18's held-out DeepSeek-V3 pair, which the eager model prices at 38 ms). SGLang runs every
    prefill (EXTEND) pass eagerly, so this is that engine's measured eager pass of this
    model, on another GPU and an earlier build."""
    eager_tok_s, _ = SGLANG_5090_TOK_S
    return {
        "kind": "prefill",
        "batch": 1,
        "tokens": 1,
        "context_tokens": 0.0,
        "ms": 1000.0 / eager_tok_s,
        "source": SGLANG_5090,
    }


def eager_prefill_what_if() -> tuple[float, tuple[float, ...], tuple[float, ...]]:
    """A what-if whose hypothesis was formed after seeing this curve's rows
    (docs/studies/misses-and-prefill-stall.md): both arms' latency grows by the same ~450 ms a
    request
    for every further user although the MTP arm runs 2.19 times fewer iterations a request,
    which a stall once a request (its prefill, prefill-first) gives and a cost every
    iteration does not. The prefill is anchored at ``eager_prefill_point`` (a value from
    another server, not from these rows), decode and alpha re-calibrated at one user as
    the case is. Returns (the anchored prefill of a 512-token prompt in ms, the plain arm's
    errors by load, the MTP arm's)."""
    curves = pub.AMD_MTP_E2E_MS
    point = eager_prefill_point()
    sc, _, _ = calibrated([point])
    one = with_load(sc, concurrency=1, source="validation")
    setup = serving_setup(bind(one), source="validation")
    prompt = PrefillLoad.of_chunks([int(np.mean(RANDOM_LENGTHS))], [0.0])
    prefill_ms = setup.plan.cost.prefill_ms(prompt, False)
    loads = [u for u in sorted(curves[PLAIN]) if u != 1]
    runs = {u: _simulate(sc, u) for u in loads}
    plain = tuple(runs[u][BASELINE][0] / curves[PLAIN][u] - 1.0 for u in loads)
    spec = tuple(runs[u][SPECULATIVE][0] / curves[MTP][u] - 1.0 for u in loads)
    return prefill_ms, plain, spec


def _signed(errors: tuple[float, ...]) -> str:
    return " / ".join(f"{100 * e:+.1f}%" for e in errors)


def case_dsv3_mtp_mi300x() -> Case:
    """DeepSeek-V3 + MTP on 8x MI300X, SGLang: mean end-to-end latency by max concurrency."""
    curves = pub.AMD_MTP_E2E_MS
    plain, alpha, al = calibrated()
    rows: list[Row] = []
    sides: list[str] = []
    for users in sorted(curves[PLAIN]):
        if users == 1:
            continue
        both = _simulate(plain, users)
        base, spec = both[BASELINE], both[SPECULATIVE]
        for arm, (mean, sd), side in ((PLAIN, base, "plain"), (MTP, spec, "speculative")):
            rows.append(
                Row(
                    f"mean end-to-end latency ms ({arm})",
                    f"AMD MTP blog {arm} conc={users}",
                    f"closed loop of {users} users",
                    curves[arm][users],
                    mean,
                    sd,
                    load=users,
                    calibrated_loads=(1.0,),
                    side=side,
                )
            )
        sides.append(
            f"{users}: measured {curves[PLAIN][users] / curves[MTP][users]:.2f}, specsim "
            f"{base[0] / spec[0]:.2f}"
        )
    h, plain_what_if, spec_what_if = host_bound_what_if(plain, alpha)
    everything = np.abs(np.array([*plain_what_if, *spec_what_if[1.0]]))
    prefill_ms, eager_plain, eager_spec = eager_prefill_what_if()
    eager_all = np.abs(np.array([*eager_plain, *eager_spec]))
    return Case(
        "DeepSeek-V3 + MTP (NEXTN, 2 steps) on 8x AMD MI300X, SGLang v0.4.10: mean "
        "end-to-end latency against max concurrency, with and without speculation",
        (pub.AMD_MTP_URL, pub.SGLANG_MTP_BLOG_URL),
        (f"AMD MTP blog {PLAIN} conc=1", f"AMD MTP blog {MTP} conc=1"),
        tuple(rows),
        setup=(
            "DeepSeek-V3 (config.json; FP8 weights, MLA KV 70,272 bytes a token) on 8x MI300X "
            "(preset), TP 8 over xGMI (RCCL), SGLang prefill-first, every pass graphed; KV "
            "capacity derived by SGLang's rule",
            f"calibrated on concurrency 1 only: batch-1 decode {plain.timing.decode_ms:.2f} ms "
            f"so that the plain mean end-to-end latency is {curves[PLAIN][1]:,.0f} ms; "
            f"one conditional rate alpha = {alpha:.4f} (accept length {al:.2f}) so that the "
            f"MTP one is {curves[MTP][1]:,.0f} ms (this run's acceptance is not published; "
            f"SGLang's blog gives {pub.SGLANG_MTP_AL_3_TOKENS} for the same draft on another "
            "server and workload, too low for this run's 2.11x at one user)",
            "ASSUMED: no per-cycle overhead beyond the derived passes; the drafter's union "
            "of routed experts at batch > 1 (not priced: at most ~0.27 ms a pass)",
            "lengths: sglang.bench_serving's random dataset, input and output uniform over "
            "1..1,024 tokens (range ratio at its default, ignore_eos); closed loop of B "
            f"users, max(400, 6B) requests, {SERVING_REPLICATIONS} replications, seed "
            f"{SERVING_SEED}; the ± is the Monte Carlo standard error",
            f"the MTP server admits at most {SGLANG_SPEC_MAX_RUNNING} running requests "
            "(serving.max_running_requests_speculative: SGLang's default with speculation, "
            "server_args.py; the blog sets none), the plain one what its KV pool holds; "
            "host work 20 us a request, serial in the "
            "MTP server's iterations (SGLang's overlap scheduler is off with NEXTN)",
        ),
        notes=(
            "Speed-up (plain / MTP latency) by users: "
            + "; ".join(sides)
            + f". {error_summary(rows)}. Both arms' latency grows by about 420 ms a request "
            "for every further user from 8 to 64 users, as if each running request cost the "
            "server about 0.8 ms an iteration; the GPU work the model derives grows less (the "
            "batch-1 decode the hardware model derives is 3.7 ms of the measured 34 ms).",
            "What-if, chosen after seeing these rows (not scored): the host-bound SGLang "
            f"server of cases 36 and 37 ({h:.0f} us a running request, fitted on SpecForge "
            "#339's plain batch-4 row: Qwen3-30B-A3B on H100s under another harness; batch "
            "1 host-bound) predicts the plain arm at 2-64 users "
            f"{_signed(plain_what_if)}; the MTP arm at the speculative host factor 1 "
            f"{_signed(spec_what_if[1.0])}, at SGLang's {SGLANG_SPEC_FACTOR:.2f} (cases 36 "
            f"and 37) {_signed(spec_what_if[SGLANG_SPEC_FACTOR])}. At factor 1 that is a "
            f"median |error| of {100 * np.median(everything):.1f}% and a max of "
            f"{100 * everything.max():.1f}% over the 12 rows: the per-request cost found on "
            "#339 and #163 (docs/moe-growth.md) is not SpecForge's harness (this curve ran "
            "sglang.bench_serving), and this chain does not pay the tree's speculative "
            "factor.",
            "What-if, its hypothesis formed after seeing these rows (not scored): a stall once "
            "a request, its prefill. SGLang runs prefills eagerly; the model prices this "
            "case's eager prefill of a 512-token prompt at 70 ms (its batch-1 decode "
            "calibration and the eager model's 18.9 us a kernel), while the one public eager "
            "DeepSeek-V3 pass on SGLang, sgl-project/sglang PR #5090 (8x H200, one request, "
            f"--disable-cuda-graph), takes {eager_prefill_point()['ms']:.1f} ms (case 18, "
            "held out). With that pass as a measured one-token prefill (the 512-token prompt "
            f"then {prefill_ms:.0f} ms), decode and alpha re-calibrated at one user, the plain "
            f"arm at 2-64 users is {_signed(eager_plain)}, the MTP arm {_signed(eager_spec)} "
            f"(median |error| {100 * np.median(eager_all):.1f}%, max "
            f"{100 * eager_all.max():.1f}%, no host term, no speculative factor). Not "
            "adopted: the value is another server's (H200, April 2025, flashinfer MLA; this "
            "run: MI300X, aiter, August 2025) and what makes the eager DeepSeek-V3 pass cost "
            "it is not identified (case 18); this run's time to first token at one user, "
            "which sglang.bench_serving prints, would settle it.",
        ),
    )


def mtp_serving_cases() -> tuple[Case, ...]:
    return (case_dsv3_mtp_mi300x(),)
