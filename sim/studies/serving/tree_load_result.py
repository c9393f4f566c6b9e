"""What ``tree-load`` answers (sim/studies/serving/tree_load.py): per load the policies'
tok/s and the paired tree / chain ratios (``LoadPoint``), where a tree stops beating a
chain (``Crossing``), and the study over its grid with the best draft per load as a
``serving.draft_table`` (``TreeLoadResult``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sim.model.drafts import Draft
from sim.model.tree import Tree
from sim.simulation.serving.metrics import Ratio
from sim.studies.serving.tree_load_drafts import chain_names, table_row, tree_names

__all__ = ["METRICS", "Crossing", "LoadPoint", "TreeLoadResult"]


#: The metrics compared, per-user first.
METRICS: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s")


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One concurrency: per policy (by name) the mean per-user and aggregate tok/s and
    accept length with their intervals, the mean decode batch, and per (tree, chain) pair
    the paired ratios ``vs_chain[tree][chain][metric]``."""

    concurrency: int
    per_user_tok_s: dict[str, Ratio]
    aggregate_tok_s: dict[str, Ratio]
    accept_length: dict[str, Ratio]
    mean_batch: Ratio
    vs_chain: dict[str, dict[str, dict[str, Ratio]]]
    #: ``vs_chain``'s 90% intervals from inputs and model (sim/studies/serving/tree_load_draws.py;
    #: without draws: the Monte Carlo 95% interval), same keys.
    vs_chain_interval90: dict[str, dict[str, dict[str, list[float] | None]]] = field(
        default_factory=dict
    )
    #: The largest policy's mean decode batch is above the largest batch the scenario's
    #: costs are measured at (sim/uncertainty/model_error.py ``beyond_measured_note``).
    beyond_measured: bool = False
    #: The largest policy's mean decode batch: where ``vs_chain_interval90`` takes the
    #: model-error term (sim/uncertainty/model_error.py).
    decode_batch: float = 1.0

    @property
    def best(self) -> str:
        """The policy with the largest mean per-user tok/s here."""
        return max(self.per_user_tok_s, key=lambda n: self.per_user_tok_s[n].mean)


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where ``tree`` stops beating ``chain`` on ``metric`` (see the module docstring)."""

    tree: str
    chain: str
    metric: str
    last_win: int | None
    first_loss: int | None
    at: float | None
    wins_again: tuple[int, ...] = ()
    #: The crossing's 90% interval from inputs and model (sim/studies/serving/tree_load_draws.py
    #: ``crossing_interval``; an end None: off the grid); None: not computed.
    interval90: tuple[float | None, float | None] | None = None

    @property
    def never_wins(self) -> bool:
        return self.last_win is None

    @property
    def always_wins(self) -> bool:
        return self.last_win is not None and self.first_loss is None


@dataclass(frozen=True, slots=True)
class TreeLoadResult:
    """The study over a grid of concurrencies (see the module docstring)."""

    scenario: str
    concurrencies: tuple[int, ...]
    drafts: dict[str, Draft]
    points: tuple[LoadPoint, ...]
    replications: int
    requests: int
    seed: int
    assumptions: tuple[str, ...]
    crossings: tuple[Crossing, ...] = field(default=())
    #: What the intervals took (sim/uncertainty/perturb.py ``InputDraws.doc``: label, draws,
    #: replications a draw, the inputs drawn) with ``draws_run``, and the note of loads
    #: beyond the highest measured batch.
    intervals: dict[str, Any] = field(default_factory=dict)
    #: What the study took as a named default because neither the scenario nor the options
    #: gave it (``tree``, ``acceptance.rank_profile``), each with a short line saying what
    #: it is (its source is among the ``assumptions``); empty when nothing was defaulted.
    defaults: dict[str, str] = field(default_factory=dict)
    #: Per load, the replications its drafts ran together (each draft's one serving run of
    #: the requests a replication): ``replications`` x drafts, or ``FIRST`` x drafts where
    #: sequential replications stopped it (``load_settled``).
    replications_run: dict[int, int] = field(default_factory=dict)

    @property
    def trees(self) -> tuple[str, ...]:
        return tree_names(self.drafts)

    @property
    def chains(self) -> tuple[str, ...]:
        return chain_names(self.drafts)

    def best_table(self) -> list[list[int]] | None:
        """``serving.draft_table`` rows of the best policy per load (static trees and ties
        merged; see the module docstring); None when a static tree (``[speculation.tree]``)
        is best at some load: a table row names SGLang's trees and chains only."""
        rows: list[list[int]] = []
        grid = self.concurrencies
        if any(isinstance(self.drafts[p.best], Tree) for p in self.points):
            return None
        for i, point in enumerate(self.points):
            draft = self.drafts[point.best]
            start = 1 if i == 0 else rows[-1][1] + 1
            end = 1024 if i == len(grid) - 1 else max(start, int(math.sqrt(grid[i] * grid[i + 1])))
            if rows and table_row(0, 0, draft)[2:] == rows[-1][2:]:
                rows[-1][1] = end
            else:
                rows.append(table_row(start, end, draft))
        return rows
