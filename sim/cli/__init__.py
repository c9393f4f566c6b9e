"""The ``specsim`` command: thin click commands over the library API.

Each command module parses its options, calls one library function and prints or writes
the result; its library imports happen inside the command. ``SpecsimError`` (bad input)
becomes one line on stderr and exit status 2 (sim/cli/group.py). Commands are registered
here, explicitly, by module and attribute, and imported only when invoked (start-up:
``specsim --help`` imports no command module; ``specsim run`` imports only its own). The
help line of each is kept beside it (tests/cli/test_group.py checks it against the
command's own docstring).
"""

from __future__ import annotations

from sim.cli.group import main

#: Command name -> (module, attribute, first paragraph of the command's help).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "allreduce": (
        "sim.cli.hardware",
        "allreduce",
        ("Time of one all-reduce: {us, algorithm, protocol} (NCCL's tuner / custom all-reduce)."),
    ),
    "best-k": (
        "sim.cli.best_k",
        "best_k",
        "Best k per batch size for an objective, as a vLLM table and an SGLang threshold.",
    ),
    "calibrate": (
        "sim.cli.calibrate",
        "calibrate_command",
        "Fit timings and acceptance to measurements; report them and write a scenario.",
    ),
    "capacity": (
        "sim.cli.capacity",
        "capacity",
        "Highest Poisson rate at which a share of requests meets the TTFT and TPOT limits.",
    ),
    "compare": (
        "sim.cli.compare",
        "compare",
        (
            "Baseline, speculative tok/s with CI, accept length, cycle breakdown and required "
            "alpha per target for each SCENARIO (--set applies to all), ratios to the first."
        ),
    ),
    "controllers": (
        "sim.cli.controllers",
        "controllers",
        (
            "Replay SGLang adaptive speculative decoding and vLLM dynamic speculative decoding on"
            " a workload whose class mix (and load) changes, against the static best-k table, "
            "every fixed k and plain decoding, on the same requests."
        ),
    ),
    "convert": (
        "sim.cli.convert",
        "convert",
        (
            "Convert one acceptance metric into all the others (a tree's accept length into its "
            "top-1 and rank rates with --topk, --num-draft-tokens and a rank profile)."
        ),
    ),
    "crossover": (
        "sim.cli.crossover",
        "crossover",
        ("Where speculation's paired gain crosses 1 as load grows, per metric and draft length."),
    ),
    "hardware": (
        "sim.cli.hardware",
        "hardware",
        "Every pass taken apart (compute, all-reduces, launch) and verify what-ifs.",
    ),
    "keys": (
        "sim.cli.keys",
        "keys",
        "The sections of a scenario file; with SECTION (or a dotted prefix such as "
        "serving.kv) its keys: type, unit, default and bounds (--json: the JSON Schema).",
    ),
    "init": (
        "sim.cli.init",
        "init_command",
        "Write a commented scenario of a server from its model's config.json, GPU, engine "
        "and drafter; with measured figures, calibrated to them.",
    ),
    "plot": (
        "sim.cli.plot",
        "plot",
        (
            "Figures from a sweep directory (or its sweep.json), or the --json file of run, "
            "search, search --solve, compare, serve, crossover, best-k, capacity, controllers "
            "or tree-load (dispatched on its ``kind``)."
        ),
    ),
    "run": (
        "sim.cli.run",
        "run",
        (
            "Throughput, accept length, cycle breakdown and what each target needs, in closed "
            "form and as a Monte Carlo distribution over requests."
        ),
    ),
    "search": (
        "sim.cli.search",
        "search",
        "Lowest acceptance rate (per target and per k) reaching each tok/s target.",
    ),
    "serve": (
        "sim.cli.serve",
        "serve",
        (
            "Serve the scenario under concurrency: TTFT, TPOT, ITL, per-user and aggregate tok/s,"
            " with speculation and without it on the same arrivals (paired speedup)."
        ),
    ),
    "sweep": (
        "sim.cli.sweep",
        "sweep",
        "Run the scenario over a grid of overrides; re-running resumes a stopped sweep.",
    ),
    "tree-load": (
        "sim.cli.tree_load",
        "tree_load",
        (
            "Where a draft tree stops beating the chain as concurrency grows: plain decoding, "
            "each chain and each tree on the same users at every load (serving simulation), the "
            "paired tree / chain ratio with its 90% interval from inputs and model, the "
            "crossover and the best draft per load."
        ),
    ),
    "validate": (
        "sim.cli.validate",
        "validate",
        "Validate each SCENARIO file; exit status 2 if any is invalid.",
    ),
}

main.register_lazy(COMMANDS)

__all__ = ["COMMANDS", "main"]
