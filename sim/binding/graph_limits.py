"""The CUDA-graph capture limits of a scenario's serving passes (``graph_limits``): how
many tokens and rows a graphed pass may have before it runs eagerly, and the captured
batch sizes a padded pass rounds its rows up to (sim/hardware/pass_physics.py
``PassPhysics.graph_max_tokens``, ``graph_max_rows``, ``graph_rows``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.scenario.sections.serving import ServingSpec

__all__ = ["PADDED_PASSES", "GraphLimits", "graph_limits"]

#: The passes a graphed engine pads up to its captured batch sizes (``serving.graph_batches``):
#: SGLang's target runner (decode, verify) and its EAGLE draft runner (draft step) share
#: ``get_batch_sizes_to_capture``; its draft extend ran eagerly until sgl-project/sglang
#: PR #6606 (2025-05) and its prefills run eagerly.
PADDED_PASSES = frozenset({"decode", "verify", "draft_step"})


@dataclass(frozen=True, slots=True)
class GraphLimits:
    """The capture limits of the serving passes (None: no limit): ``max_tokens``, the most
    tokens of a graphed pass; the most rows (sequences) of the plain decode and the
    prefill (``plain_rows``), the verify (``spec_rows``) and the drafter's passes
    (``draft_rows``); and the captured batch sizes the plain decode (``plain_sizes``) and
    the speculative passes (``spec_sizes``) are padded up to."""

    max_tokens: int | None
    plain_rows: int | None
    spec_rows: int | None
    draft_rows: int | None
    plain_sizes: tuple[int, ...] | None
    spec_sizes: tuple[int, ...] | None

    @property
    def limited(self) -> bool:
        """Whether any pass has a token or row limit."""
        rows = (self.max_tokens, self.plain_rows, self.spec_rows, self.draft_rows)
        return rows != (None, None, None, None)

    def max_rows(self, name: str, drafter: bool) -> int | None:
        """The most rows of pass ``name`` (on the drafter when ``drafter``) that run graphed."""
        if drafter:
            return self.draft_rows
        return self.plain_rows if name in ("decode", "prefill") else self.spec_rows

    def padded_to(self, name: str) -> tuple[int, ...] | None:
        """The captured sizes pass ``name`` is padded up to (None: not padded)."""
        if name not in PADDED_PASSES:
            return None
        return self.plain_sizes if name == "decode" else self.spec_sizes


def graph_limits(serving: ServingSpec | None) -> GraphLimits:
    """The capture limits ``[serving]`` sets (none without the section). The speculative
    passes' captured sizes default to the plain decode's
    (``serving.graph_batches_speculative``, else ``graph_batches`` unless
    ``graph_max_batch_speculative`` is given); a pass with captured sizes has their largest
    as its row limit, otherwise ``graph_max_batch``, ``graph_max_batch_speculative``
    (default: the plain limit) and ``graph_max_batch_draft`` (default: the speculative
    limit)."""
    if serving is None:
        return GraphLimits(None, None, None, None, None, None)
    sizes = serving.graph_batches
    spec_sizes = serving.graph_batches_speculative
    if spec_sizes is None and serving.graph_max_batch_speculative is None:
        spec_sizes = sizes
    plain_list = None if sizes is None else tuple(sizes)
    spec_list = None if spec_sizes is None else tuple(spec_sizes)
    max_rows = serving.graph_max_batch if plain_list is None else plain_list[-1]
    spec_rows = serving.graph_max_batch_speculative if spec_list is None else spec_list[-1]
    spec_rows = max_rows if spec_rows is None else spec_rows
    draft_rows = (
        spec_rows if serving.graph_max_batch_draft is None else serving.graph_max_batch_draft
    )
    return GraphLimits(
        serving.graph_max_tokens, max_rows, spec_rows, draft_rows, plain_list, spec_list
    )
