"""The prompt and answer lengths a benchmark file says its requests had.

Read from (each writer's own fields):

- ``vllm bench serve --save-result`` (vllm/benchmarks/serve.py) and SGLang
  ``bench_serving --output-file`` (python/sglang/bench_serving.py), the same lineage:
  ``total_input_tokens`` and ``total_output_tokens`` over the ``completed`` requests give
  the means; with ``--save-detailed`` (vLLM) or ``--output-details`` (SGLang) also
  ``input_lens`` and ``output_lens``, one entry a request sent, a failed one with its
  prompt length and 0 output tokens and its entry in ``errors``, so the completed
  requests are those with an empty ``errors`` entry (every entry when the file has no
  ``errors`` list and as many entries as ``completed``; a failure whose HTTP status had
  no reason phrase has an empty entry too, told by its 0 output tokens, ``_completed``);
  both writers sum the completed requests' entries into the totals, which the entries
  must then match;
- SGLang ``bench_one_batch`` (python/sglang/bench_one_batch.py): ``input_len`` and
  ``output_len`` of a static batch, every request exactly those (random token ids, a
  fixed number of decode steps);
- SGLang ``bench_speculative`` (scripts/playground/bench_speculative.py):
  ``completion_tokens``, the mean answer of a record's requests; its prompts are the
  script's own texts, recorded as 0 tokens (a placeholder), so no prompt length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sim.calibration.importers.jsonfile import number
from sim.errors import SpecsimError
from sim.scenario.sections.bounds import MAX_OUTPUT_TOKENS

__all__ = ["RequestLengths", "fixed_lengths", "serving_lengths", "source_of", "token_count"]

#: Longest prompt a request can have (tokens): the scenario's bound on ``input_tokens``.
MAX_INPUT_TOKENS = 10 * MAX_OUTPUT_TOKENS


@dataclass(frozen=True, slots=True)
class RequestLengths:
    """What one run (a file, or a line of it) says of its requests' lengths.

    ``input_mean`` / ``output_mean``: mean prompt and answer tokens a completed request
    (None: the file does not say); ``requests``: how many completed (None: not recorded);
    ``input_lens`` / ``output_lens``: each completed request's, where the file lists them;
    ``exact``: every request had the mean lengths by construction (a static batch);
    ``input_key`` / ``output_key``: the fields the means come from."""

    source: str
    input_mean: float | None
    output_mean: float | None
    requests: int | None = None
    input_lens: tuple[int, ...] | None = None
    output_lens: tuple[int, ...] | None = None
    exact: bool = False
    input_key: str = "total_input_tokens / completed"
    output_key: str = "total_output_tokens / completed"


def _field(where: str | None, key: str) -> str:
    return f"{where}: {key}" if where else key


def _tokens(value: float, source: str, field: str, low: int, high: int) -> float:
    """``value`` if a token count in [low, high]; SpecsimError naming the field else."""
    if not low <= value <= high:
        raise SpecsimError(
            f"{value:g} is not a token count from {low} to {high:,}", source=source, field=field
        )
    return value


def _lens(record: dict[str, Any], key: str, source: str, where: str | None) -> list[int]:
    values = record.get(key)
    field = _field(where, key)
    if not isinstance(values, list):
        raise SpecsimError("expected a list of token counts", source=source, field=field)
    out = []
    for i, v in enumerate(values):
        ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_INPUT_TOKENS
        if not ok:
            raise SpecsimError(f"entry {i} is {v!r}, not a token count", source=source, field=field)
        out.append(v)
    return out


def _per_request(
    record: dict[str, Any], source: str, where: str | None, completed: int
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The completed requests' (prompt, answer) lengths of a detailed result; None when
    it lists none."""
    if record.get("input_lens") is None and record.get("output_lens") is None:
        return None
    ins = _lens(record, "input_lens", source, where)
    outs = _lens(record, "output_lens", source, where)
    if len(ins) != len(outs):
        raise SpecsimError(
            f"{len(outs)} entries against {len(ins)} in input_lens (one a request each)",
            source=source,
            field=_field(where, "output_lens"),
        )
    errors = record.get("errors")
    if isinstance(errors, list) and len(errors) == len(ins):
        done = _completed(errors, outs, completed, source, where)
    elif len(ins) == completed:
        done = list(range(len(ins)))
    else:
        raise SpecsimError(
            f"{len(ins)} entries for {completed} completed requests and no errors list to "
            "tell which failed",
            source=source,
            field=_field(where, "input_lens"),
        )
    return tuple(ins[i] for i in done), tuple(outs[i] for i in done)


