"""What every result of vLLM's ``benchmark_serving.py`` lineage gives of a run (SGLang's
``bench_serving`` and TensorRT-LLM's ``benchmark_serving.py`` adapted it): its limit,
completed requests, mean and spread of TPOT (per request, (latency - TTFT) / (output
tokens - 1), averaged over requests), request lengths and context, request rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.calibration.importers.jsonfile import number
from sim.calibration.importers.physical import check_step_ms
from sim.calibration.importers.request_lengths import RequestLengths, serving_lengths
from sim.calibration.importers.vllm_bench import request_count, request_rate
from sim.errors import SpecsimError

__all__ = ["ServingFields", "serving_fields"]


@dataclass(frozen=True, slots=True)
class ServingFields:
    """A run's figures common to the lineage (each importer's run adds its own)."""

    source: str
    line: int
    max_concurrency: int | None
    completed: int
    mean_tpot_ms: float | None
    std_tpot_ms: float | None
    #: Mean prompt + half the mean answer (tokens); None where the file lacks the totals.
    context_tokens: float | None
    lengths: RequestLengths | None
    #: Requests a second it was sent at (inf: all at once, the default); None where the
    #: file does not say.
    request_rate: float | None = None

    @property
    def tok_s(self) -> float | None:
        """Per-request decode tok/s, 1000 / mean TPOT."""
        return 1000.0 / self.mean_tpot_ms if self.mean_tpot_ms else None

    def common_figures(self) -> dict[str, Any]:
        """The figures as read (the per-request lengths left out)."""
        return {
            "source": self.source,
            "line": self.line,
            "max_concurrency": self.max_concurrency,
            "completed": self.completed,
            "mean_tpot_ms": self.mean_tpot_ms,
            "std_tpot_ms": self.std_tpot_ms,
            "context_tokens": self.context_tokens,
        }


def _field(where: str | None, key: str) -> str:
    return f"{where}: {key}" if where else key


def serving_fields(record: dict[str, Any], source: str, where: str | None) -> dict[str, Any]:
    """``ServingFields``' values of ``record`` but its source and line, by name (SpecsimError
    naming the field when one is not a measurement)."""

    def opt(key: str) -> float | None:
        return number(record, key, source, where) if record.get(key) is not None else None

    conc = request_count(record.get("max_concurrency"), source, _field(where, "max_concurrency"))
    completed = number(record, "completed", source, where)
    if not (completed >= 0 and completed.is_integer()):
        raise SpecsimError(f"{completed:g} is not a count of requests", source=source,
                           field=_field(where, "completed"))  # fmt: skip
    tpot = opt("mean_tpot_ms")
    if tpot is not None:
        check_step_ms(tpot, source, _field(where, "mean_tpot_ms"))
    std = opt("std_tpot_ms")
    if std is not None and std < 0:
        raise SpecsimError(f"{std:g} must be >= 0", source=source,
                           field=_field(where, "std_tpot_ms"))  # fmt: skip
    lengths = serving_lengths(record, source, where)
    context = (
        lengths.input_mean + lengths.output_mean / 2.0
        if lengths is not None
        and lengths.input_mean is not None
        and lengths.output_mean is not None
        else None
    )
    return {
        "max_concurrency": conc,
        "completed": int(completed),
        "mean_tpot_ms": tpot,
        "std_tpot_ms": std,
        "context_tokens": context,
        "lengths": lengths,
        "request_rate": request_rate(record.get("request_rate")),
    }
