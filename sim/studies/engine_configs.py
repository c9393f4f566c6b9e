"""A per-batch-size draft length as each engine accepts it, checked against the engine's own
schema at a named version.

- **vLLM** ``--speculative-config`` JSON: ``method``, ``num_speculative_tokens`` and
  ``num_speculative_tokens_per_batch_size``, a list of ``(range_start, range_end,
  num_speculative_tokens)`` with inclusive batch-size ranges (``SpeculativeConfig`` in
  vllm/config/speculative.py, vllm-project/vllm main at 002e77c; dynamic speculative
  decoding). ``method`` is the scenario's draft method where vLLM names it the same.
- **SGLang** flags: ``--speculative-algorithm`` (EAGLE3; EAGLE for EAGLE and MTP/NextN
  drafters; STANDALONE for a draft model), ``--speculative-num-steps k``,
  ``--speculative-eagle-topk 1``, ``--speculative-num-draft-tokens k + 1``; SGLang takes one
  k, so a table is expressed as its batch-1 k with ``--speculative-batch-size-threshold N``
  (speculation off above N running requests; sgl-project/sglang PR 13376 and its ngram and
  dynamic-spec server tests) when the table is one k then plain decoding.
- **TensorRT-LLM** ``speculative_config`` (``DecodingBaseConfig`` in
  tensorrt_llm/llmapi/llm_args.py, TensorRT-LLM 1.2.1): ``max_draft_len``,
  ``draft_len_schedule`` (batch size -> draft length, each key the batch size from which
  its length holds, 0 disables; it must hold ``{1: max_draft_len}``).

A table the engine cannot express (a tree row; for TensorRT-LLM a batch-1 length below a
later one) gets a note instead of a config.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Where each engine's schema was checked.
VLLM_SCHEMA = "vLLM SpeculativeConfig (vllm/config/speculative.py, main at 002e77c)"
SGLANG_SCHEMA = (
    "SGLang server arguments (--speculative-*; --speculative-batch-size-threshold, PR 13376)"
)
TRTLLM_SCHEMA = "TensorRT-LLM 1.2.1 DecodingBaseConfig (tensorrt_llm/llmapi/llm_args.py)"

#: The scenario's acceptance.method as each engine names the drafter (None: not named).
VLLM_METHOD = {"eagle3": "eagle3", "eagle": "eagle", "mtp": "mtp", "draft_model": "draft_model"}
SGLANG_ALGORITHM = {
    "eagle3": "EAGLE3",
    "eagle": "EAGLE",
    "mtp": "EAGLE",
    "draft_model": "STANDALONE",
}

Row = tuple[int, int, Any]


def _chain_rows(rows: Sequence[Row]) -> list[tuple[int, int, int]] | None:
    """The rows with integer k (chains), or None if any row is a tree."""
    out = []
    for start, end, k in rows:
        if not isinstance(k, int):
            return None
        out.append((int(start), int(end), k))
    return out


def vllm_config(rows: Sequence[Row], method: str | None) -> dict[str, Any]:
    """``--speculative-config`` for vLLM (see the module docstring)."""
    chain = _chain_rows(rows)
    if chain is None:
        return {"schema": VLLM_SCHEMA, "note": "a tree row: vLLM's table takes chain lengths"}
    config: dict[str, Any] = {}
    if method in VLLM_METHOD:
        config["method"] = VLLM_METHOD[method]
    config["num_speculative_tokens"] = max(k for _, _, k in chain)
    config["num_speculative_tokens_per_batch_size"] = [list(r) for r in chain]
    return {"schema": VLLM_SCHEMA, "speculative_config": config}


def _one_k_then_plain(chain: list[tuple[int, int, int]]) -> tuple[int, int | None] | None:
    """(k, last batch size speculating or None: every size) if the table is one k from
    batch size 1 then plain decoding; None otherwise."""
    ks = [k for _, _, k in chain]
    first = ks[0]
    if first == 0:
        return None
    n = next((i for i, k in enumerate(ks) if k != first), len(ks))
    if n == len(ks):
        return first, None
    if all(k == 0 for k in ks[n:]):
        return first, chain[n - 1][1]
    return None


def sglang_config(rows: Sequence[Row], method: str | None) -> dict[str, Any]:
    """SGLang's flags (see the module docstring)."""
    chain = _chain_rows(rows)
    shape = None if chain is None else _one_k_then_plain(chain)
    if shape is None:
        return {
            "schema": SGLANG_SCHEMA,
            "note": "SGLang takes one k (with a threshold above which it stops speculating); "
            "this table changes k between batch sizes, so no flags express it",
        }
    k, limit = shape
    flags = [
        "--speculative-algorithm",
        SGLANG_ALGORITHM.get(method or "", "EAGLE"),
        "--speculative-num-steps",
        str(k),
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        str(k + 1),
    ]
    if limit is not None:
        flags += ["--speculative-batch-size-threshold", str(limit)]
    return {"schema": SGLANG_SCHEMA, "flags": flags}


def trtllm_config(rows: Sequence[Row], method: str | None) -> dict[str, Any]:
    """TensorRT-LLM's ``speculative_config`` fields (see the module docstring)."""
    chain = _chain_rows(rows)
    if chain is None:
        return {"schema": TRTLLM_SCHEMA, "note": "a tree row: draft_len_schedule takes lengths"}
    first = chain[0][2]
    if first == 0 or any(k > first for _, _, k in chain):
        return {
            "schema": TRTLLM_SCHEMA,
            "note": "draft_len_schedule must start at max_draft_len at batch size 1; this "
            f"table's batch-1 length ({first}) is not its longest",
        }
    schedule: dict[str, int] = {}
    last = None
    for start, _, k in chain:
        if k != last:
            schedule[str(start)] = k
            last = k
    config: dict[str, Any] = {"max_draft_len": first, "draft_len_schedule": schedule}
    if method == "mtp":
        config["num_nextn_predict_layers"] = first
    return {"schema": TRTLLM_SCHEMA, "speculative_config": config}


def engine_configs(rows: Sequence[Row], method: str | None) -> dict[str, dict[str, Any]]:
    """Every engine's form of the ``[start_bs, end_bs, k]`` table ``rows``."""
    return {
        "vllm": vllm_config(rows, method),
        "sglang": sglang_config(rows, method),
        "trtllm": trtllm_config(rows, method),
    }
