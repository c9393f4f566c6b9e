"""What a Monte Carlo run would cost, estimated before it starts; runs that would not fit
in memory or finish in reasonable time are refused with the estimate.

The rates are measured, not guessed: simulated output tokens per second of one process on
the 2-core development machine (``benchmarks/bench_engines.py`` measures both engines;
a k = 3, alpha 0.7, jitter 0.2 scenario of 200 requests x 512 tokens gave 59 M tok/s for
``fast`` and 0.32 M tok/s for ``des``). They are rounded down, so an estimate errs long.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sim.errors import SpecsimError

#: Simulated output tokens per second of one worker process (see the module docstring).
TOKENS_PER_S: dict[str, float] = {"fast": 5.0e7, "des": 3.0e5}
#: Longest run accepted without a smaller size: a run that needs more is almost always a
#: typo (1e9 requests); six hours is a night's sweep point at most.
MAX_RUN_HOURS = 6.0
#: Most memory the per-request results may take (all replications x requests are kept:
#: tok/s, time, tokens, cycles, class, k + 1 accept counts, 4 phase times, 8 bytes each).
MAX_RESULT_BYTES = 4 * 1024**3


def result_bytes(replications: int, requests: int, num_steps: int) -> int:
    """Bytes of the per-request result arrays of a run, shape (R, Q, ...)."""
    return replications * requests * (5 + num_steps + 1 + 4) * 8


def run_hours(
    replications: int, requests: int, output_tokens: int, engine: str, workers: int
) -> float:
    """Estimated wall time of a run in hours (cycle fidelity)."""
    parallel = 1 if workers <= 1 else min(workers, os.cpu_count() or 1)  # no syscall for 1
    tokens = replications * requests * output_tokens
    return tokens / (TOKENS_PER_S.get(engine, TOKENS_PER_S["des"]) * parallel) / 3600.0


def check_run_size(
    replications: int,
    requests: int,
    output_tokens: int,
    num_steps: int,
    engine: str,
    workers: int,
    streamed: bool = False,
) -> None:
    """SpecsimError with the estimate when a run would not fit in memory or time. A
    streamed run folds each block of replications into statistics where it runs
    (sim/simulation/stream.py), but a block still holds the per-request arrays of at
    least one replication: that is what its memory check counts."""
    held = 1 if streamed else replications
    need = result_bytes(held, requests, num_steps)
    if need > MAX_RESULT_BYTES:
        raise SpecsimError(
            f"{held} replication{'' if held == 1 else 's'} x {requests} requests would hold "
            f"{need / 1024**3:.1f} GiB of per-request results (limit "
            f"{MAX_RESULT_BYTES / 1024**3:.0f} GiB): use fewer replications or requests",
            param="requests",
        )
    hours = run_hours(replications, requests, output_tokens, engine, workers)
    if hours > MAX_RUN_HOURS:
        raise SpecsimError(
            f"{replications} replications x {requests} requests x {output_tokens} tokens "
            f"would take about {hours:.3g} hours with the {engine} engine (limit "
            f"{MAX_RUN_HOURS:g} h): use fewer replications, requests or output tokens",
            param="replications",
        )


#: Simulated requests per second of one serving simulation (one policy, one replication)
#: in one process: 20,000 requests x 2 replications x 2 policies at 64 users took 62 s
#: more than 5,000 x 2 x 2 on the shared 2-core development machine (~970 a second);
#: halved so that an estimate errs long.
SERVING_REQUESTS_PER_S = 480.0
#: Memory one simulated request (of one replication, every policy) holds until the study is
#: summarised: resident memory grew 262 MB for 15,000 more requests x 2 replications in the
#: run above (~8.7 KB); rounded up to 20 KB, as at a thousand users more of them are in
#: flight at once.
SERVING_BYTES_PER_REQUEST = 20 * 1024
#: Most memory the requests of one study may hold at once.
MAX_SERVING_BYTES = 4 * 1024**3


def check_serving_size(
    simulations: int,
    replications: int,
    requests: int,
    workers: int,
    *,
    what: str = "simulations",
    source: str | None = None,
    grown: Mapping[str, tuple[float, str]] | None = None,
) -> None:
    """SpecsimError with the estimate when a serving study would not fit in memory or
    would run past ``MAX_RUN_HOURS``: ``simulations`` serving runs (load x policy) of
    ``replications`` x ``requests`` (warm-up included) each, ``workers`` processes. The
    message says what to lower.

    ``grown``: where each factor came from, ``{parameter: (times its default, what to
    lower)}`` (``{"concurrency": (14285.7, "loads")}``): the error names the parameter
    that grew the most (of those that feed the limit exceeded, more than its default),
    else ``source``, else the ``requests`` parameter."""
    grown = dict(grown or {})

    def blame(of: tuple[str, ...]) -> tuple[str | None, str | None, str]:
        """(source, parameter, what to lower) of the error."""
        found = [(f, name, what) for name, (f, what) in grown.items() if what in of and f > 1]
        if not found:
            return source, None if source else "requests", ", ".join(of[:-1]) + " or " + of[-1]
        _, name, what = max(found, key=lambda t: t[0])
        return None, name, what

    need = replications * requests * SERVING_BYTES_PER_REQUEST
    if need > MAX_SERVING_BYTES:
        where, param, lower = blame(("requests", "replications", "users"))
        raise SpecsimError(
            f"{replications} replication{'' if replications == 1 else 's'} x {requests:,} "
            f"requests would hold about {need / 1024**3:.1f} GiB of simulated requests "
            f"(limit {MAX_SERVING_BYTES / 1024**3:.0f} GiB): use fewer {lower}",
            source=where,
            param=param,
        )
    parallel = 1 if workers <= 1 else min(workers, os.cpu_count() or 1)
    hours = simulations * replications * requests / SERVING_REQUESTS_PER_S / parallel / 3600.0
    if hours > MAX_RUN_HOURS:
        where, param, lower = blame(("loads", "draft lengths", "users", "replications", "requests"))
        raise SpecsimError(
            f"{simulations:,} {what} x {replications} replications x {requests:,} requests "
            f"would take about {hours:.3g} hours (limit {MAX_RUN_HOURS:g} h): use fewer "
            f"{lower}",
            source=where,
            param=param,
        )
