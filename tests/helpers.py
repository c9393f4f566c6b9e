"""Small scenarios built in code for the Monte Carlo tests, and a fit or a study replayed
for the renderings of one command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict

#: A workload mix: chat with a Beta spread by concentration, code per position with a std.
MIXED = {
    "mix": [
        {"name": "chat", "weight": 0.6, "alpha": 0.55, "concentration": 8.0},
        {"name": "code", "weight": 0.4, "per_position": [0.9, 0.8, 0.7], "std": 0.08},
    ]
}


def make(
    acceptance: dict[str, Any],
    *,
    k: int = 3,
    tokens: int = 60,
    jitter: float = 0.0,
    requests: int = 6,
    replications: int = 2,
    topk: int = 1,
    num_draft_tokens: int | None = None,
) -> Scenario:
    speculation: dict[str, Any] = {"num_steps": k, "topk": topk}
    if num_draft_tokens is not None:
        speculation["num_draft_tokens"] = num_draft_tokens
    return scenario_from_dict(
        {
            "name": "t",
            "timing": {
                "decode_ms": 10.0,
                "verify_ms": 20.0,
                "draft_step_ms": 1.0,
                "draft_extend_ms": 2.0,
                "cycle_overhead_ms": 0.5,
                "jitter_cv": jitter,
            },
            "speculation": speculation,
            "acceptance": acceptance,
            "workload": {"output_tokens": tokens, "requests": requests},
            "simulation": {"replications": replications, "seed": 1},
            "targets": {"tok_s": [100.0]},
        },
        source="test",
    )


def mix_without_kernel_count(directory: Path) -> Path:
    """The shipped mix scenario (Kimi-K2.5, an MoE, ungraphed verify) written into
    ``directory`` without ``model.kernels_per_layer`` (and so with the verify's measured time
    as its GPU work, ``timing.verify_compute`` left at its default): a file whose layer-level
    pass is found wanting only after loading. Its rates are flat (no decay prior or shape
    error drawn): the study before the error re-builds no spread per draw (seconds)."""
    from tests.conftest import ROOT

    text = (ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml").read_text()
    for line in ("kernels_per_layer = 28\n", 'verify_compute = "decode"\n'):
        assert text.count(line) == 1, line
        text = text.replace(line, "")
    assert text.count("std = 0.05\n") == 1
    text = text.replace("std = 0.05\n", 'std = 0.05\nshape = "flat"\n')
    path = directory / "kimi-k25-8xpcie-eagle3-mix-no-kernels.toml"
    path.write_text(text)
    return path


def replay_once(
    fit: Callable[..., Any], ignoring: tuple[str | int, ...] = ()
) -> Callable[..., Any]:
    """``fit`` run once; later calls with the same arguments get its result again (a
    calibration or a study is deterministic in its inputs: the text, --verbose and --json
    renderings of one command need one run), other arguments fail the test. The keyword
    arguments named in ``ignoring``, and the positional ones at the indices it holds, are
    not compared (an executor, a progress bar or a serving study's point evaluator, made
    anew by each command from the same arguments: same seed, same output whatever runs
    it)."""
    done: list[tuple] = []

    def once(*args, **kwargs):
        kept = tuple(a for i, a in enumerate(args) if i not in ignoring)
        compared = {k: v for k, v in kwargs.items() if k not in ignoring}
        if not done:
            done.append((kept, compared, fit(*args, **kwargs)))
        assert (kept, compared) == done[0][:2], "the command asked for another run"
        return done[0][2]

    return once
