"""The acceptance block from SGLang tree rows: the top-1 rate whose tree has each row's
accept length."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from sim.calibration.fit_block import FitBlock, block_from_fit, six_digits
from sim.calibration.lsq import Param, fit_identifiable
from sim.calibration.measurements import SpecPoint
from sim.calibration.result import Residual
from sim.scenario.schema import Scenario


def tree_acceptance_block(base: Scenario, points: Sequence[SpecPoint]) -> FitBlock | None:
    """The top-1 rate (flat over depth) at which SGLang's tree of each tree row has the
    row's accept length, by the closed form (sim/model/tree/required.py ``accept_length``:
    the tree built at the rank rates, E[L] = 1 + the sum of its path products), the ranks
    below by the base's residual shares; the scenario drafts the first row's tree. None
    when the base gives no rank shape."""
    from sim.binding.acceptance_model import rank_shares  # lazy: tree rows only
    from sim.model.tree.required import RankShape, accept_length

    spec = base.acceptance
    widest = max(p.topk for p in points)
    if spec is None or spec.rank_shape() is None or spec.rank_rates_by_depth is not None:
        return None
    shares = rank_shares(spec, widest)
    flat = tuple(float(h) for h in shares if isinstance(h, float))
    if len(flat) + 1 < widest:
        return None
    shape = RankShape(flat)
    name = "acceptance.first_rate"

    def predicted(x: float, p: SpecPoint) -> float:
        assert p.num_draft_tokens is not None
        return accept_length(shape, x, (p.num_steps, p.topk, p.num_draft_tokens))

    def fun(values: dict[str, float]) -> np.ndarray:
        x = min(max(values[name], 0.0), 1.0)
        return np.array(
            [(predicted(x, p) - p.accept_length) / p.accept_length_sigma for p in points]
        )

    param = Param(name, 0.5, 0.0, 1.0, 0.1)
    fit = fit_identifiable(fun, [param], [name], "acceptance", probe=[0.5])
    x = min(max(fit.values[name], 0.0), 1.0)
    first = points[0]
    overrides: dict[str, Any] = {
        "speculation.num_steps": first.num_steps,
        "speculation.topk": first.topk,
        "speculation.num_draft_tokens": first.num_draft_tokens,
        "acceptance.shape": "flat",
    }
    if spec.rank_rates is not None:  # q_1 is the top-1 rate; the others keep their shares
        overrides["acceptance.rank_rates"] = [six_digits(x)] + [
            six_digits((1.0 - x) * h) for h in flat
        ]
    else:
        overrides[name] = six_digits(x)
    residuals = [
        Residual(
            f"accept length of {p.label()} (closed form)",
            p.accept_length,
            predicted(x, p),
            p.accept_length_sigma,
            p.source,
        )
        for p in points
    ]
    block = block_from_fit([param], fit, residuals, overrides)
    note = (
        f"acceptance from {len(points)} tree row{'s' * (len(points) != 1)}: top-1 rate "
        f"{x:.4f} at every depth, the ranks below by the base's residual shares, SGLang's "
        f"tree built by a drafter whose scores are the rank rates; the scenario drafts "
        f"{first.label()}"
    )
    return replace(block, notes=(*block.notes, note))
