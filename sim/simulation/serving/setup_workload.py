"""A scenario's ``[workload]`` and arrivals as the requests a serving plan runs: the
arrival pattern (a trace, Poisson or a closed loop) and the load in words, the requests'
lengths (fixed, lognormal, a trace's marginals, or a closed-loop job over a file's rows in
order), measured and warm-up counts, and the requests' mean tokens; each with the notes it
adds to the setup's assumptions (sim/simulation/serving/setup.py ``serving_setup``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.special import ndtri

from sim.binding.bound import Bound
from sim.errors import SpecsimError
from sim.scenario.schema import Scenario
from sim.scenario.sections.serving import ServingSpec
from sim.scenario.sections.workload import UNSTATED_PROMPTS, WorkloadSpec
from sim.simulation.serving.lengths import Empirical, Fixed, LengthDistribution, LogNormal
from sim.simulation.serving.traces import read_trace
from sim.simulation.serving.workload import ClosedLoop, Poisson, Tasks, Trace, Workload

__all__ = [
    "LOGNORMAL_CAP_QUANTILE",
    "arrivals_of",
    "mean_tokens_of",
    "ordered_workload",
    "plain_workload",
]

#: Quantile used as the default cap of a lognormal length (4 standard normal deviations
#: would be 0.99997; 0.9999 keeps the cap within ~3.7 sigma).
LOGNORMAL_CAP_QUANTILE = 0.9999


def _resolve(path: str, base_dir: Path | None) -> Path:
    """``path`` as given when absolute (or without ``base_dir``), else under ``base_dir``."""
    p = Path(path)
    return p if p.is_absolute() or base_dir is None else base_dir / p


def _lognormal(mean: int, sigma: float, cap: int | None, low: int) -> LogNormal:
    """A lognormal length of mean ``mean`` tokens and log-sd ``sigma``, at least ``low``;
    without a ``cap``, mu = ln(mean) - sigma^2 / 2 and the cap is
    max(mean, ceil(exp(mu + sigma * z))), z the standard normal's
    ``LOGNORMAL_CAP_QUANTILE`` quantile."""
    if cap is None:
        mu = math.log(mean) - sigma**2 / 2
        cap = max(mean, math.ceil(math.exp(mu + sigma * ndtri(LOGNORMAL_CAP_QUANTILE))))
    return LogNormal(float(mean), sigma, cap, min_tokens=low)


def _lengths(
    w: WorkloadSpec, base_dir: Path | None, notes: list[str]
) -> tuple[LengthDistribution, LengthDistribution]:
    """The (input, output) length distributions ``workload.lengths`` names: fixed,
    lognormal, or the empirical marginals of ``lengths_trace``."""
    n_in = w.input_tokens or 0
    if w.prompts_unstated:
        notes.append(UNSTATED_PROMPTS)
    if w.lengths in (None, "fixed"):
        notes.append(f"lengths: fixed, {n_in} prompt and {w.output_tokens} output tokens")
        return Fixed(n_in), Fixed(w.output_tokens)
    if w.lengths == "lognormal":
        assert w.output_sigma is not None
        out = _lognormal(w.output_tokens, w.output_sigma, w.output_max_tokens, 1)
        inp: LengthDistribution = (
            _lognormal(n_in, w.input_sigma or 0.0, w.input_max_tokens, 1) if n_in else Fixed(0)
        )
        notes.append(
            f"lengths: lognormal, means {n_in} / {w.output_tokens} tokens, caps "
            f"{inp.max_tokens} / {out.max_tokens}"
            + ("" if w.output_max_tokens else f" (default: the {LOGNORMAL_CAP_QUANTILE} quantile)")
        )
        return inp, out
    assert w.lengths_trace is not None
    trace = read_trace(_resolve(w.lengths_trace, base_dir)).trace
    notes.append(
        f"lengths: empirical marginals of {trace.size} row{'s' * (trace.size != 1)} of "
        f"{w.lengths_trace} "
        "(input and output drawn independently)"
    )
    return (
        Empirical(tuple(trace.input_tokens.tolist())),
        Empirical(tuple(trace.output_tokens.tolist())),
    )


def arrivals_of(
    bound: Bound, serving: ServingSpec, base_dir: Path | None, notes: list[str]
) -> tuple[ClosedLoop | Poisson | Trace, str]:
    """The scenario's arrivals (a trace, Poisson or a closed loop) and the load in words."""
    if serving.trace is not None:
        names = bound.acceptance.class_names if bound.num_steps else ()
        window = serving.trace_window_s
        read = read_trace(
            _resolve(serving.trace, base_dir),
            names,
            fmt=serving.trace_format,
            rate_scale=serving.trace_rate_scale,
            window_s=(window[0], window[1]) if window is not None else None,
        )
        trace = read.trace
        notes.extend(read.notes)
        load = (
            f"trace {serving.trace} ({'' if read.fmt == 'specsim' else read.fmt + ' format, '}"
            f"{trace.size} "
            f"request{'s' * (trace.size != 1)})"
        )
        return trace, load
    if serving.rate_per_s is not None:
        return Poisson(serving.rate_per_s), f"Poisson arrivals at {serving.rate_per_s:g} requests/s"
    users = serving.concurrency or 1
    load = f"closed loop of {users} user{'s' if users > 1 else ''}" + (
        f", think time {serving.think_time_ms:g} ms" if serving.think_time_ms else ""
    )
    if serving.concurrency is None:
        notes.append("load: no serving.concurrency, rate_per_s or trace given; one user")
    return ClosedLoop(users, serving.think_time_ms), load


