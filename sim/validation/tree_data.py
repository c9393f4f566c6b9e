"""Published tree-drafting figures (accept lengths of chains and trees measured with the same
target, drafter, engine and data), for the tree cases of the validation report.

Each figure is copied from its public source (cited next to it). Printed with d decimals, a
figure carries a rounding error of standard deviation 10^-d / sqrt(12).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.model.tree import RankPath


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


#: SafeAILab/EAGLE eagle/model/choices.py @ 08dc06ccb428f2d3cf8380933ea50ed3e4178168:
#: ``mc_sim_7b_63``, the EAGLE-1 repository's default static tree (25 drafts, depth 5).
EAGLE1_TREE: tuple[RankPath, ...] = tuple(
    tuple(p)
    for p in (
        [0], [1], [2], [3], [0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0], [2, 1], [3, 0],
        [0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0], [0, 1, 1], [0, 2, 0], [0, 2, 1], [1, 0, 0],
        [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 2], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1],
    )
)  # fmt: skip

# SafeAILab/EAGLE issue #132 (2024-09-18), quoting the EAGLE-1 paper for LLaMA2-Chat 7B
# with yuhuili/EAGLE-llama2-chat-7B on MT-bench at temperature 0: "tau is 3.0 for chain
# draft and 3.62 for tree draft"; the chain in that issue is five top-1 drafts
# ([[0], [0, 0], [0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0, 0]]), the tree the repository's
# default (EAGLE1_TREE); the maintainer confirms tau counts the target's own token.
EAGLE_132_URL = "https://github.com/SafeAILab/EAGLE/issues/132"
EAGLE_132_CHAIN = TreeRun("chain of 5", chain_paths(5), 3.0)
EAGLE_132_TREE = TreeRun("EAGLE-1 tree (25 drafts)", EAGLE1_TREE, 3.62)

# SafeAILab/EAGLE issue #143 (comment of 2024-11-17): yuhuili/EAGLE-Qwen2-7B-Instruct,
# MT-bench, the EAGLE repository's evaluation: "chain-draft temperature=0: accept length
# 1.70 ... tree-draft temperature=0: accept length 2.19" (temperature 1: 1.50 and 1.55).
# The chain and tree are taken to be those of issue #132 (five drafts; the default tree).
EAGLE_143_URL = "https://github.com/SafeAILab/EAGLE/issues/143"
EAGLE_143_CHAIN = TreeRun("chain of 5", chain_paths(5), 1.70)
EAGLE_143_TREE = TreeRun("EAGLE-1 tree (25 drafts)", EAGLE1_TREE, 2.19)
EAGLE_143_CHAIN_T1 = 1.50
EAGLE_143_TREE_T1 = 1.55

# vllm-project/vllm PR #22752 ("[V1] implement tree sampler for draft token acceptance"),
# TheEpicDolphin: Llama-3.1-8B-Instruct + yuhuili/EAGLE-LLaMA3.1-Instruct-8B, vLLM V1,
# TREE_ATTN backend for both structures, mt-bench. "Mean Acceptance Length" and "Output
# Token Throughput (tok/s)" at BS=1, 8, 16 for Chain and Tree. The PR states the tree it was
# tested with: [(0,), (1,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]; the chain's
# length is not stated (taken as the tree's depth, 2).
VLLM_22752_URL = "https://github.com/vllm-project/vllm/pull/22752"
VLLM_22752_TREE: tuple[RankPath, ...] = (
    (0,), (1,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2),
)  # fmt: skip
VLLM_22752 = {
    bs: (TreeRun("chain", chain_paths(2), chain_al, chain_tok_s),
         TreeRun("tree", VLLM_22752_TREE, tree_al, tree_tok_s))
    for bs, chain_al, chain_tok_s, tree_al, tree_tok_s in (
        (1, 2.05, 114.27, 2.37, 128.63),
        (8, 2.06, 847.38, 2.37, 902.72),
        (16, 2.05, 1567.5, 2.38, 1640.95),
    )
}  # fmt: skip
#: The same table's "Duration (s)" per batch size, (chain, tree). Duration x output tok/s
#: is 256 x a whole number to within 0.05 tokens in all six runs (derived: 1000, 930, 838
#: requests for the chain at BS=1, 8, 16; 1000, 935, 840 for the tree): every request
#: answered 256 tokens.
VLLM_22752_DURATION_S = {1: (2240.21, 1990.13), 8: (280.96, 265.15), 16: (136.86, 131.05)}
VLLM_22752_OUTPUT_TOKENS = 256

# sgl-project/sglang PR #4716 (ispobock, 2025-03-24): Llama-3.3-70B-Instruct +
# EAGLE3-LLaMA3.3-Instruct-70B, H100 TP8, --speculative-num-steps 8 --speculative-eagle-topk 8
# --speculative-num-draft-tokens 64 --cuda-graph-max-bs 1: MT-bench (80 questions)
# "Throughput: 234.54 token/s, Acceptance length: 5.88" (w/o spec 88.61 token/s). One
# configuration only: converted (what top-1 rate it implies), not scored.
SGLANG_4716_URL = "https://github.com/sgl-project/sglang/pull/4716"
SGLANG_4716_AL = 5.88
