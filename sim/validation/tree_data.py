"""Published tree-drafting figures (accept lengths of chains and trees measured with the same
target, drafter, engine and data), for the tree cases of the validation report.

The figures and their sources are in sim/validation/data/tree_runs.toml. Printed with d
decimals, a figure carries a rounding error of standard deviation 10^-d / sqrt(12).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.model.tree import RankPath
from sim.validation.data_files import read_table


@dataclass(frozen=True, slots=True)
class TreeRun:
    """One measured configuration: its draft tree (rank paths; a chain is (0,), (0, 0), ...),
    accept length (bonus token included), tok/s (None when not published) and label."""

    label: str
    tree: tuple[RankPath, ...]
    accept_length: float
    tok_s: float | None = None


def chain_paths(drafts: int) -> tuple[RankPath, ...]:
    return tuple((0,) * d for d in range(1, drafts + 1))


def _paths(rows: list[list[int]]) -> tuple[RankPath, ...]:
    return tuple(tuple(p) for p in rows)


_DATA = read_table("tree_runs")

#: SafeAILab/EAGLE's ``mc_sim_7b_63``: the EAGLE-1 default static tree (25 drafts, depth 5).
EAGLE1_TREE: tuple[RankPath, ...] = _paths(_DATA["eagle1_tree"]["paths"])

# SafeAILab/EAGLE issue #132: LLaMA2-Chat 7B, MT-bench, T = 0, chain of 5 and the default tree.
_E132 = _DATA["eagle_132"]
EAGLE_132_URL: str = _E132["source"]
EAGLE_132_CHAIN = TreeRun(
    "chain of 5", chain_paths(_E132["chain_drafts"]), _E132["chain_accept_length"]
)
EAGLE_132_TREE = TreeRun("EAGLE-1 tree (25 drafts)", EAGLE1_TREE, _E132["tree_accept_length"])

# SafeAILab/EAGLE issue #143: EAGLE-Qwen2-7B-Instruct, MT-bench, T = 0 (and T = 1).
_E143 = _DATA["eagle_143"]
EAGLE_143_URL: str = _E143["source"]
EAGLE_143_CHAIN = TreeRun(
    "chain of 5", chain_paths(_E143["chain_drafts"]), _E143["chain_accept_length"]
)
EAGLE_143_TREE = TreeRun("EAGLE-1 tree (25 drafts)", EAGLE1_TREE, _E143["tree_accept_length"])
EAGLE_143_CHAIN_T1: float = _E143["chain_accept_length_t1"]
EAGLE_143_TREE_T1: float = _E143["tree_accept_length_t1"]

# vllm-project/vllm PR #22752: Llama-3.1-8B-Instruct + EAGLE, vLLM V1 TREE_ATTN, chain and
# tree at BS = 1, 8, 16: accept length, output tok/s and duration.
_V22752 = _DATA["vllm_22752"]
VLLM_22752_URL: str = _V22752["source"]
VLLM_22752_TREE: tuple[RankPath, ...] = _paths(_V22752["tree"])
VLLM_22752 = {
    int(bs): (
        TreeRun("chain", chain_paths(_V22752["chain_drafts"]), chain_al, chain_tok_s),
        TreeRun("tree", VLLM_22752_TREE, tree_al, tree_tok_s),
    )
    for bs, chain_al, chain_tok_s, tree_al, tree_tok_s in _V22752["runs"]
}
#: Duration (s) per batch size, (chain, tree).
VLLM_22752_DURATION_S = {int(bs): (chain, tree) for bs, chain, tree in _V22752["duration_s"]}
VLLM_22752_OUTPUT_TOKENS: int = _V22752["output_tokens"]

# sgl-project/sglang PR #4716: Llama-3.3-70B + EAGLE-3 at (8, 8, 64), H100 TP8: converted only.
SGLANG_4716_URL: str = _DATA["sglang_4716"]["source"]
SGLANG_4716_AL: float = _DATA["sglang_4716"]["accept_length"]
