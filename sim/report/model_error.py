"""The line a serving answer's text gives its intervals' model-error term
(sim/uncertainty/model_error.py)."""

from __future__ import annotations

import math
from typing import Any

from sim.model.model_error import Z90

__all__ = ["model_error_line"]


def _factor(sigma: float) -> str:
    return f"{math.exp(Z90 * sigma):.2f}"


def _origin(term: dict[str, Any]) -> str:
    """The label "default" for the shipped fit (its s, a and d0 are in the JSON and
    docs/serving-intervals.md: a first screen stays within 100 columns); otherwise the
    term's ``origin_label`` and the parameters' values."""
    if term["origin_kind"] == "default":
        return "default"
    return (
        f"{term['origin_label']}: s {term['level_per_sqrt_log_batch']:.3g}, "
        f"a {term['gain_ceiling']:.3g}, d0 {term['gain_log_batch_scale']:.3g}"
    )


def model_error_line(term: dict[str, Any]) -> str:
    """One line: whether the intervals include the model's error under load, how large
    (the 90% factors at the answer's distance d) and from where, with the parameters of
    levels' s sqrt(d) and gains' a (1 - exp(-d / d0)) where they are not the shipped
    defaults (sim/uncertainty/model_error.py; the JSON's ``model_error`` has its whole
    provenance and the parameters always); the batches measured for speculation follow
    "spec." where they are not plain decoding's."""
    batch = term["decode_batch"]
    spec = term.get("measured_batches_speculative", term["measured_batches"])
    split = spec != term["measured_batches"]  # then "spec.": the line stays within 100
    at = (
        ("no decode batch" if batch is None else f"{'' if split else 'decode '}batch {batch:.3g}")
        + ", measured "
        + ", ".join(f"{b:g}" for b in term["measured_batches"])
        + ("; spec. " + ", ".join(f"{b:g}" for b in spec) if split else "")
    )
    if not term["included"]:
        why = "at a measured batch" if term["log_distance"] == 0 else "s = a = 0"
        return f"model error: not included ({why}: {at}; {_origin(term)})"
    return (
        f"model error included: x/{_factor(term['level_sigma'])} levels, "
        f"x/{_factor(term['gain_sigma'])} gains ({at}; {_origin(term)})"
    )
