"""Monte Carlo: replications, seeds, worker processes and the summary statistics.

Seeds become generators here and only here: ``SeedSequence(seed).spawn(replications)``
gives one child per replication (``model_rng`` one more, for models built once per
run), and each child spawns the replication's three streams
(``ReplicationRngs``: requests, accept, timing; the SimPy engine derives one sub-stream
per request from them with ``jumped``). A replication reads only its own streams,
so results do not depend on ``workers`` (a process pool over blocks of replications), on
scheduling or on how the engines batch replications.

Statistics (``summarize``):
* per-request tok/s: mean, std (ddof 1), p5/p50/p95 over all requests; the 95% confidence
  interval of the mean from the replication means with Student's t (scipy.stats.t), R - 1
  degrees of freedom (with one replication, from the requests, which are independent at
  batch 1);
* accept length: pooled over all cycles (tokens emitted / cycles, as a server log reports
  it) and its pmf, beside the model's long-run pooled pmf (``AcceptanceModel.cycle_pmf``);
* cycle_ms: mean time per cycle, total and by phase;
* per target: P(a request's tok/s >= target) with a Wilson score interval (requests are
  independent and identically distributed in this model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from sim.acceptance import acceptance_model
from sim.cycletime import PHASES, CycleTimeModel, cycle_time_model
from sim.engines.common import EngineOutput, EnginePlan, ReplicationRngs
from sim.engines.des import run_des
from sim.engines.fast import run_fast
from sim.errors import SpecsimError
from sim.scenario import Scenario

ENGINES: dict[str, Callable[[EnginePlan, Sequence[ReplicationRngs]], EngineOutput]] = {
    "fast": run_fast,
    "des": run_des,
}

Progress = Callable[[int, int], None]


def replication_rngs(child: np.random.SeedSequence) -> ReplicationRngs:
    """The three independent streams of one replication from its SeedSequence child."""
    requests, accept, timing = child.spawn(3)
    return ReplicationRngs(
        requests=np.random.Generator(np.random.PCG64(requests)),
        accept=np.random.Generator(np.random.PCG64(accept)),
        timing=np.random.Generator(np.random.PCG64(timing)),
    )


#: Spawn key of the stream that builds a model shared by all replications before they run
#: (the layer-level pass-time pools of ``--fidelity layer``): child 2**32 - 1 of the root
#: SeedSequence, apart from the replication children 0..R-1.
MODEL_STREAM_KEY = 2**32 - 1


def model_rng(seed: int) -> np.random.Generator:
    """The generator for models built once per run (independent of replication streams)."""
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(MODEL_STREAM_KEY,)))
    )


@dataclass(frozen=True)
class MonteCarloResult:
    """R replications of Q requests of N output tokens each, at k = ``num_steps``.

    Arrays (read-only):
      tok_s            float (R, Q)   per-request tok/s, counting N tokens (not the overshoot)
      request_ms       float (R, Q)   per-request time from first cycle start to last cycle end
      request_tokens   int   (R, Q)   tokens counted per request (N each)
      emitted_tokens   int   (R, Q)   tokens the cycles emitted (N .. N + k: last cycle overshoot)
      cycles           int   (R, Q)   cycles per request
      request_class    int   (R, Q)   index into ``class_names`` (workload mix)
      accept_counts    int   (R, k+1) cycles that emitted L = j + 1 tokens
      phase_ms         float (R, 4)   total ms per phase, in ``PHASES`` order
    """

    scenario: Scenario
    engine: str
    seed: int
    replications: int
    requests: int
    output_tokens: int
    num_steps: int
    class_names: tuple[str, ...]
    tok_s: np.ndarray
    request_ms: np.ndarray
    request_tokens: np.ndarray
    emitted_tokens: np.ndarray
    cycles: np.ndarray
    request_class: np.ndarray
    accept_counts: np.ndarray
    phase_ms: np.ndarray

    @property
    def phases(self) -> tuple[str, ...]:
        return PHASES


def _run_block(
    engine: str, plan: EnginePlan, children: Sequence[np.random.SeedSequence]
) -> EngineOutput:
    return ENGINES[engine](plan, [replication_rngs(c) for c in children])


def _blocks(replications: int, engine: str, requests: int, output_tokens: int) -> list[range]:
    """Replication blocks: one each for the SimPy engine; for the fast engine, blocks of
    about 2 M simulated tokens so a progress bar moves and workers share the load."""
    size = 1 if engine == "des" else max(1, 2_000_000 // max(1, requests * output_tokens))
    return [range(i, min(i + size, replications)) for i in range(0, replications, size)]


def simulate(
    scenario: Scenario,
    *,
    engine: str = "fast",
    replications: int | None = None,
    requests: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    cycle_times: CycleTimeModel | None = None,
) -> MonteCarloResult:
    """Run the Monte Carlo of ``scenario``.

    None takes the value from the scenario (``simulation.replications``, ``workload.requests``,
    ``simulation.seed``). ``workers`` > 1 runs blocks of replications in that many processes
    (identical results). ``progress(done, total)`` is called as replications complete.
    ``cycle_times`` replaces the default cycle-time model (cost model + jitter).
    """
    if engine not in ENGINES:
        raise SpecsimError(
            f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", source="--engine"
        )
    r_n = scenario.simulation.replications if replications is None else replications
    q_n = scenario.workload.requests if requests is None else requests
    seed = scenario.simulation.seed if seed is None else seed
    for name, value in (("replications", r_n), ("requests", q_n), ("workers", workers)):
        if value < 1:
            raise SpecsimError(f"must be at least 1, got {value}", source=f"--{name}")
    if seed < 0:
        raise SpecsimError(f"must be >= 0, got {seed}", source="--seed")
    k = scenario.num_steps
    plan = EnginePlan(
        acceptance=acceptance_model(scenario.acceptance, k),
        cycle_times=cycle_times or cycle_time_model(scenario),
        output_tokens=scenario.workload.output_tokens,
        requests=q_n,
    )
    children = np.random.SeedSequence(seed).spawn(r_n)
    blocks = _blocks(r_n, engine, q_n, plan.output_tokens)
    parts: dict[int, EngineOutput] = {}
    done = 0
    if workers == 1 or len(blocks) == 1:
        for i, block in enumerate(blocks):
            parts[i] = _run_block(engine, plan, [children[j] for j in block])
            done += len(block)
            if progress:
                progress(done, r_n)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {
                pool.submit(_run_block, engine, plan, [children[j] for j in block]): i
                for i, block in enumerate(blocks)
            }
            for fut in as_completed(futures):
                i = futures[fut]
                parts[i] = fut.result()
                done += len(blocks[i])
                if progress:
                    progress(done, r_n)
    out = EngineOutput.concatenate([parts[i] for i in range(len(blocks))])
    arrays = {
        "tok_s": out.tok_s,
        "request_ms": out.request_ms,
        "request_tokens": np.full(out.tok_s.shape, plan.output_tokens, dtype=np.int64),
        "emitted_tokens": out.emitted_tokens,
        "cycles": out.cycles,
        "request_class": out.request_class,
        "accept_counts": out.accept_counts,
        "phase_ms": out.phase_ms,
    }
    for a in arrays.values():
        a.setflags(write=False)
    return MonteCarloResult(
        scenario=scenario,
        engine=engine,
        seed=seed,
        replications=r_n,
        requests=q_n,
        output_tokens=plan.output_tokens,
        num_steps=k,
        class_names=plan.acceptance.class_names,
        **arrays,
    )


# --------------------------------------------------------------------------- statistics


def mean_ci95(values: np.ndarray) -> tuple[float, float, float]:
    """Mean of the replication means (R,) and its 95% t interval (R - 1 degrees of freedom)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if values.size < 2:
        return mean, mean, mean
    se = float(values.std(ddof=1)) / math.sqrt(values.size)
    if se == 0.0:
        return mean, mean, mean
    half = float(stats.t.ppf(0.975, values.size - 1)) * se
    return mean, mean - half, mean + half


