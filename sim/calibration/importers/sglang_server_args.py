"""SGLang's start-up line ``server_args=ServerArgs(...)``: the speculative settings, the
tensor-parallel size and the KV cache dtype (``kv_cache_dtype``, as ``--kv-cache-dtype``).

The launcher logs ``logger.info(f"{server_args=}")``: the dataclass ``repr`` of
``ServerArgs`` (sgl-project/sglang ``python/sglang/srt/server_args.py``) on one line,
``field=value`` pairs with Python literals. It is read with ``ast`` (``literal_eval`` of
each value, never ``eval``): linear in the line's length, which is 10 KB or more.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sim.calibration.importers.files import read_text
from sim.errors import SpecsimError

MARKER = "server_args=ServerArgs("
#: Longest ServerArgs line accepted (real ones are 10-30 KB).
MAX_LINE_CHARS = 1_000_000


@dataclass(frozen=True, slots=True)
class SglangServerArgs:
    source: str
    line: int
    model_path: str | None
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    tp_size: int | None
    disable_cuda_graph: bool | None
    #: ``kv_cache_dtype`` as logged (``auto``, ``fp8_e4m3``, ...); None: not in the line.
    kv_cache_dtype: str | None = None

    def figures(self) -> dict[str, Any]:
        return {"format": "SGLang server_args line", **asdict(self)}


def _fields(text: str, source: str, line: int) -> dict[str, Any]:
    start = text.index(MARKER) + len("server_args=")
    call = text[start:].strip()
    if len(call) > MAX_LINE_CHARS:
        raise SpecsimError(f"line longer than {MAX_LINE_CHARS} characters", source=source,
                           field=f"line {line}")  # fmt: skip
    try:
        node = ast.parse(call, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SpecsimError(
            "cannot parse the ServerArgs(...) text (cut off?)", source=source, field=f"line {line}"
        ) from None
    if not isinstance(node, ast.Call):
        raise SpecsimError("cannot parse: not ServerArgs(...)", source=source, field=f"line {line}")
    out: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            continue
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            out[kw.arg] = None  # a non-literal repr (an enum, an object): not a number we use
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_sglang_server_args(text: str, *, source: str = "<log>") -> SglangServerArgs:
    """The last ``server_args=ServerArgs(...)`` line of a log (the last start-up)."""
    found = None
    for number, raw in enumerate(text.split("\n"), start=1):
        if MARKER in raw:
            found = (number, raw)
    if found is None:
        raise SpecsimError(f"no {MARKER}...) line (SGLang's start-up log line)", source=source)
    number, raw = found
    f = _fields(raw, source, number)
    algorithm = f.get("speculative_algorithm")
    for key in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"):
        value = _int(f.get(key))
        if value is not None and isinstance(algorithm, str) and not 1 <= value <= 4096:
            raise SpecsimError(
                f"{value} with speculative_algorithm={algorithm!r}: a speculative server "
                "drafts at least one token (must be in [1, 4096])",
                source=source,
                field=f"line {number}: {key}",
            )
    return SglangServerArgs(
        source=source,
        line=number,
        model_path=f.get("model_path") if isinstance(f.get("model_path"), str) else None,
        speculative_algorithm=algorithm if isinstance(algorithm, str) else None,
        num_steps=_int(f.get("speculative_num_steps")),
        topk=_int(f.get("speculative_eagle_topk")),
        num_draft_tokens=_int(f.get("speculative_num_draft_tokens")),
        tp_size=_int(f.get("tp_size")),
        disable_cuda_graph=f.get("disable_cuda_graph")
        if isinstance(f.get("disable_cuda_graph"), bool)
        else None,
        kv_cache_dtype=kv if isinstance(kv := f.get("kv_cache_dtype"), str) else None,
    )


def read_sglang_server_args(path: str | Path) -> SglangServerArgs:
    return parse_sglang_server_args(read_text(path), source=str(path))
