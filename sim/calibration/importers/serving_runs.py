"""A serving benchmark's runs, whichever client wrote them, told from the file's fields.

Two writers of one lineage (SGLang's adapted vLLM's ``benchmark_serving.py``), each read
by its own importer:

- ``vllm bench serve --save-result [--save-detailed]`` (sim/calibration/importers/
  vllm_bench.py): one JSON object, or one a line with ``--append-result``;
- SGLang ``python -m sglang.bench_serving --output-file F [--output-details]``
  (sim/calibration/importers/sglang_serving.py; read at sgl-project/sglang commit
  0033168f0f58b2bc05aa0273bd475d9c01bafb1c, ``benchmark()``): one JSON line appended a
  run, so a file holds every run written to it;
- TensorRT-LLM ``benchmark_serving.py --save-result [--save-detailed]`` against
  ``trtllm-serve`` (sim/calibration/importers/trtllm_serving.py): one JSON object, told by
  its ``avg_decoded_tokens_per_iter``, which neither other writer has.

Told apart by the first run's keys: SGLang's result always has ``dataset_name`` (and,
since it reads the server's accept length, ``accept_length``), vLLM's never; vLLM's has
``model_id`` and its ``spec_decode_*`` counters, SGLang's never. A record with neither
mark is read as vLLM's (its importer names what is missing). Both give each run's
``max_concurrency`` (null: no limit), ``request_rate`` and its requests' lengths
(``RequestLengths``: ``input_lens`` / ``output_lens`` with the failed requests, those with
an ``errors`` entry, left out), which is what ``specsim init --replay`` needs of a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sim.calibration.importers.files import read_text
from sim.calibration.importers.jsonfile import load_objects
from sim.calibration.importers.request_lengths import RequestLengths
from sim.calibration.importers.sglang_serving import parse_sglang_serving
from sim.calibration.importers.trtllm_serving import MARK, parse_trtllm_serving
from sim.calibration.importers.vllm_bench import parse_vllm_bench, sglang_mark

__all__ = ["ServingFormat", "ServingRun", "read_serving_runs"]


class ServingRun(Protocol):
    """What both importers' runs give: where the run is, its limit, its requests."""

    @property
    def source(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def max_concurrency(self) -> int | None: ...
    @property
    def lengths(self) -> RequestLengths | None: ...
    @property
    def request_rate(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class ServingFormat:
    """A writer, as its messages name it: the command, the flag that lists each request,
    what a file of several runs is, and whether the importer names a run's fields by its
    line even in a file of one run."""

    command: str
    details_flag: str
    several: str
    fields_by_line: bool

    def where(self, run: ServingRun) -> str | None:
        """The prefix of a run's fields in messages (``line N``), as its importer's."""
        return f"line {run.line}" if self.fields_by_line or run.line > 1 else None


VLLM = ServingFormat("vllm bench serve", "--save-detailed", "", fields_by_line=False)
SGLANG = ServingFormat(
    "sglang.bench_serving",
    "--output-details",
    " (bench_serving appends a line a run to its --output-file): copy the run's line to a "
    "file of its own",
    fields_by_line=True,
)


TRTLLM = ServingFormat(
    "TensorRT-LLM benchmark_serving", "--save-detailed", "", fields_by_line=False
)


def _is_sglang(record: dict[str, Any]) -> bool:
    return sglang_mark(record) is not None


def read_serving_runs(path: str | Path) -> tuple[ServingFormat, tuple[ServingRun, ...]]:
    """The writer of ``path`` and its runs in file order; SpecsimError naming the file
    and field when the file is not one writer's result or a value is out of bounds."""
    source = str(path)
    text = read_text(path)
    first = load_objects(text, source, infinity=True)[0][1]
    if _is_sglang(first):
        return SGLANG, parse_sglang_serving(text, source=source)
    if MARK in first:
        return TRTLLM, (parse_trtllm_serving(text, source=source),)
    return VLLM, parse_vllm_bench(text, source=source)
