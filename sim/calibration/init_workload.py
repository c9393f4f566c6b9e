"""The ``[workload]`` ``specsim init`` writes: the prompt and answer lengths of the user's
benchmark files (sim/calibration/importers/request_lengths.py), or of its flags.

Per side (prompt, answer), the mean:

- ``--input-tokens`` / ``--output-tokens`` when given (they override the files);
- else the mean over the runs' completed requests (a run: a file, or a line of one), the
  runs weighted by their completed requests where every run counts them, else each run
  alike (``bench_speculative`` does not record its requests);
- runs whose means differ by more than ``AGREE`` (10%) of the larger (and by more than a
  token) ran different workloads: refused in one line naming two of them, unless that
  side's flag says which to serve;
- rounded to whole tokens (the schema's ``input_tokens`` and ``output_tokens`` are counts).

The spread (``lengths`` and the log-space ``*_sigma``), honest about what is known:

- every run lists each request (vLLM ``--save-detailed``, SGLang ``--output-details``) or
  ran a static batch (``bench_one_batch``): measured. No spread: ``fixed``; a spread:
  ``lognormal`` matched to the requests' mean and variance, sigma^2 = ln(1 + var / mean^2)
  (population variance; the caps stay the schema's default, the 0.9999 quantile). The
  schema's ``empirical`` lengths need a trace CSV beside the scenario, which init does not
  write;
- some runs give only their totals: the spread of those that list requests, said so;
- none lists them: ``fixed`` at the means, written as an assumption (a spread is not
  known; a sharegpt-like workload's is wide, a ``random`` dataset's at range ratio 0 none).

A side no file gives (``bench_speculative`` records no prompt lengths) is left out: the
scenario's default (0 prompt tokens, 512 answer tokens) applies, and init's report says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.calibration.importers.request_lengths import RequestLengths
from sim.errors import SpecsimError
from sim.scenario.sections.workload import WorkloadSpec

__all__ = ["AGREE", "InitWorkload", "init_workload"]

#: Runs whose mean prompt (or answer) differs by more than this fraction of the larger ran
#: different workloads (a sampled dataset's mean moves by a few percent between runs).
AGREE = 0.10

_SIDES = {
    "input": ("prompt", "--input-tokens", "input_lens"),
    "output": ("answer", "--output-tokens", "output_lens"),
}


@dataclass(frozen=True, slots=True)
class InitWorkload:
    """The ``[workload]`` keys to write, each (dotted key, value, origin), and one line
    for init's report."""

    fields: tuple[tuple[str, Any, str], ...]
    summary: str


@dataclass(frozen=True, slots=True)
class _Side:
    mean: float
    origin: str
    #: log-space sigma and its origin; None: the spread is not known
    sigma: tuple[float, str] | None


def _names(runs: Sequence[RequestLengths]) -> str:
    return ", ".join(dict.fromkeys(r.source for r in runs))


def _mean(side: str, runs: Sequence[RequestLengths]) -> tuple[float, str]:
    """The runs' mean on ``side`` and its origin; SpecsimError when two disagree."""
    word, flag, _ = _SIDES[side]
    means = [(getattr(r, f"{side}_mean"), r) for r in runs]
    (low, a), (high, b) = min(means, key=lambda m: m[0]), max(means, key=lambda m: m[0])
    if high - low > max(AGREE * high, 1.0):
        raise SpecsimError(
            f"mean {word} {low:.6g} tokens here, {high:.6g} in {b.source}: different "
            f"workloads (more than {AGREE:.0%} apart); give {flag}, or one workload's files",
            source=a.source,
        )
    counts = [r.requests for r in runs]
    if all(r.exact for r in runs):
        mean = sum(m for m, _ in means) / len(means)
        how = f"every request's {word} in {'a' if len(runs) == 1 else 'each'} static batch"
    elif all(c is not None for c in counts):
        n = sum(c for c in counts if c is not None)
        mean = sum(m * (r.requests or 0) for m, r in means) / n
        its = "their" if len(runs) > 1 else "its"
        how = f"the mean {word} of {its} {n} completed requests"
    else:
        mean = sum(m for m, _ in means) / len(means)
        how = (
            f"the mean {word} of its requests"
            if len(runs) == 1
            else (f"the mean of the runs' mean {word}s (not every run counts its requests)")
        )
    field = ", ".join(dict.fromkeys(getattr(r, f"{side}_key") for r in runs))
    rounded = "" if float(mean).is_integer() else ", rounded"
    return mean, f"from {_names(runs)}: {how} ({field}: {mean:.6g}{rounded})"


