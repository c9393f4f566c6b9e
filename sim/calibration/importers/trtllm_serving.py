"""TensorRT-LLM ``benchmark_serving.py --save-result`` JSON (a ``trtllm-serve`` server's run).

Writer: NVIDIA/TensorRT-LLM ``tensorrt_llm/serve/scripts/benchmark_serving.py`` (read at
commit 0228a71223416496ff056a157936bad2e42c762f), vLLM's ``benchmark_serving.py`` lineage:
``benchmark()`` returns the run's figures and ``main()`` adds ``backend``, ``model_id``,
``request_rate`` and ``max_concurrency`` before one ``json.dump``. Read: ``model_id``,
``max_concurrency`` (null: no limit), ``completed``, ``total_input_tokens``,
``total_output_tokens``, ``mean_tpot_ms`` / ``std_tpot_ms`` (per request, (latency - TTFT) /
(output tokens - 1), as vLLM's), ``request_rate`` and ``avg_decoded_tokens_per_iter.mean``:
the mean over requests of the server's own ``avg_decoded_tokens_per_iter`` (tokens a
decoding iteration, the bonus token included; 1 without speculation; 0 where the server
returned none). With ``--save-detailed`` also ``input_lens``, ``output_lens``, ``errors``
(sim/calibration/importers/request_lengths.py). The file does not say k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.calibration.importers.jsonfile import load_object, number
from sim.calibration.importers.physical import MAX_ACCEPT_LENGTH
from sim.calibration.importers.serving_record import ServingFields, serving_fields
from sim.errors import SpecsimError

__all__ = ["MARK", "TrtllmServingRun", "decoded_per_iter", "parse_trtllm_serving"]

#: The key only TensorRT-LLM's benchmark_serving writes (vLLM's and SGLang's do not).
MARK = "avg_decoded_tokens_per_iter"


@dataclass(frozen=True, slots=True)
class TrtllmServingRun(ServingFields):
    """One ``benchmark_serving`` run against ``trtllm-serve``; ``accept_length``: tokens a
    decoding iteration (``avg_decoded_tokens_per_iter.mean``, bonus included)."""

    model: str | None = None
    accept_length: float = 1.0

    @property
    def speculative(self) -> bool:
        return self.accept_length > 1.0

    def figures(self) -> dict[str, Any]:
        """The run's figures as read (its per-request lengths left out)."""
        return {
            "format": "TensorRT-LLM benchmark_serving JSON",
            **self.common_figures(),
            "model_id": self.model,
            "accept_length": self.accept_length,
        }


def decoded_per_iter(record: dict[str, Any], source: str, where: str | None) -> float:
    """``avg_decoded_tokens_per_iter.mean``: tokens a decoding iteration, in [1, the most
    a scenario drafts + 1]; SpecsimError naming the field when the server returned none (0)
    or it is not one."""
    stats = record.get(MARK)
    field = f"{where}: {MARK}" if where else MARK
    if not isinstance(stats, dict):
        raise SpecsimError("expected an object with a mean", source=source, field=field)
    value = number(stats, "mean", source, field)
    if not 1.0 <= value <= MAX_ACCEPT_LENGTH:
        raise SpecsimError(
            f"{value:g} is outside [1, {MAX_ACCEPT_LENGTH:g}] (0: the server returned no "
            "avg_decoded_tokens_per_iter, so whether it speculated is unknown)",
            source=source,
            field=f"{field}: mean",
        )
    return value


def parse_trtllm_serving(text: str, *, source: str = "<bench>") -> TrtllmServingRun:
    """The run in one ``--save-result`` file (SpecsimError naming the field otherwise)."""
    record = load_object(text.strip(), source)
    model = record.get("model_id")
    return TrtllmServingRun(
        source=source,
        line=1,
        model=model if isinstance(model, str) and model else None,
        accept_length=decoded_per_iter(record, source, None),
        **serving_fields(record, source, None),
    )
