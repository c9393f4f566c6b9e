"""``vllm bench serve --save-result`` JSON: speculative-decoding and latency figures.

Writer: vllm-project/vllm ``vllm/benchmarks/serve.py`` (``benchmark()`` builds the result,
``main_async()`` writes it with ``json.dump``: one line; ``--append-result`` adds one object
a line). The speculative keys (vLLM PR #31739) are server counter deltas over the run:

- ``spec_decode_acceptance_length`` = 1 + accepted / drafts (bonus token included);
- ``spec_decode_acceptance_rate`` = accepted / draft tokens x 100 (a **percent**);
- ``spec_decode_per_position_acceptance_rates`` = accepted at position i / drafts
  (**fractions**, unconditional: the cumulative rates c_1..c_k);
- ``spec_decode_num_drafts``, ``spec_decode_draft_tokens``, ``spec_decode_accepted_tokens``.

Latencies: ``mean_tpot_ms`` is per request (e2e - TTFT) / (output tokens - 1), averaged
over requests; ``mean_itl_ms`` is the mean gap between streamed chunks, and one chunk
carries a whole verify step's tokens, so under speculation ITL is the step time and TPOT
the step time / accept length. ``max_concurrency`` 1 (one request at a time) is the
batch-1 server a scenario describes; other runs give acceptance only. The context its
passes ran at, on average over a request's decode: the mean prompt plus half the mean
answer, (``total_input_tokens`` + ``total_output_tokens`` / 2) / ``completed``. Its
requests' prompt and answer lengths (the means, and each request's with
``--save-detailed``: sim/calibration/importers/request_lengths.py) are what ``specsim
init`` writes as the served workload.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import load_objects, number
from sim.calibration.importers.physical import check_step_ms
from sim.calibration.importers.request_lengths import RequestLengths, serving_lengths
from sim.errors import SpecsimError

ACCEPT_LENGTH = "spec_decode_acceptance_length"


#: Most requests a run can have in flight (``max_concurrency``): a million.
MAX_CONCURRENCY = 1_000_000


@dataclass(frozen=True, slots=True)
class VllmBenchRun:
    """One ``vllm bench serve`` result; speculative fields None for a run without them."""

    source: str
    line: int
    model: str | None
    max_concurrency: int | None
    completed: int
    mean_tpot_ms: float | None
    std_tpot_ms: float | None
    mean_itl_ms: float | None
    output_throughput: float | None
    accept_length: float | None
    acceptance_rate_percent: float | None
    num_drafts: float | None
    draft_tokens: float | None
    accepted_tokens: float | None
    cumulative: tuple[float, ...]
    #: Mean prompt + half the mean answer (tokens); None where the file lacks the totals.
    context_tokens: float | None = None
    #: The requests' prompt and answer lengths (means, and each request's with
    #: ``--save-detailed``); None where the file lacks the totals.
    lengths: RequestLengths | None = None
    #: Requests a second it was sent at (``request_rate``, inf: all at once); None where
    #: the file does not say.
    request_rate: float | None = None

    @property
    def num_spec_tokens(self) -> int | None:
        """k: per-position entries, else draft tokens / drafts; None without speculation."""
        if self.cumulative:
            return len(self.cumulative)
        if self.num_drafts and self.draft_tokens:
            return round(self.draft_tokens / self.num_drafts)
        return None

    @property
    def speculative(self) -> bool:
        return self.accept_length is not None

    @property
    def batch1(self) -> bool:
        """One request at a time: its TPOT is the per-request speed a scenario models."""
        return self.max_concurrency == 1

    @property
    def tok_s(self) -> float | None:
        """Per-request decode tok/s, 1000 / mean TPOT."""
        return 1000.0 / self.mean_tpot_ms if self.mean_tpot_ms else None

    def figures(self) -> dict[str, Any]:
        """The run's figures as read (its lengths left out: init writes them, see
        sim/calibration/init_workload.py)."""
        figures = asdict(self)
        del figures["lengths"], figures["request_rate"]
        return {
            "format": "vllm bench serve JSON",
            **figures,
            "num_spec_tokens": self.num_spec_tokens,
        }


def request_count(value: Any, source: str, field: str) -> int | None:
    """A run's ``max_concurrency``: None when absent or null (no limit, vLLM's and
    SGLang's default), else a count of requests from 1 to ``MAX_CONCURRENCY``;
    SpecsimError naming ``field`` otherwise."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_CONCURRENCY:
        return value
    raise SpecsimError(
        f"{value!r} is not a request count from 1 to {MAX_CONCURRENCY:,}",
        source=source,
        field=field,
    )


def request_rate(value: Any) -> float | None:
    """A run's ``request_rate`` (requests a second; inf: every request sent at once, both
    clients' default): a positive number, or vLLM's ``"inf"`` / SGLang's ``Infinity``;
    None for anything else (never fitted: it only tells ``init --replay`` whether a run
    without a concurrency limit sent every request at once)."""
    if value == "inf":
        return math.inf
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return float(value)
        except OverflowError:  # an integer literal of hundreds of digits: not a rate
            return None
    return None


def vllm_mark(record: dict[str, Any]) -> str | None:
    """The first key of ``record`` that only ``vllm bench serve --save-result`` writes
    (``model_id``, a ``spec_decode_*`` counter: vllm/benchmarks/serve.py), else None."""
    return next((k for k in record if k == "model_id" or k.startswith("spec_decode_")), None)


