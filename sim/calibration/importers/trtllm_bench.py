"""TensorRT-LLM ``trtllm-bench throughput|latency --report_json FILE``: one run, one object.

Writer: NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py``
``ReportUtility.get_statistics_dict()`` (read at commit 0249976575050d2c624a5f285683c66de311a3b7),
dumped by ``tensorrt_llm/bench/benchmark/throughput.py`` as ``--report_json``. The fields
read (as the writer spells them):

- ``engine``: ``model`` (the Hugging Face id given to ``trtllm-bench --model``), ``version``
  (TensorRT-LLM's), ``backend``, ``dtype``, ``kv_cache_dtype``, ``quantization`` (recorded);
- ``world_info``: ``tp_size``, ``pp_size``, ``ep_size``, ``world_size``, ``max_batch_size``;
- ``request_info``: ``num_requests``, ``avg_num_concurrent_requests`` (the sum of the
  requests' end-to-end latencies over the run's span: the mean number in flight),
  ``avg_input_length``, ``avg_output_length`` (tokens a request, the first one included);
- ``performance``: ``system_output_throughput_tok_s`` (all output tokens / span);
- ``streaming_metrics`` (only with ``--streaming``): ``tpot_percentiles.average``, the
  mean over requests of (end - first token) / (output tokens - 1) in ms, and
  ``avg_ttft_ms``;
- ``decoding_stats`` (only when the run speculates: the writer adds it when the engine's
  decoding mode or ``speculative_config`` is set): ``mode`` (``speculative_config``'s
  ``decoding_type``, e.g. Eagle3, MTP, Draft_Target; ``DRAFTER_MODES`` says which drafter
  each names), ``acceptance_length_percentiles``
  (per request: output tokens / (decode iterations + 1), the context step counted as one
  iteration) and ``draft_acceptance_rate_percentiles`` (per request: accepted drafts /
  (max_draft_len x iterations)).

``--concurrency`` is not in the report: a run is taken as one request at a time when its
requests never overlapped, which makes the mean in flight at most 1 (or its
``max_batch_size`` is 1). The report states no ``max_draft_len`` either: since per request
AL - 1 = max_draft_len x acceptance rate, the draft length is (AL - 1) / rate of the two
averages (one weighting applies to both: plain, or by output length or by iterations in
later releases), checked whole. ``trtllm-bench latency`` writes the same report, always
streamed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import load_object, number
from sim.calibration.importers.physical import MAX_ACCEPT_LENGTH, check_step_ms, check_tok_s
from sim.calibration.importers.vllm_bench import sglang_mark, vllm_mark
from sim.errors import SpecsimError

__all__ = [
    "DRAFTER_MODES",
    "PYTORCH_EAGLE",
    "TrtllmBench",
    "is_trtllm_bench",
    "parse_trtllm_bench",
    "read_trtllm_bench",
]

#: The drafter specsim names (``specsim init --drafter``) for each ``decoding_stats.mode``
#: the writer can state: the ``decoding_type`` of TensorRT-LLM's speculative configs
#: (``tensorrt_llm/llmapi/llm_args.py`` at commit 0004396720054fd8e205cbf616f21f0b57c6b412:
#: ``Eagle3DecodingConfig`` "Eagle3", ``MTPDecodingConfig`` "MTP",
#: ``DraftTargetDecodingConfig`` "Draft_Target", ``DFlashDecodingConfig`` "DFlash",
#: ``DSparkDecodingConfig`` "DSpark"). The others (NGram, SA, PARD, Medusa, Lookahead,
#: User_Provided, AUTO, SaveState) are drafters specsim does not size, and a TensorRT engine
#: run states its C++ decoding mode instead: neither is named here.
DRAFTER_MODES = {
    "Eagle3": "eagle3",
    "MTP": "mtp",
    "Draft_Target": "draft_model",
    "DFlash": "dflash",
    "DSpark": "dspark",
}

#: ``EagleDecodingConfig`` ("Eagle"): on the PyTorch backend (``engine.backend`` "Pytorch")
#: its ``spec_dec_mode`` is EAGLE3 or EAGLE3_ONE_MODEL (``llm_args.py`` at commit
#: 0249976575050d2c624a5f285683c66de311a3b7, before "Eagle3" had its own class): an EAGLE-3
#: drafter; on the TensorRT backend the config builds EAGLE-1/2 engines, not named here.
PYTORCH_EAGLE = ("Eagle", "Pytorch")

#: The sections every report has (``get_statistics_dict``).
SECTIONS = ("engine", "world_info", "request_info", "performance")

#: How far (AL - 1) / rate may sit from a whole draft length: the two averages are printed
#: at full double precision, so only rounding of the per-request ratios separates them.
WHOLE_TOLERANCE = 1e-3

#: The mean in flight of a run whose requests never overlapped is at most 1 (their
#: latencies sum to at most the span); this slack covers rounding of the two sums only.
ONE_AT_A_TIME = 1.0 + 1e-9


@dataclass(frozen=True, slots=True)
class TrtllmBench:
    """One ``trtllm-bench`` report, as read (fields named after the report's own).

    ``num_steps`` / ``accept_length`` / ``draft_acceptance_rate``: None without
    ``decoding_stats`` (plain decoding); ``tpot_ms`` / ``ttft_ms``: None without
    ``streaming_metrics`` (a run without ``--streaming`` times no first token)."""

    source: str
    model: str | None
    version: str | None
    backend: str | None
    dtype: str | None
    quantization: str | None
    kv_cache_dtype: str | None
    tp_size: int
    pp_size: int
    ep_size: int | None
    max_batch_size: int | None
    num_requests: int
    avg_in_flight: float
    avg_input_length: float
    avg_output_length: float
    output_tok_s: float
    tpot_ms: float | None
    ttft_ms: float | None
    mode: str | None
    num_steps: int | None
    accept_length: float | None
    draft_acceptance_rate: float | None

    @property
    def speculative(self) -> bool:
        return self.num_steps is not None

    @property
    def drafter(self) -> str | None:
        """The drafter specsim names for ``mode`` (``DRAFTER_MODES``, ``PYTORCH_EAGLE``);
        None: plain decoding, or a mode specsim does not name."""
        if (self.mode, self.backend) == PYTORCH_EAGLE:
            return "eagle3"
        return DRAFTER_MODES.get(self.mode) if self.mode is not None else None

    @property
    def batch1(self) -> bool:
        """Whether the run served one request at a time (no two requests overlapped)."""
        return self.max_batch_size == 1 or self.avg_in_flight <= ONE_AT_A_TIME

    @property
    def tok_s(self) -> float | None:
        """Decode tok/s of a request, 1000 / mean TPOT (None without streaming)."""
        return 1000.0 / self.tpot_ms if self.tpot_ms is not None else None

    @property
    def context_tokens(self) -> float:
        """Mean context its decode ran at: the mean prompt + half the mean answer."""
        return self.avg_input_length + self.avg_output_length / 2.0

    def figures(self) -> dict[str, Any]:
        return {
            "format": "trtllm-bench --report_json",
            "source": self.source,
            **{k: getattr(self, k) for k in self.__dataclass_fields__ if k != "source"},
            "batch1": self.batch1,
        }


def _section(doc: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        got = "missing" if key not in doc else type(value).__name__
        raise SpecsimError(
            f"expected an object, got {got}: not a trtllm-bench --report_json report (nor a "
            "TensorRT-LLM benchmark_serving result)",
            source=source,
            field=key,
        )
    return value


def _not_another_format(doc: dict[str, Any], source: str) -> None:
    """SpecsimError pointing to the option of a vLLM or SGLang serving result given here."""
    for mark, option, name in (
        (vllm_mark(doc), "--vllm-bench", "a vllm bench serve result"),
        (sglang_mark(doc), "--sglang-bench", "an sglang.bench_serving result"),
    ):
        if mark is not None and "world_info" not in doc:
            raise SpecsimError(
                f"{name}, not a trtllm-bench report: give it as {option}",
                source=source,
                field=mark,
            )


def _text(section: dict[str, Any], key: str) -> str | None:
    value = section.get(key)
    return str(value) if value is not None else None


def _whole(section: dict[str, Any], key: str, source: str, where: str, low: int) -> int:
    value = number(section, key, source, where)
    if not value.is_integer() or value < low:
        raise SpecsimError(
            f"expected a whole number >= {low}, got {value:g}", source=source,
            field=f"{where}: {key}",
        )  # fmt: skip
    return int(value)


def _average(section: dict[str, Any], key: str, source: str) -> float:
    """``decoding_stats[key].average``."""
    stats = section.get(key)
    if not isinstance(stats, dict):
        got = "missing" if key not in section else f"{stats!r}"
        raise SpecsimError(
            f"expected percentiles, got {got}", source=source, field=f"decoding_stats: {key}"
        )
    return number(stats, "average", source, f"decoding_stats: {key}")


def _draft(decoding: dict[str, Any], source: str) -> tuple[int, float, float]:
    """(max_draft_len, accept length, draft acceptance rate) of ``decoding_stats``."""
    al = _average(decoding, "acceptance_length_percentiles", source)
    rate = _average(decoding, "draft_acceptance_rate_percentiles", source)
    field = "decoding_stats: acceptance_length_percentiles: average"
    if not 1.0 <= al <= MAX_ACCEPT_LENGTH:
        raise SpecsimError(
            f"{al:g} is outside [1, {MAX_ACCEPT_LENGTH:g}] (bonus token included)",
            source=source,
            field=field,
        )
    if not 0.0 < rate <= 1.0:
        raise SpecsimError(
            f"{rate:g} is outside (0, 1]: no draft accepted, so the draft length cannot be "
            "told from the report",
            source=source,
            field="decoding_stats: draft_acceptance_rate_percentiles: average",
        )
    k = (al - 1.0) / rate
    if round(k) < 1 or abs(k - round(k)) > WHOLE_TOLERANCE * max(k, 1.0):
        raise SpecsimError(
            f"(accept length - 1) / draft acceptance rate = {k:.6g} is not a whole draft "
            "length: the two averages do not come from one run",
            source=source,
            field=field,
        )
    return round(k), al, rate


def parse_trtllm_bench(text: str, *, source: str = "<report>") -> TrtllmBench:
    """One report (SpecsimError naming the file and the field when it is not one, or a
    figure the fit needs is missing or not a measurement)."""
    doc = load_object(text.strip(), source)
    _not_another_format(doc, source)
    engine, world, req, perf = (_section(doc, key, source) for key in SECTIONS)
    tp = _whole(world, "tp_size", source, "world_info", 1)
    pp = _whole(world, "pp_size", source, "world_info", 1)
    ep = _whole(world, "ep_size", source, "world_info", 1) if world.get("ep_size") else None
    batch = world.get("max_batch_size")
    max_batch = _whole(world, "max_batch_size", source, "world_info", 1) if batch else None
    n = _whole(req, "num_requests", source, "request_info", 1)
    flight = number(req, "avg_num_concurrent_requests", source, "request_info")
    if not flight > 0:
        raise SpecsimError(
            f"{flight:g} must be positive", source=source,
            field="request_info: avg_num_concurrent_requests",
        )  # fmt: skip
    avg_in = number(req, "avg_input_length", source, "request_info")
    avg_out = number(req, "avg_output_length", source, "request_info")
    if avg_in < 0 or avg_out < 1:
        raise SpecsimError(
            f"input {avg_in:g} and output {avg_out:g} tokens: expected >= 0 and >= 1",
            source=source,
            field="request_info: avg_output_length",
        )
    out_tok_s = check_tok_s(
        number(perf, "system_output_throughput_tok_s", source, "performance"),
        source,
        "performance: system_output_throughput_tok_s",
    )
    tpot = ttft = None
    streaming = doc.get("streaming_metrics")
    if streaming is not None:
        if not isinstance(streaming, dict):
            raise SpecsimError("expected an object", source=source, field="streaming_metrics")
        tpot_stats = streaming.get("tpot_percentiles")
        if not isinstance(tpot_stats, dict):
            raise SpecsimError(
                "expected percentiles", source=source, field="streaming_metrics: tpot_percentiles"
            )
        where = "streaming_metrics: tpot_percentiles"
        tpot = check_step_ms(number(tpot_stats, "average", source, where), source,
                             f"{where}: average")  # fmt: skip
        if streaming.get("avg_ttft_ms") is not None:
            ttft = number(streaming, "avg_ttft_ms", source, "streaming_metrics")
    mode = k = al = rate = None
    decoding = doc.get("decoding_stats")
    if decoding is not None:
        if not isinstance(decoding, dict):
            raise SpecsimError("expected an object", source=source, field="decoding_stats")
        mode = _text(decoding, "mode")
        k, al, rate = _draft(decoding, source)
    return TrtllmBench(
        source=source, model=_text(engine, "model"), version=_text(engine, "version"),
        backend=_text(engine, "backend"), dtype=_text(engine, "dtype"),
        quantization=_text(engine, "quantization"),
        kv_cache_dtype=_text(engine, "kv_cache_dtype"), tp_size=tp, pp_size=pp, ep_size=ep,
        max_batch_size=max_batch, num_requests=n, avg_in_flight=flight,
        avg_input_length=avg_in, avg_output_length=avg_out, output_tok_s=out_tok_s,
        tpot_ms=tpot, ttft_ms=ttft, mode=mode, num_steps=k, accept_length=al,
        draft_acceptance_rate=rate,
    )  # fmt: skip


def read_trtllm_bench(path: str | Path) -> TrtllmBench:
    return parse_trtllm_bench(read_text(path), source=str(path))


def is_trtllm_bench(text: str) -> bool:
    """Whether a JSON file looks like a ``trtllm-bench`` report (its own sections)."""
    return text.lstrip().startswith("{") and '"world_info"' in text and '"request_info"' in text