def wilson_ci95(successes: int, trials: int) -> tuple[float, float]:
    """Wilson score 95% interval of a binomial proportion (scipy.stats.binomtest)."""
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class TargetProbability:
    """P(a request's tok/s >= ``tok_s``) and its 95% interval."""

    tok_s: float
    p_at_least: float
    ci95: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "p_at_least": self.p_at_least,
            "p_at_least_ci95": list(self.ci95),
        }


@dataclass(frozen=True)
class ClassSummary:
    """Per-class share of requests and mean tok/s (workload mix only)."""

    name: str
    share: float
    mean_tok_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "share": self.share, "mean_tok_s": self.mean_tok_s}


@dataclass(frozen=True)
class Summary:
    """Statistics of a ``MonteCarloResult`` (see module docstring for their definitions).

    ``accept_pmf``/``theory_pmf`` have shape (k + 1,), entry j for L = j + 1.
    """

    engine: str
    seed: int
    replications: int
    requests: int
    tok_s_mean: float
    tok_s_std: float
    tok_s_ci95: tuple[float, float]
    tok_s_p5: float
    tok_s_p50: float
    tok_s_p95: float
    accept_length_mean: float
    accept_pmf: np.ndarray
    theory_pmf: np.ndarray
    theory_accept_length: float
    cycle_ms: dict[str, float]
    targets: tuple[TargetProbability, ...]
    classes: tuple[ClassSummary, ...]

    def to_dict(self) -> dict[str, Any]:
        """The Monte Carlo keys of ``specsim run --json`` (plain floats, JSON-ready)."""
        return {
            "engine": self.engine,
            "seed": self.seed,
            "replications": self.replications,
            "requests": self.requests,
            "throughput_tok_s": {
                "mean": self.tok_s_mean,
                "std": self.tok_s_std,
                "ci95": list(self.tok_s_ci95),
                "p5": self.tok_s_p5,
                "p50": self.tok_s_p50,
                "p95": self.tok_s_p95,
            },
            "accept_length": {
                "mean": self.accept_length_mean,
                "pmf": self.accept_pmf.tolist(),
                "theory_mean": self.theory_accept_length,
                "theory_pmf": self.theory_pmf.tolist(),
            },
            "cycle_ms": dict(self.cycle_ms),
            "targets": [t.to_dict() for t in self.targets],
            "classes": [c.to_dict() for c in self.classes],
        }