def _spread(side: str, runs: Sequence[RequestLengths]) -> tuple[float, str] | None:
    """The log-space sigma of the requests' lengths on ``side`` and its origin; None
    when no run lists its requests."""
    word, _, lens_key = _SIDES[side]
    pool: list[int] = []
    listed = []
    for r in runs:
        lens = getattr(r, f"{side}_lens")
        if lens is not None:
            pool.extend(lens)
        elif r.exact and r.requests:
            pool.extend([round(getattr(r, f"{side}_mean"))] * r.requests)
        else:
            continue
        listed.append(r)
    if not pool or sum(pool) == 0:
        return None if not pool else (0.0, f"from {_names(listed)}: every {word} 0 tokens")
    n = len(pool)
    mean = sum(pool) / n
    var = sum((x - mean) ** 2 for x in pool) / n
    sigma = math.sqrt(math.log1p(var / mean**2))
    unlisted = [r for r in runs if r not in listed]
    rest = f"; {_names(unlisted)} give{'s' * (len(unlisted) == 1)} means only" if unlisted else ""
    how = f"{lens_key}" if not all(r.exact for r in listed) else "a static batch's lengths"
    return sigma, (
        f"from {_names(listed)}: the {n} requests' {word}s ({how}), mean {mean:.6g}, sd "
        f"{math.sqrt(var):.4g}: sigma = sqrt(ln(1 + sd^2 / mean^2)){rest}"
    )


def _side(side: str, runs: Sequence[RequestLengths], flag: int | None) -> _Side | None:
    known = [r for r in runs if getattr(r, f"{side}_mean") is not None]
    if flag is not None:
        spread = None
        if known:
            try:
                _mean(side, known)
            except SpecsimError:
                spread = None  # the files disagree: their spread is no one workload's
            else:
                spread = _spread(side, known)
        return _Side(float(flag), _SIDES[side][1], spread)
    if not known:
        return None
    mean, origin = _mean(side, known)
    return _Side(mean, origin, _spread(side, known))


def init_workload(
    lengths: Sequence[RequestLengths],
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> InitWorkload | None:
    """The ``[workload]`` keys of the runs' lengths and the flags (module docstring);
    None when neither gives any."""
    sides = {
        "input": _side("input", lengths, input_tokens),
        "output": _side("output", lengths, output_tokens),
    }
    if all(s is None for s in sides.values()):
        return None
    fields: list[tuple[str, Any, str]] = []
    tokens = {}
    for side, s in sides.items():
        if s is None:
            continue
        tokens[side] = max(round(s.mean), 1 if side == "output" else 0)
        fields.append((f"workload.{side}_tokens", tokens[side], s.origin))
    spread = {side: s.sigma for side, s in sides.items() if s is not None}
    if any(sig is not None and sig[0] > 0 for sig in spread.values()):
        fields.append(
            (
                "workload.lengths",
                "lognormal",
                f"from {_names(lengths)}: a lognormal matched to the requests' mean and "
                "variance on each side (caps: the 0.9999 quantile, the default)",
            )
        )
        for side, sig in spread.items():
            if side == "input" and tokens.get("input", 0) == 0:
                continue
            if sig is None:
                sig = (0.0, f"assumed: every {_SIDES[side][0]} at the mean (its spread is not "
                       "in the files)")  # fmt: skip
            fields.append((f"workload.{side}_sigma", round(sig[0], 6), sig[1]))
        shape = "lognormal"
    elif all(sig is not None for sig in spread.values()):
        fields.append(
            (
                "workload.lengths",
                "fixed",
                f"measured: every request in {_names(lengths)} had these lengths",
            )
        )
        shape = "fixed (measured)"
    elif lengths:
        fields.append(
            (
                "workload.lengths",
                "fixed",
                "assumed: every request at the mean lengths (the files give means only; "
                "vllm bench serve --save-detailed lists each request's)",
            )
        )
        shape = "fixed (assumed: the files give means only)"
    else:
        fields.append(
            (
                "workload.lengths",
                "fixed",
                "assumed: every request at the lengths given (lengths = 'lognormal' with "
                "input_sigma and output_sigma for a spread)",
            )
        )
        shape = "fixed (assumed)"
    default = WorkloadSpec.model_fields["output_tokens"].default
    prompt = f"{tokens['input']} prompt" if "input" in tokens else "prompt not given (default 0)"
    answer = (
        f"{tokens['output']} answer"
        if "output" in tokens
        else f"answer not given (default {default})"
    )
    summary = f"workload: {prompt} / {answer} tokens a request, {shape}"
    for side in ("input", "output"):
        if side not in tokens:
            summary += f"; {_SIDES[side][1]} sets the {_SIDES[side][0]}"
    return InitWorkload(tuple(fields), summary)
