"""``make bench``: the importers' parse time grows linearly with their input.

For each parser, the CPU time of an input 8x larger over that of the base input, both
measured in this run (minima of five interleaved rounds, benchmarks/timing.py, the garbage
collector off). A linear parser gives about 8; a quadratic one about 64 (the SGLang log
field pattern that was quadratic took 1.8 s at 10k characters and 28 s at 40k). Goal:
every ratio below 24. Not part of the test suite: timing assertions there flake on a
shared machine.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable

from timing import cpu_of, interleaved

from sim.calibration.importers.prometheus import parse_exposition
from sim.calibration.importers.sglang_log import parse_sglang_log
from sim.calibration.importers.sglang_server_args import parse_sglang_server_args
from sim.calibration.importers.vllm_bench import parse_vllm_bench
from sim.errors import SpecsimError

GOAL_RATIO = 24.0
#: Interleaved rounds per size.
ROUNDS = 5

CASES: tuple[tuple[str, Callable[[str], object], Callable[[int], str], int], ...] = (
    (
        "sglang log, many fields",
        parse_sglang_log,
        lambda n: "Decode batch, " + "k: v, " * n + "accept len: 2.0\n",
        20_000,
    ),
    (
        "sglang log, one long field",
        parse_sglang_log,
        lambda n: "Decode batch, #running-req: 1, " + "x" * (6 * n),
        20_000,
    ),
    (
        "sglang server_args",
        parse_sglang_server_args,
        lambda n: "server_args=ServerArgs(" + "a=1, " * n + "b=2)",
        2_000,
    ),
    (
        "vllm bench JSON",
        parse_vllm_bench,
        lambda n: json.dumps({"mean_tpot_ms": 3.0, "x": "y" * (8 * n)}),
        20_000,
    ),
    (
        "prometheus exposition",
        parse_exposition,
        lambda n: "".join(f'x_total{{engine="{i}",model_name="m"}} {i}.0\n' for i in range(n)),
        500,
    ),
)


def growth_ratio(parse: Callable[[str], object], make: Callable[[int], str], n: int) -> float:
    """CPU time at 8n over CPU time at n (dimensionless), minima of interleaved rounds
    (benchmarks/timing.py), the garbage collector off."""
    texts = {"n": make(n), "8n": make(8 * n)}

    def case(text: str) -> Callable[[], float]:
        def parse_quietly() -> None:
            with contextlib.suppress(SpecsimError):
                parse(text)

        return lambda: cpu_of(parse_quietly)

    gc.disable()
    try:
        timings = interleaved({name: case(text) for name, text in texts.items()}, ROUNDS)
    finally:
        gc.enable()
    return timings["8n"].min / timings["n"].min


def main() -> int:
    print("parser input growth: time(8n) / time(n); linear ~8, quadratic ~64, goal < 24")
    failed = 0
    for name, parse, make, n in CASES:
        ratio = growth_ratio(parse, make, n)
        ok = ratio < GOAL_RATIO
        failed += not ok
        print(f"  {name:<28} n={n:>6}  ratio {ratio:6.1f}  {'met' if ok else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
