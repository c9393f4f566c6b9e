"""SGLang scheduler log: the ``Decode batch`` lines of a speculative-decoding server.

SGLang logs one line every ``--decode-log-interval`` decode batches (default 40), from
python/sglang/srt/managers/scheduler_metrics_mixin.py (``log_decode_stats``). Current
versions print

    [2025-06-01 10:00:00 TP0] Decode batch, #running-req: 1, #token: 2345, token usage: 0.01,
    accept len: 2.05, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 61.23,
    #queue-req: 0,

(one line; ``Decode batch [N],`` when SGLANG_LOG_FORWARD_ITERS is set; ``cpu graph`` on CPU;
extra fields for hybrid memory pools and disaggregation). Older versions (scheduler.py)
wrote ``Decode batch. #running-req: ...`` with ``accept len`` but no ``accept rate``, and the
oldest no ``cuda graph`` either; all of these are read.

For each logged interval: ``accept len`` = accepted tokens (bonus included) / verify
cycles, ``accept rate`` = accept len / num_draft_tokens, ``gen throughput`` = generated
tokens / wall time since the previous line, summed over the running requests (so it is the
per-request tok/s only when ``#running-req`` is 1), and ``cuda graph`` = whether the last
batch ran graphed; with speculation that flag is the target *verify* forward's
(python/sglang/srt/speculative/eagle_worker.py: forward_batch_generation returns the
can_run_cuda_graph of verify()).
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from sim.calibration.importers.files import read_text
from sim.calibration.importers.physical import MAX_ACCEPT_LENGTH, MAX_TOK_S
from sim.errors import SpecsimError

EXPECTED = (
    "SGLang scheduler lines like 'Decode batch, #running-req: 1, ..., accept len: 2.05, "
    "accept rate: 0.68, cuda graph: True, gen throughput (token/s): 61.2, ...' (speculative "
    "decoding on)"
)
_DECODE = re.compile(r"Decode batch(?: \[\d+\])?[.,]\s*(?P<body>.*)$")
_PREFIX = re.compile(r"\[(?P<time>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?P<ranks>[^\]]*)\]")


def _fields(body: str) -> dict[str, str]:
    """``key: value, key: value, ...`` -> {key: value}, in one pass (linear in the line;
    the regular expression it replaces backtracked quadratically on long lines)."""
    out: dict[str, str] = {}
    for part in body.split(","):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True, slots=True)
class DecodeLine:
    """One logged decode interval; ``line`` is 1-based, ``ranks`` e.g. ``'TP0'``, ``'DP1 TP0'``."""

    line: int
    running_req: int
    accept_length: float
    accept_rate: float | None
    cuda_graph: bool | None
    gen_tok_s: float
    time: str | None
    ranks: str | None


@dataclass(frozen=True, slots=True)
class SglangLog:
    """The speculative ``Decode batch`` lines of a log, and what was skipped.

    ``skipped`` counts every other non-blank line; ``non_speculative`` counts the ``Decode
    batch`` lines without ``accept len`` (speculation off) among them.
    """

    lines: tuple[DecodeLine, ...]
    skipped: int
    non_speculative: int
    source: str

    @property
    def accept_lengths(self) -> tuple[float, ...]:
        return tuple(d.accept_length for d in self.lines)

    @property
    def accept_length_mean(self) -> float:
        """Mean accept length, each interval weighted by its running requests (~its cycles)."""
        weights = [d.running_req or 1 for d in self.lines]
        return sum(w * d.accept_length for w, d in zip(weights, self.lines, strict=True)) / sum(
            weights
        )

    @property
    def accept_length_std(self) -> float:
        """Spread (sample standard deviation) of the per-interval accept lengths; 0 for one line."""
        return statistics.stdev(self.accept_lengths) if len(self.lines) > 1 else 0.0

    def accept_length_quantiles(self, qs: tuple[float, ...] = (0.1, 0.5, 0.9)) -> tuple[float, ...]:
        """Per-interval accept-length quantiles (linear interpolation)."""
        xs = sorted(self.accept_lengths)
        out = []
        for q in qs:
            pos = q * (len(xs) - 1)
            lo = int(pos)
            hi = min(lo + 1, len(xs) - 1)
            out.append(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))
        return tuple(out)

    @property
    def cuda_graph(self) -> bool | None:
        """True/False when every line that says agrees; None when mixed or never said."""
        said = {d.cuda_graph for d in self.lines if d.cuda_graph is not None}
        return said.pop() if len(said) == 1 else None

    @property
    def implied_num_draft_tokens(self) -> int | None:
        """num_draft_tokens = accept len / accept rate (k + 1 for chains), None without rates."""
        ratios = [d.accept_length / d.accept_rate for d in self.lines if d.accept_rate]
        return round(statistics.median(ratios)) if ratios else None

    @property
    def single_request(self) -> tuple[DecodeLine, ...]:
        """Intervals with exactly one running request: their gen throughput is per request."""
        return tuple(d for d in self.lines if d.running_req == 1)

    @property
    def single_request_tok_s(self) -> float | None:
        """Median gen throughput over single-request intervals (robust to idle gaps)."""
        xs = [d.gen_tok_s for d in self.single_request if d.gen_tok_s > 0]
        return statistics.median(xs) if xs else None


def _bool(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.strip().lower())


def decode_fields(text: str) -> dict[str, str] | None:
    """The ``key: value`` fields of a ``Decode batch`` line, plain or speculative (e.g.
    ``{'#running-req': '32', 'gen throughput (token/s)': '1234.56', ...}``), or None when
    ``text`` is not one."""
    m = _DECODE.search(text)
    return _fields(m.group("body")) if m else None


def _decode_line(text: str, number: int, source: str = "<log>") -> DecodeLine | None:
    """A speculative decode line, or None when ``text`` is not one (or is malformed)."""
    m = _DECODE.search(text)
    if not m:
        return None
    fields = _fields(m.group("body"))
    if "accept len" not in fields:
        return None
    try:
        running = int(fields["#running-req"])
        accept_length = float(fields["accept len"])
        gen = float(fields["gen throughput (token/s)"])
        rate = float(fields["accept rate"]) if "accept rate" in fields else None
    except (KeyError, ValueError):
        return None
    finite = all(math.isfinite(x) for x in (accept_length, gen, rate or 0.0))
    if not finite or accept_length < 1.0 or gen < 0.0:  # nan passes both comparisons
        return None
    if accept_length > MAX_ACCEPT_LENGTH:
        raise SpecsimError(
            f"accept len {accept_length:.4g} is above {MAX_ACCEPT_LENGTH:g} (1 + the most draft "
            "steps): not a measurement",
            source=source,
            field=f"line {number}",
        )
    if rate is not None and not 0.0 < rate <= 1.0:
        raise SpecsimError(
            f"accept rate {rate:.4g} is not a fraction in (0, 1]",
            source=source,
            field=f"line {number}",
        )
    if gen > MAX_TOK_S or running < 1:
        raise SpecsimError(
            f"gen throughput {gen:.4g} tok/s with {running} running requests is not a measurement",
            source=source,
            field=f"line {number}",
        )
    graph = fields.get("cuda graph", fields.get("cpu graph"))
    prefix = _PREFIX.search(text[: m.start()])
    return DecodeLine(
        line=number,
        running_req=running,
        accept_length=accept_length,
        accept_rate=rate,
        cuda_graph=_bool(graph) if graph is not None else None,
        gen_tok_s=gen,
        time=prefix.group("time") if prefix else None,
        ranks=prefix.group("ranks").strip() or None if prefix else None,
    )


def parse_sglang_log(text: str, *, source: str = "<log>") -> SglangLog:
    """Parse a log; raises SpecsimError saying what was expected when no line matches."""
    lines: list[DecodeLine] = []
    skipped = 0
    non_spec = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        parsed = _decode_line(raw, number, source)
        if parsed is None:
            skipped += 1
            if "Decode batch" in raw and "accept len" not in raw:
                non_spec += 1
        else:
            lines.append(parsed)
    if not lines:
        extra = (
            f"; {non_spec} 'Decode batch' lines have no accept len (speculation off?)"
            if non_spec
            else ""
        )
        raise SpecsimError(
            f"no speculative decode line among {skipped} line{'s' * (skipped != 1)}: "
            f"expected {EXPECTED}{extra}",
            source=source,
        )
    return SglangLog(tuple(lines), skipped, non_spec, source)


def read_sglang_log(path: str | Path) -> SglangLog:
    """Read and parse a log file; errors name the file."""
    return parse_sglang_log(read_text(path), source=str(path))
