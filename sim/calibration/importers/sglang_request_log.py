"""SGLang's per-request finish lines (``--log-requests``), as records holding ``meta_info``.

Writer: sgl-project/sglang ``python/sglang/srt/utils/request_logger.py`` (v0.5.23),
``RequestLogger.log_finished_request``, through a logger formatted
``[%(asctime)s] %(message)s`` (``python/sglang/srt/utils/log_utils.py``):

- ``--log-requests-format text`` (the default): ``Finish: obj=GenerateReqInput(...),
  out={...}``, the ``out`` dict rendered by ``_dataclass_to_string_truncated``: Python
  literals (``'key': value``), strings and lists longer than the level's ``max_length``
  cut to ``head ... tail`` (so the line as a whole need not be a literal). ``meta_info`` is
  the last key of ``out`` (``tokenizer_manager.py`` builds ``{"text", "output_ids",
  "meta_info"}``), so the counts are read from the text after the last ``'meta_info': {``:
  each count key's number and each histogram's list;
- ``--log-requests-format json``: ``{"timestamp", "event": "request.finished", "rid",
  "obj", "out": {"meta_info": {...}}}`` (``log_json``), one JSON object after the prefix.

Every other line of the log (start-up, ``Decode batch`` lines, received requests) is
skipped.
"""

from __future__ import annotations

import re
from typing import Any

from sim.calibration.importers.jsonfile import load_object
from sim.errors import SpecsimError

__all__ = ["is_request_log", "request_log_records"]

TEXT_MARK = "Finish: obj="
JSON_EVENT = re.compile(r'"event":\s*"request\.finished"')
_META = "'meta_info': {"
_COUNT_KEYS = (
    "completion_tokens",
    "spec_verify_ct",
    "spec_num_correct_drafts",
    "spec_accepted_drafts",
    "spec_num_proposed_drafts",
    "spec_proposed_drafts",
    "num_retractions",
)
_LIST_KEYS = ("spec_correct_drafts_histogram", "spec_accept_histogram")
_NUMBER = re.compile(r"-?[0-9][0-9.eE+\-]*")
_FINISH = re.compile(r"'finish_reason': \{'type': '([a-z_]+)'")


def is_request_log(text: str) -> bool:
    """Whether ``text`` holds SGLang finish lines of either format."""
    return TEXT_MARK in text or JSON_EVENT.search(text) is not None


def _text_meta(line: str) -> dict[str, Any] | None:
    """The counts of a text-format finish line's ``meta_info`` (None: it has none)."""
    at = line.rfind(_META)
    if at < 0:
        return None
    rest = line[at + len(_META) :]
    meta: dict[str, Any] = {}
    for key in _COUNT_KEYS:
        m = re.search(rf"'{key}': ([^,}}]+)", rest)
        if m is None or m.group(1).strip() == "None":
            continue
        raw = m.group(1).strip()
        meta[key] = int(raw) if raw.lstrip("-").isdigit() else _number_or_text(raw)
    for key in _LIST_KEYS:
        m = re.search(rf"'{key}': \[([^\]]*)\]", rest)
        if m is not None:
            items = [x.strip() for x in m.group(1).split(",") if x.strip()]
            meta[key] = [int(x) if x.isdigit() else x for x in items]
    finish = _FINISH.search(rest)
    if finish is not None:
        meta["finish_reason"] = {"type": finish.group(1)}
    return meta


def _number_or_text(raw: str) -> float | str:
    """A float where the text is one (the count check then names it), else the text."""
    if _NUMBER.fullmatch(raw):
        try:
            return float(raw)
        except ValueError:
            pass
    return raw


def request_log_records(text: str, source: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, ``{"meta_info": ...}``) of every finish line; a JSON-format finish line
    that is not one JSON object is an error naming its line."""
    out: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if TEXT_MARK in line:
            meta = _text_meta(line)
            if meta is not None:
                out.append((number, {"meta_info": meta}))
        elif JSON_EVENT.search(line) and "{" in line:
            doc = load_object(line[line.index("{") :], source, f"line {number}")
            out_dict = doc.get("out")
            meta = out_dict.get("meta_info") if isinstance(out_dict, dict) else None
            if not isinstance(meta, dict):
                raise SpecsimError(
                    "a request.finished line without out.meta_info",
                    source=source,
                    field=f"line {number}",
                )
            out.append((number, {"meta_info": meta}))
    return out
