"""SGLang ``python -m sglang.bench_serving --output-file`` JSON Lines: batch-1 tok/s,
accept length, context and request lengths.

Writer: sgl-project/sglang ``python/sglang/bench_serving.py`` ``benchmark()``: one object
appended a run (``json.dumps``, so its default ``request_rate`` float("inf") is written
``Infinity``). Read: ``max_concurrency`` (null: no limit), ``completed``,
``total_input_tokens``, ``total_output_tokens``, ``mean_tpot_ms`` (per request, (latency
- TTFT) / (output tokens - 1), averaged over requests, as vLLM's), ``std_tpot_ms``,
``backend`` (the server benchmarked: ``sglang``, ``sglang-oai``, ``vllm``, ...),
``request_rate`` (requests a second, Poisson; Infinity: all sent at once) and
``accept_length``: the SGLang server's ``avg_spec_accept_length`` from
``/get_server_info`` after the run (bonus token included; null without speculation or
on another backend), the server's running mean, so the warm-up requests count too. With
``--output-details`` also ``input_lens``, ``output_lens`` and ``errors``
(sim/calibration/importers/request_lengths.py). The file names neither the model nor k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.calibration.importers.jsonfile import load_objects, number
from sim.calibration.importers.physical import MAX_ACCEPT_LENGTH
from sim.calibration.importers.serving_record import ServingFields, serving_fields
from sim.calibration.importers.vllm_bench import vllm_mark
from sim.errors import SpecsimError

__all__ = ["SglangServingRun", "is_bench_serving", "parse_sglang_serving"]


@dataclass(frozen=True, slots=True)
class SglangServingRun(ServingFields):
    """One ``bench_serving`` run; ``accept_length`` None without speculation."""

    backend: str | None = None
    accept_length: float | None = None

    @property
    def speculative(self) -> bool:
        return self.accept_length is not None and self.accept_length > 1.0

    def figures(self) -> dict[str, Any]:
        """The run's figures as read (its per-request lengths left out)."""
        return {
            "format": "SGLang bench_serving JSONL",
            **self.common_figures(),
            "backend": self.backend,
            "accept_length": self.accept_length,
        }


def _run(record: dict[str, Any], source: str, line: int) -> SglangServingRun:
    where = f"line {line}"
    mark = vllm_mark(record)
    if mark is not None:  # read as SGLang's, its speculation would be lost
        raise SpecsimError(
            "a vllm bench serve result (a key only vLLM writes), not sglang.bench_serving's: "
            "give it as --vllm-bench",
            source=source,
            field=f"{where}: {mark}",
        )
    al = (
        number(record, "accept_length", source, where)
        if record.get("accept_length") is not None
        else None
    )
    if al is not None and not 1.0 <= al <= MAX_ACCEPT_LENGTH:
        raise SpecsimError(
            f"{al:g} is outside [1, {MAX_ACCEPT_LENGTH:g}] (bonus token included)",
            source=source,
            field=f"{where}: accept_length",
        )
    backend = record.get("backend")
    return SglangServingRun(
        source=source,
        line=line,
        backend=backend if isinstance(backend, str) else None,
        accept_length=al,
        **serving_fields(record, source, where),
    )


def parse_sglang_serving(text: str, *, source: str = "<bench>") -> tuple[SglangServingRun, ...]:
    """Every run in a ``bench_serving --output-file`` file (one object a line)."""
    return tuple(_run(r, source, n) for n, r in load_objects(text, source, infinity=True))


def is_bench_serving(text: str) -> bool:
    """Whether a JSONL file is bench_serving's (not bench_speculative's or
    bench_one_batch's): its runs have a mean TPOT and no step time."""
    return '"mean_tpot_ms"' in text and '"step_time"' not in text
