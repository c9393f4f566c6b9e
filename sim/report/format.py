"""Number formats shared by the text reports."""

from __future__ import annotations


def fmt_alpha(alpha: float | None, missing: str = "unreachable") -> str:
    """A conditional rate to three decimals, or ``missing`` (None: out of reach)."""
    return missing if alpha is None else f"{alpha:.3f}"


def count(n: object, noun: str) -> str:
    """``n`` and ``noun`` (given in the singular), plural unless ``n`` is 1: "1 replication",
    "20 replications"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits with its trailing zeros (0.6 -> "0.600", so a
    figure's precision reads the same whatever its value); no bare trailing point (100.0 ->
    "100"); large and small values in exponent form as ``:g`` gives them."""
    text = f"{x:#.{digits}g}"
    mantissa, e, exponent = text.partition("e")
    return mantissa.rstrip(".") + e + exponent