def _completed(
    errors: list[Any], outs: list[int], completed: int, source: str, where: str | None
) -> list[int]:
    """The indices of the completed requests: those with an empty ``errors`` entry, or,
    when those are more than ``completed``, those of them with answer tokens.

    Both writers record a request that got an HTTP status other than 200 with ``error =
    response.reason or ""`` (sglang ``bench_serving.py`` ``async_request_*`` at the commit
    sim/calibration/importers/serving_runs.py cites; vLLM's benchmark request functions,
    the lineage it adapted, alike): a status line without a reason phrase leaves the entry
    empty, and ``calculate_metrics`` writes the failed request's ``output_lens`` entry 0
    and leaves it out of ``completed``. An empty entry of 0 answer tokens is then a
    failure when ``completed`` counts the others; SpecsimError naming ``errors`` when
    neither count is ``completed``."""
    clean = [i for i, e in enumerate(errors) if not e]
    if len(clean) == completed:
        return clean
    answered = [i for i in clean if outs[i] > 0]
    if len(answered) == completed:
        return answered
    raise SpecsimError(
        f"{len(clean)} requests without an error ({len(answered)} of them with answer tokens), "
        f"but completed is {completed}",
        source=source,
        field=_field(where, "errors"),
    )


def serving_lengths(
    record: dict[str, Any], source: str, where: str | None
) -> RequestLengths | None:
    """The lengths of a ``vllm bench serve`` or SGLang ``bench_serving`` result: the means
    from its totals, each completed request's where it lists them (checked against the
    totals); None when it has no totals (SpecsimError naming the field when a length is
    not a token count or the lists contradict the totals)."""
    keys = ("completed", "total_input_tokens", "total_output_tokens")
    if any(record.get(k) is None for k in keys):
        return None
    done, tin, tout = (number(record, k, source, where) for k in keys)
    if not (done >= 1 and done.is_integer()):
        return None  # no completed request: no lengths (the importer checks the count)
    completed = int(done)
    in_mean = _tokens(tin / completed, source, _field(where, keys[1]), 0, MAX_INPUT_TOKENS)
    out_mean = _tokens(tout / completed, source, _field(where, keys[2]), 1, MAX_OUTPUT_TOKENS)
    pairs = _per_request(record, source, where, completed)
    if pairs is None:
        return RequestLengths(source_of(source, where), in_mean, out_mean, completed)
    for key, lens, total in (("input_lens", pairs[0], tin), ("output_lens", pairs[1], tout)):
        if not math.isclose(sum(lens), total, rel_tol=0.0, abs_tol=0.5):
            total_key = "total_input_tokens" if key == "input_lens" else "total_output_tokens"
            raise SpecsimError(
                f"the completed requests' entries sum to {sum(lens):,}, {total_key} is {total:g}",
                source=source,
                field=_field(where, key),
            )
    return RequestLengths(
        source_of(source, where), in_mean, out_mean, completed, pairs[0], pairs[1]
    )


def token_count(record: dict[str, Any], key: str, source: str, where: str, low: int) -> int:
    """A whole number of tokens at ``record[key]``, at least ``low`` and at most the
    scenario's bound; SpecsimError naming the field otherwise."""
    value = number(record, key, source, where)
    high = MAX_OUTPUT_TOKENS if low >= 1 else MAX_INPUT_TOKENS
    _tokens(value, source, _field(where, key), low, high)
    if not value.is_integer():
        raise SpecsimError(
            f"{value:g} is not a whole number of tokens", source=source, field=_field(where, key)
        )
    return int(value)


def fixed_lengths(
    input_len: int | None, output_len: float, source: str, where: str, requests: int | None
) -> RequestLengths:
    """A static batch's lengths (``bench_one_batch``: every request exactly these); with
    ``input_len`` None, ``bench_speculative``'s mean answer of unrecorded prompts."""
    if input_len is None:
        _tokens(output_len, source, f"{where}: completion_tokens", 1, MAX_OUTPUT_TOKENS)
        return RequestLengths(
            source_of(source, where), None, output_len, requests, output_key="completion_tokens"
        )
    return RequestLengths(
        source_of(source, where),
        float(input_len),
        output_len,
        requests,
        exact=True,
        input_key="input_len",
        output_key="output_len",
    )


def source_of(source: str, where: str | None) -> str:
    """``FILE`` or ``FILE line N``."""
    return f"{source} {where}" if where else source
