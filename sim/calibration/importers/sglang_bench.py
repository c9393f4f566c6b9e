"""SGLang ``scripts/playground/bench_speculative.py --output`` JSON Lines.

Writer: sgl-project/sglang ``scripts/playground/bench_speculative.py``: after each
configuration, ``json.dumps(record)`` appended as one line. A record is one
(batch size, steps, topk, num_draft_tokens) point, each on a freshly launched server:

- ``acc_length``: the server's lifetime mean accept length (bonus token included; the
  warm-up batch counts too), rounded to 3 decimals; 1.0 without speculation;
- ``step_time``: seconds, the **20th percentile** of the per-window mean decode step times
  (``SGLANG_RECORD_STEP_TIME``), rounded to 5 decimals (so it leans fast);
- ``speed``: tok/s **per request** = acc_length / step_time;
- ``steps`` 0 is plain decoding (the baseline);
- ``completion_tokens`` (newer versions): the mean answer of the record's requests; the
  prompts are the script's own texts, recorded as 0 tokens, so no prompt length (and no
  context) comes from this file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import load_objects, number
from sim.calibration.importers.physical import check_step_ms, check_tok_s
from sim.calibration.importers.request_lengths import token_count
from sim.errors import SpecsimError

KEYS = ("batch_size", "steps", "topk", "num_draft_tokens", "acc_length", "step_time", "speed")


@dataclass(frozen=True, slots=True)
class SglangBenchRecord:
    line: int
    batch_size: int
    steps: int
    topk: int
    num_draft_tokens: int
    acc_length: float
    step_time_s: float
    speed_tok_s: float
    #: The mean answer of the record's requests (tokens); None in files written before it.
    completion_tokens: float | None = None

    @property
    def chain(self) -> bool:
        return self.steps > 0 and self.topk == 1


@dataclass(frozen=True, slots=True)
class SglangBench:
    records: tuple[SglangBenchRecord, ...]
    source: str

    def figures(self) -> dict[str, Any]:
        return {
            "format": "SGLang bench_speculative JSONL",
            "source": self.source,
            "records": [asdict(r) for r in self.records],
        }


def _record(raw: dict[str, Any], line: int, source: str) -> SglangBenchRecord:
    where = f"line {line}"
    values = {k: number(raw, k, source, where) for k in KEYS}
    ints = {k: values[k] for k in KEYS[:4]}
    for k, v in ints.items():
        if v != int(v) or v < 0 or v > 4096:
            raise SpecsimError(f"expected an integer in [0, 4096], got {v}", source=source,
                               field=f"{where}: {k}")  # fmt: skip
    steps = int(ints["steps"])
    al, step_time = values["acc_length"], values["step_time"]
    if not 1.0 <= al <= steps + 1 + 1e-9:
        raise SpecsimError(
            f"{al} is outside [1, steps + 1 = {steps + 1}] (bonus token included)",
            source=source,
            field=f"{where}: acc_length",
        )
    check_step_ms(step_time * 1000.0, source, f"{where}: step_time")
    check_tok_s(values["speed"], source, f"{where}: speed")
    if steps > 0 and (ints["topk"] < 1 or ints["num_draft_tokens"] < 1):
        raise SpecsimError(
            "a speculative run (steps > 0) drafts at least one token: topk and "
            f"num_draft_tokens must be >= 1, got {ints['topk']:g} and {ints['num_draft_tokens']:g}",
            source=source,
            field=f"{where}: topk",
        )
    if ints["batch_size"] < 1:
        raise SpecsimError("batch_size must be >= 1", source=source, field=f"{where}: batch_size")
    return SglangBenchRecord(
        line,
        int(ints["batch_size"]),
        steps,
        int(ints["topk"]),
        int(ints["num_draft_tokens"]),
        al,
        step_time,
        values["speed"],
        number(raw, "completion_tokens", source, where)
        if raw.get("completion_tokens") is not None
        else None,
    )


def parse_sglang_bench(text: str, *, source: str = "<bench>") -> SglangBench:
    records = tuple(_record(raw, n, source) for n, raw in load_objects(text, source))
    return SglangBench(records, source)


def read_sglang_bench(path: str | Path) -> SglangBench:
    return parse_sglang_bench(read_text(path), source=str(path))


@dataclass(frozen=True, slots=True)
class OneBatchRecord:
    """``python -m sglang.bench_one_batch --result-filename`` (python/sglang/bench_one_batch.py):
    a static batch without speculation (``spec_algorithm=NONE``); ``median_decode_latency``
    is the median decode step in seconds, so at batch size 1 its inverse is the baseline."""

    line: int
    batch_size: int
    input_len: int
    output_len: int
    median_decode_latency_s: float

    @property
    def tok_s(self) -> float:
        return 1.0 / self.median_decode_latency_s


def parse_sglang_one_batch(text: str, *, source: str = "<bench>") -> tuple[OneBatchRecord, ...]:
    out = []
    for n, raw in load_objects(text, source):
        where = f"line {n}"
        size = number(raw, "batch_size", source, where)
        latency = number(raw, "median_decode_latency", source, where)
        if latency <= 0 or size < 1 or size != int(size):
            raise SpecsimError(
                "batch_size must be an integer >= 1 and median_decode_latency positive",
                source=source,
                field=where,
            )
        out.append(
            OneBatchRecord(
                n,
                int(size),
                token_count(raw, "input_len", source, where, 0),
                token_count(raw, "output_len", source, where, 1),
                latency,
            )
        )
    return tuple(out)


def is_one_batch(text: str) -> bool:
    """Whether a JSONL file is bench_one_batch's (not bench_speculative's)."""
    return '"median_decode_latency"' in text
