"""Published rank-wise acceptance profiles: P(the target's token is the drafter's rank-r
guess | the parent was accepted), r = 1..W, as named presets.

A preset is used through its residual shares h_r = p_r / (1 - p_1) (sim/model/tree/rates.py):
the scenario's own top-1 rate (``alpha``, ``per_position`` or a mix, i.e. what the user
measured on a chain) stays, and the preset says how the probability that the top-1 guess
misses spreads over the next ranks. None of them is an EAGLE-3 measurement (none was found
published); they come from a small draft model and from Medusa heads, and serve as priors
for the shape of the miss distribution, not for the top-1 rate.

Each profile keeps the published numbers as printed and derives p_r from them in code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.model.tree.rates import residual_shares

__all__ = ["DEFAULT_RANK_PROFILE", "RANK_PROFILES", "RankProfile", "rank_profile"]


@dataclass(frozen=True, slots=True)
class RankProfile:
    """A published profile: ``rates`` p_1..p_W (rank-wise, not cumulative), its source
    (repository and path at a commit) and what it measured."""

    name: str
    rates: tuple[float, ...]
    source: str
    note: str

    @property
    def width(self) -> int:
        return len(self.rates)

    def shares(self) -> np.ndarray:
        """Residual shares h_2..h_W, shape (W - 1,)."""
        return residual_shares(self.rates)


def _differences(cumulative: tuple[float, ...]) -> tuple[float, ...]:
    """Rank-wise rates from cumulative top-k accuracies (top-1, top-2, ...)."""
    c = np.asarray(cumulative, dtype=float)
    return tuple(float(v) for v in np.diff(np.concatenate([[0.0], c])))


#: Infini-AI-Lab/Sequoia acceptance-rate-vector.pt @ 0ff3ff71475ca148f2dfb7545e0de5caf5c67b39
#: (a float tensor of 34 entries: entry 0 is 0, entries 1..32 the fraction of verification
#: steps whose accepted child had rank 1..32, entry 33 none accepted; written by
#: tests/test_accept.py; tree_search.py uses entries 0..32 as its acceptance vector).
#: Ranks 1..32, as printed to 6 decimals.
_SEQUOIA = (
    0.634183, 0.107946, 0.056972, 0.022489, 0.01949, 0.014993, 0.004498, 0.002999,
    0.011994, 0.004498, 0.007496, 0.004498, 0.005997, 0.002999, 0.001499, 0.002999,
    0.001499, 0.002999, 0.0, 0.002999, 0.002999, 0.002999, 0.0, 0.001499,
    0.0, 0.001499, 0.0, 0.0, 0.0, 0.001499, 0.001499, 0.001499,
)  # fmt: skip

#: FasterDecoding/Medusa assets/medusa_acc.csv @ 5d374e9bf99f7bf6438cb40a4e0c2c29ff9ed7f7,
#: columns train/medusa0_top1..top5 (cumulative top-k accuracy of the first Medusa head on
#: training batches; runs test_medusa_mlp_vicuna-{7b,13b,33b}-v1.3_medusa_5_lr_0.001_layers_1).
_MEDUSA_HEAD0 = {
    "7b": (0.5603876709938049, 0.6717196702957153, 0.7271371483802795, 0.7599403262138367,
           0.7799453139305115),
    "13b": (0.5939363837242126, 0.705268383026123, 0.7578279972076416, 0.7924950122833252,
            0.8161033391952515),
    "33b": (0.6045850515365601, 0.7161898016929626, 0.7648836374282837, 0.798293948173523,
            0.8222854137420654),
}  # fmt: skip

RANK_PROFILES: dict[str, RankProfile] = {
    "sequoia-jf68m-llama2-7b": RankProfile(
        name="sequoia-jf68m-llama2-7b",
        rates=_SEQUOIA,
        source="Infini-AI-Lab/Sequoia acceptance-rate-vector.pt "
        "@ 0ff3ff71475ca148f2dfb7545e0de5caf5c67b39",
        note="width-32 one-level trees; the model pair and mode are not recorded in the "
        "file: the repository's README example and demo-config.json use it with "
        "JackFram/llama-68m drafting for Llama-2-7b (T 0.6, stochastic); ~667 steps",
    ),
    **{
        f"medusa-vicuna-{size}-head0": RankProfile(
            name=f"medusa-vicuna-{size}-head0",
            rates=_differences(cum),
            source="FasterDecoding/Medusa assets/medusa_acc.csv "
            "@ 5d374e9bf99f7bf6438cb40a4e0c2c29ff9ed7f7",
            note=f"Vicuna-{size} v1.3, first Medusa head, top-1..top-5 accuracy on training "
            "batches, differenced into rank-wise rates",
        )
        for size, cum in _MEDUSA_HEAD0.items()
    },
}


#: The profile a study drafting a tree takes when the scenario gives no rank shape (``tree-load``
#: at its defaults on a chain scenario): the widest published one (32 ranks, so any topk of
#: SGLang's trees is covered) and the prior the validation's tree cases use. A prior for the
#: shape of the top-1's misses, not a measurement of the user's drafter: the answer says so.
DEFAULT_RANK_PROFILE = "sequoia-jf68m-llama2-7b"


def rank_profile(name: str) -> RankProfile:
    """The preset ``name``; KeyError naming the known presets otherwise."""
    try:
        return RANK_PROFILES[name]
    except KeyError:
        raise KeyError(
            f"unknown rank profile {name!r}; known: {', '.join(sorted(RANK_PROFILES))}"
        ) from None