def throughput_mean_ci95(result: MonteCarloResult) -> tuple[float, float, float]:
    """Mean per-request tok/s and its 95% t interval over the replication means.

    With one replication the requests themselves are the sample.
    """
    tok = result.tok_s
    return mean_ci95(tok.mean(axis=1) if result.replications > 1 else tok.ravel())


def pooled_accept_length(result: MonteCarloResult) -> float:
    """Mean tokens per cycle over every simulated cycle (as a server log reports it)."""
    counts = result.accept_counts.sum(axis=0)  # (k + 1,)
    return float(counts @ np.arange(1, result.num_steps + 2) / counts.sum())


def target_probabilities(
    result: MonteCarloResult, targets: Sequence[float]
) -> tuple[TargetProbability, ...]:
    """P(a request's tok/s >= t) with its Wilson 95% interval, for each target t."""
    flat = result.tok_s.ravel()
    rows = []
    for t in targets:
        hits = int((flat >= t).sum())
        rows.append(TargetProbability(float(t), hits / flat.size, wilson_ci95(hits, flat.size)))
    return tuple(rows)


def summarize(result: MonteCarloResult, targets: Sequence[float] | None = None) -> Summary:
    """Statistics of a Monte Carlo result; ``targets`` default to the scenario's."""
    if targets is None:
        targets = result.scenario.target_tok_s
    tok = result.tok_s
    flat = tok.ravel()
    mean, lo, hi = throughput_mean_ci95(result)
    p5, p50, p95 = (float(x) for x in np.percentile(flat, [5, 50, 95]))
    counts = result.accept_counts.sum(axis=0)
    n_cycles = int(counts.sum())
    model = acceptance_model(result.scenario.acceptance, result.num_steps)
    phase_tot = result.phase_ms.sum(axis=0)
    cycle_ms = {"mean": float(phase_tot.sum() / n_cycles)}
    cycle_ms.update({p: float(phase_tot[i] / n_cycles) for i, p in enumerate(PHASES)})
    classes = []  # only for a workload mix
    for i, name in enumerate(result.class_names if len(result.class_names) > 1 else ()):
        rows = result.request_class == i
        share = float(rows.mean())
        classes.append(ClassSummary(name, share, float(tok[rows].mean()) if rows.any() else 0.0))
    return Summary(
        engine=result.engine,
        seed=result.seed,
        replications=result.replications,
        requests=result.requests,
        tok_s_mean=mean,
        tok_s_std=float(flat.std(ddof=1)) if flat.size > 1 else 0.0,
        tok_s_ci95=(lo, hi),
        tok_s_p5=p5,
        tok_s_p50=p50,
        tok_s_p95=p95,
        accept_length_mean=pooled_accept_length(result),
        accept_pmf=counts / n_cycles,
        theory_pmf=model.cycle_pmf(),
        theory_accept_length=model.cycle_mean_accept_length(),
        cycle_ms=cycle_ms,
        targets=target_probabilities(result, targets),
        classes=tuple(classes),
    )
