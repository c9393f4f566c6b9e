"""Figure text shown as written: names from scenario files are not TeX."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import matplotlib

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