def _trace_workload(
    scenario: Scenario, arrivals: Trace, trace_name: str | None, source: str, notes: list[str]
) -> tuple[Workload, str | None]:
    """A trace's workload (its rows' lengths; ``--requests`` replays its first rows) and
    the load in words when only the first rows are replayed."""
    w = scenario.workload
    warmup = w.warmup_requests if w.warmup_requests is not None else arrivals.size // 10
    if warmup >= arrivals.size:
        raise SpecsimError(
            f"warmup_requests ({warmup}) leaves none of the trace's {arrivals.size} "
            f"request{'s' * (arrivals.size != 1)}",
            source=source,
            field="workload.warmup_requests",
        )
    rows = arrivals.size
    load = None
    overrides = scenario.origins.overrides
    if "workload.requests" in overrides:  # --requests, --set: the first rows
        requests = w.requests
        if warmup + requests > rows:
            raise SpecsimError(
                f"{requests} measured requests after {warmup} warm-up need "
                f"{warmup + requests} rows; the trace {trace_name} has {rows}",
                source=overrides["workload.requests"],
                field="workload.requests",
            )
        arrivals = arrivals.head(warmup + requests)
        load = f"trace {trace_name} (the first {arrivals.size} of its {rows} requests)"
        notes.append(
            f"lengths: from the trace; {warmup} warm-up and {requests} measured requests: "
            f"the trace's first {arrivals.size} of {rows} rows replayed (workload.requests "
            f"set by {overrides['workload.requests']})"
        )
    else:
        requests = rows - warmup
        notes.append(f"lengths: from the trace; {warmup} warm-up and {requests} measured requests")
        if "workload.requests" in scenario.origins.given:
            notes.append(
                f"requests: workload.requests ({w.requests}) does not apply to a trace: "
                "every row is replayed (--requests N replays its first warm-up + N rows)"
            )
    # the lengths come from the rows: the workload's distributions are unused
    return Workload(arrivals, Fixed(1), Fixed(0), requests=requests, warmup=warmup), load


