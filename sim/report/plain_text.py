"""Figure text shown as written: names from scenario files are not TeX."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import matplotlib
from matplotlib.axes import Axes
from matplotlib.ticker import LogFormatter

P = ParamSpec("P")
R = TypeVar("R")


def plain_text(build: Callable[P, R]) -> Callable[P, R]:
    """``build`` (a figure builder) with matplotlib's mathtext off for the text it makes.

    Matplotlib reads text between two ``$`` as TeX, and text is user data here (scenario,
    class and lever names): a name such as ``a$b$c`` or ``$5 $6`` renders as math or fails
    to draw. No figure of specsim uses TeX.
    """

    @functools.wraps(build)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        with matplotlib.rc_context({"text.parse_math": False}):
            return build(*args, **kwargs)

    return wrapped


class PlainLogFormatter(LogFormatter):
    """Log-axis tick labels as plain numbers (``0.2``, ``1``, ``20``): matplotlib's default
    log labels are TeX (``$\\mathdefault{2\\times10^{-1}}$``), which ``plain_text`` figures
    would print as written. Which ticks are labelled is matplotlib's choice, as before."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:g}"


def log_x_axis(ax: Axes) -> None:
    """``ax``'s x axis on a base-10 log scale with plain-number tick labels."""
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(PlainLogFormatter())
    ax.xaxis.set_minor_formatter(PlainLogFormatter())