def sglang_mark(record: dict[str, Any]) -> str | None:
    """The key that makes ``record`` an SGLang ``bench_serving`` result: ``accept_length``
    or ``dataset_name`` (python/sglang/bench_serving.py), which vLLM's result does not
    write, in a record without a ``vllm_mark``; else None."""
    if vllm_mark(record) is not None:
        return None
    return next((k for k in ("accept_length", "dataset_name") if k in record), None)


def _run(record: dict[str, Any], source: str, line: int) -> VllmBenchRun:
    where = f"line {line}" if line > 1 else None
    mark = sglang_mark(record)
    if mark is not None:  # read as vLLM's, a speculative TPOT would be a plain decode's
        raise SpecsimError(
            "an sglang.bench_serving result (a key vLLM's does not write), not vllm bench "
            "serve's: give it as --sglang-bench",
            source=source,
            field=f"{where}: {mark}" if where else mark,
        )

    def opt(key: str) -> float | None:
        return number(record, key, source, where) if record.get(key) is not None else None

    cumulative = record.get("spec_decode_per_position_acceptance_rates") or []
    if not isinstance(cumulative, list) or len(cumulative) > 64:
        raise SpecsimError(
            "expected a list of at most 64 rates",
            source=source,
            field="spec_decode_per_position_acceptance_rates",
        )
    rates = tuple(
        number({"rate": c}, "rate", source, "spec_decode_per_position_acceptance_rates")
        for c in cumulative
    )
    if any(not 0.0 <= c <= 1.0 for c in rates):
        raise SpecsimError(
            "rates must be fractions in [0, 1]",
            source=source,
            field="spec_decode_per_position_acceptance_rates",
        )
    al = opt(ACCEPT_LENGTH)
    k = len(rates) or None
    if al is not None and (al < 1.0 or (k is not None and al > k + 1 + 1e-9)):
        raise SpecsimError(
            f"{al} is outside [1, k + 1] (bonus token included)", source=source, field=ACCEPT_LENGTH
        )
    rate = opt("spec_decode_acceptance_rate")
    if rate is not None and not 0.0 <= rate <= 100.0:
        raise SpecsimError(
            f"{rate} is not a percent in [0, 100]",
            source=source,
            field="spec_decode_acceptance_rate",
        )
    conc = request_count(record.get("max_concurrency"), source, "max_concurrency")
    tpot = opt("mean_tpot_ms")
    if tpot is not None:
        check_step_ms(tpot, source, "mean_tpot_ms")
    completed = opt("completed")
    if completed is not None and not (completed >= 0 and completed.is_integer()):
        raise SpecsimError(
            f"{completed:g} is not a count of requests", source=source, field="completed"
        )
    std = opt("std_tpot_ms")
    if std is not None and std < 0:
        raise SpecsimError(f"{std:g} must be >= 0", source=source, field="std_tpot_ms")
    totals = (opt("total_input_tokens"), opt("total_output_tokens"))
    for key, total in zip(("total_input_tokens", "total_output_tokens"), totals, strict=True):
        if total is not None and total < 0:
            raise SpecsimError(f"{total:g} must be >= 0", source=source, field=key)
    tin, tout = totals
    context = (
        (tin + tout / 2.0) / completed
        if completed and tin is not None and tout is not None
        else None
    )
    return VllmBenchRun(
        source=source,
        line=line,
        model=record.get("model_id") if isinstance(record.get("model_id"), str) else None,
        max_concurrency=conc,
        completed=int(completed or 0),
        mean_tpot_ms=tpot,
        std_tpot_ms=std,
        mean_itl_ms=opt("mean_itl_ms"),
        output_throughput=opt("output_throughput"),
        accept_length=al,
        acceptance_rate_percent=rate,
        num_drafts=opt("spec_decode_num_drafts"),
        draft_tokens=opt("spec_decode_draft_tokens"),
        accepted_tokens=opt("spec_decode_accepted_tokens"),
        cumulative=rates,
        context_tokens=context,
        lengths=serving_lengths(record, source, where),
        request_rate=request_rate(record.get("request_rate")),
    )


def parse_vllm_bench(text: str, *, source: str = "<bench>") -> tuple[VllmBenchRun, ...]:
    """Every result in a ``--save-result`` file (one object, or one a line)."""
    runs = []
    # Infinity read (SGLang's bench_serving writes its default rate so) to name that file
    # for what it is; ``number`` still refuses it wherever a figure is read.
    for line, result in load_objects(text, source, infinity=True):
        if "avg_decoded_tokens_per_iter" in result:  # read as vLLM's, it would be plain decoding
            raise SpecsimError(
                "a TensorRT-LLM benchmark_serving result (a key vLLM's does not write), not "
                "vllm bench serve's: give it as --trtllm-bench",
                source=source,
                field="avg_decoded_tokens_per_iter",
            )
        if "world_info" in result and vllm_mark(result) is None:
            raise SpecsimError(
                "a trtllm-bench --report_json report, not vllm bench serve's: give it as "
                "--trtllm-bench",
                source=source,
                field="world_info",
            )
        if "mean_tpot_ms" not in result and ACCEPT_LENGTH not in result:
            raise SpecsimError(
                "not a vllm bench serve result (no mean_tpot_ms, no spec_decode_* keys)",
                source=source,
                field=f"line {line}" if line > 1 else None,
            )
        runs.append(_run(result, source, line))
    return tuple(runs)


def read_vllm_bench(path: str | Path) -> tuple[VllmBenchRun, ...]:
    return parse_vllm_bench(read_text(path), source=str(path))