def ordered_workload(
    scenario: Scenario,
    arrivals: ClosedLoop | Poisson | Trace,
    class_names: tuple[str, ...],
    base_dir: Path | None,
    source: str,
    notes: list[str],
) -> tuple[Workload, str]:
    """``lengths = 'ordered'``: the closed loop's users as a job over the rows of
    ``lengths_trace`` in file order (``--requests N``: its first N rows), measured whole;
    the workload's length distributions are the rows' marginals (their means and bounds:
    what the studies read), the requests the rows themselves. The load in words."""
    w = scenario.workload
    if not isinstance(arrivals, ClosedLoop):
        given = "serving.trace" if isinstance(arrivals, Trace) else "serving.rate_per_s"
        raise SpecsimError(
            f"'ordered' replays a closed-loop job (serving.concurrency users); {given} gives "
            "open arrivals: use lengths = 'empirical' with them",
            source=source,
            field="workload.lengths",
        )
    assert w.lengths_trace is not None
    tasks = Tasks.of_trace(read_trace(_resolve(w.lengths_trace, base_dir), class_names).trace)
    rows = tasks.size
    overrides = scenario.origins.overrides
    if "workload.requests" in overrides:  # --requests, --set: the first rows
        if w.requests > rows:
            raise SpecsimError(
                f"{w.requests} requests need {w.requests} tasks; {w.lengths_trace} has {rows}",
                source=overrides["workload.requests"],
                field="workload.requests",
            )
        tasks = tasks.head(w.requests)
    elif "workload.requests" in scenario.origins.given:
        notes.append(
            f"requests: workload.requests ({w.requests}) does not apply to an ordered job: "
            "every row is sent (--requests N sends its first N)"
        )
    n = tasks.size
    notes.append(
        f"lengths: ordered, the {n} tasks of {w.lengths_trace} in file order "
        f"({'all' if n == rows else f'the first {n} of {rows}'} rows; mean "
        f"{float(tasks.input_tokens.mean()):.1f} prompt and "
        f"{float(tasks.output_tokens.mean()):.1f} output tokens); the job measured whole, "
        "from its first request to its last answer (no warm-up)"
    )
    job = ClosedLoop(arrivals.users, arrivals.think_ms, n, 1, tasks)
    workload = Workload(
        job,
        Empirical(tuple(tasks.output_tokens.tolist())),
        Empirical(tuple(tasks.input_tokens.tolist())),
        requests=n,
        warmup=0,
    )
    users = f"{arrivals.users} user{'s' * (arrivals.users != 1)}"
    think = f", think time {arrivals.think_ms:g} ms" if arrivals.think_ms else ""
    return workload, f"job of {n} tasks of {w.lengths_trace} in order, {users}{think}"


def plain_workload(
    scenario: Scenario,
    arrivals: ClosedLoop | Poisson | Trace,
    base_dir: Path | None,
    source: str,
    notes: list[str],
) -> tuple[Workload, str | None]:
    """The requests of ``arrivals``: lengths, measured and warm-up counts (and the load in
    words when a trace is cut to its first rows)."""
    if isinstance(arrivals, Trace):
        trace_name = scenario.serving.trace if scenario.serving is not None else None
        return _trace_workload(scenario, arrivals, trace_name, source, notes)
    w = scenario.workload
    inp, out = _lengths(w, base_dir, notes)
    warmup = w.warmup_requests
    if warmup is None:
        users = arrivals.users if isinstance(arrivals, ClosedLoop) else 0
        warmup = max(users, w.requests // 10)
        notes.append(
            f"warm-up: {warmup} {'request' if warmup == 1 else 'requests'} discarded (default)"
        )
    return Workload(arrivals, out, inp, requests=w.requests, warmup=warmup), None


def mean_tokens_of(workload: Workload) -> tuple[float, float]:
    """Mean (input, output) tokens of the workload's requests (a trace's: its rows')."""
    arrivals = workload.arrivals
    if isinstance(arrivals, Trace):
        return float(np.mean(arrivals.input_tokens)), float(np.mean(arrivals.output_tokens))
    return workload.input_tokens.mean, workload.output_tokens.mean
