"""``[acceptance]``: what was measured of the acceptance, its shape by position, its
per-request spread, and the rank rates of trees."""

# No ``from __future__ import annotations`` here: pydantic evaluates a string annotation
# by compiling it (one ``compile`` per field), which made building these models most
# of their import time (start-up); the annotations are evaluated once, as objects.
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from sim.errors import UnknownNameError
from sim.scenario.sections.bounds import MAX_LIST, MAX_NUM_STEPS, Rate
from sim.scenario.sections.section import Section

# The tree presets (sim.model.tree.presets) are imported where a validator needs them: a
# chain scenario never does (start-up).


class Heterogeneity(Section):
    """Per-request spread of acceptance: a Beta distribution around each mean rate.

    Each request draws its rate from Beta(m * c, (1 - m) * c) with mean m (the class's
    ``alpha`` or each ``per_position`` entry) and concentration c, given directly
    (``concentration``) or through a standard deviation (``std``, giving
    c = m (1 - m) / std^2 - 1). Neither set: every request has exactly the mean rates.
    """

    concentration: Annotated[float, Field(gt=0.0, le=1e9)] | None = None
    std: Annotated[float, Field(ge=0.0, lt=0.5)] | None = None

    @model_validator(mode="after")
    def _one_spread(self) -> Self:
        if self.concentration is not None and self.std is not None:
            raise ValueError("give at most one of concentration or std")
        return self

    def _check_std(self, means: list[float]) -> None:
        """std must leave a proper Beta: std^2 < m (1 - m) for every mean strictly in (0, 1)."""
        if not self.std:
            return
        for m in means:
            if 0.0 < m < 1.0 and self.std**2 >= m * (1.0 - m):
                raise ValueError(
                    f"std {self.std:g} is too large for mean rate {m:g}: a Beta distribution "
                    f"with that mean has std below {(m * (1.0 - m)) ** 0.5:.4g}"
                )


class AcceptanceClass(Heterogeneity):
    """One class of a workload mix (``[[acceptance.mix]]``): e.g. chat or code."""

    name: Annotated[str, Field(max_length=200)]
    weight: Annotated[float, Field(gt=0.0, le=1e9)]
    alpha: Rate | None = None
    per_position: Annotated[list[Rate], Field(min_length=1, max_length=MAX_NUM_STEPS)] | None = None

    @model_validator(mode="after")
    def _exactly_one_rate(self) -> Self:
        given = [n for n in ("alpha", "per_position") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"mix class {self.name!r}: give exactly one of alpha or per_position")
        self._check_std([self.alpha] if self.alpha is not None else list(self.per_position or []))
        return self


#: Keys of [acceptance] that say what was measured; exactly one is given.
ACCEPTANCE_ANCHORS: tuple[str, ...] = (
    "alpha",
    "accept_length",
    "first_rate",
    "per_position",
    "mix",
    "rank_rates",
    "rank_rates_by_depth",
)

Shape = Literal["auto", "flat", "geometric", "step", "repeat"]
Method = Literal["eagle3", "eagle", "mtp", "draft_model", "generic"]


class AcceptanceSpec(Heterogeneity):
    """Conditional per-position acceptance: what was measured, its shape by position, and
    for trees its rank-wise form.

    One anchor: ``alpha`` (the equal rate that gives the measured accept length at
    ``measured_num_steps``), ``accept_length`` (measured there), ``first_rate`` (a_1),
    ``per_position`` (measured conditional rates a_1..a_n), ``mix`` (weighted classes,
    each with ``alpha`` or ``per_position``) or ``rank_rates``. ``shape`` says how the rate
    varies with position (sim/model/shapes.py): ``flat``, ``geometric`` or ``step`` with
    ``decay``, and for a ``per_position`` list how it continues past the list (``repeat``:
    the last rate repeats). ``auto`` (the default): a list of three or more rates continues
    by the shape with the lowest held-out error on it; otherwise the decay prior of
    ``method`` (sim/binding/priors.py) gives shape and decay (``rank_rates``, given "at
    every depth", stay flat under ``auto``). ``concentration`` or ``std`` make the rates
    vary per request (Beta around the mean); at the top level of a mix they are the
    default of classes that set neither.

    Trees (``speculation.topk > 1``; sim/model/tree/theory.py) need the other ranks too:
    ``rank_rates = [q_1, ..., q_W]`` gives P(the target's token is the drafter's rank-r guess
    | its parent was accepted) at every depth (q_1 then plays the role of the first rate), or
    ``rank_profile`` names a published profile (sim/model/tree/presets.py) whose shape the
    ranks 2..W take while the other anchors give the top-1 rate. Either way the ranks
    below the first follow the top-1 rate by residual shares (sim/model/tree/rates.py:
    q_r = (1 - q_1) h_r, h_r = p_r / (1 - p_1)), so a search or a per-depth top-1 rate keeps
    the profile's shape. ``rank_rates_by_depth = [[q_1, ..., q_W], ...]`` gives the rank
    rates measured at each depth (row d at depth d + 1, the last row repeating below): the
    top-1 rate of each depth and, below it, that depth's own residual shares (rank profiles
    that differ by depth). ``rank_extend = "geometric"`` extends a profile shorter than topk
    (each further share is the last one times the ratio of the last two).
    """

    alpha: Rate | None = None
    accept_length: Annotated[float, Field(ge=1.0, le=MAX_NUM_STEPS + 1)] | None = None
    first_rate: Rate | None = None
    per_position: Annotated[list[Rate], Field(min_length=1, max_length=MAX_NUM_STEPS)] | None = None
    mix: Annotated[list[AcceptanceClass], Field(min_length=1, max_length=MAX_LIST)] | None = None
    rank_rates: Annotated[list[Rate], Field(min_length=1, max_length=MAX_LIST)] | None = None
    #: Rank rates measured at each depth: row d is [q_1, ..., q_W] at depth d + 1 (the last
    #: row repeats below the list); every row has the same W.
    rank_rates_by_depth: (
        Annotated[
            list[Annotated[list[Rate], Field(min_length=1, max_length=MAX_LIST)]],
            Field(min_length=1, max_length=MAX_NUM_STEPS),
        ]
        | None
    ) = None
    rank_profile: str | None = None
    rank_extend: Literal["none", "geometric"] = "none"
    shape: Shape = "auto"
    decay: Annotated[float, Field(gt=0.0, le=2.0)] | None = None
    method: Method = "generic"
    #: The num_steps the alpha or accept length was measured at (default: the file's
    #: speculation.num_steps, filled in when the scenario is read).
    measured_num_steps: Annotated[int, Field(gt=0, le=MAX_NUM_STEPS)] | None = None
    #: log rho: past the measured positions every rate is rho times the shape's per
    #: position (0: the shape as it is). Left out with shape ``auto``: the nominal shape
    #: error of published profiles and cross-run series, which falls
    #: (sim/binding/priors.py ``shape_error``); with a given shape 0.
    tilt: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None

    @field_validator("rank_rates")
    @classmethod
    def _disjoint_ranks(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and sum(value) > 1.0 + 1e-9:
            raise ValueError(
                f"rank rates sum to {sum(value):.6g} > 1: the ranks are disjoint events (the "
                "target's token is at most one of the drafter's guesses)"
            )
        if value is not None and len(value) > 1 and value[0] >= 1.0:
            raise ValueError("with q_1 = 1 the other ranks must be 0: give a single rate")
        return value

    @field_validator("rank_rates_by_depth")
    @classmethod
    def _rows_are_rank_rates(cls, value: list[list[float]] | None) -> list[list[float]] | None:
        if value is None:
            return value
        for d, row in enumerate(value, start=1):
            if len(row) != len(value[0]):
                raise ValueError(
                    f"depth {d} gives {len(row)} ranks, depth 1 gives {len(value[0])}: every "
                    "depth gives the same ranks"
                )
            cls._disjoint_ranks(row)
        return value

    @field_validator("rank_profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        # lazy: only a tree's rank profile needs it (start-up)
        from sim.model.tree.presets import RANK_PROFILES

        if value is not None and value not in RANK_PROFILES:
            raise ValueError(str(UnknownNameError("rank profile", value, sorted(RANK_PROFILES))))
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [n for n in ACCEPTANCE_ANCHORS if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(ACCEPTANCE_ANCHORS)}")
        if self.rank_rates is not None and self.rank_profile is not None:
            raise ValueError("give rank_rates or rank_profile, not both")
        if self.rank_rates_by_depth is not None and self.rank_profile is not None:
            raise ValueError("give rank_rates_by_depth or rank_profile, not both")
        if self.mix is not None:
            names_ = [c.name for c in self.mix]
            if len(set(names_)) != len(names_):
                raise ValueError(f"mix class names must be unique, got {names_}")
            if self.std:
                for cls in self.mix:
                    if cls.concentration is None and cls.std is None:
                        cls_rates = [cls.alpha] if cls.alpha is not None else cls.per_position
                        self._check_std(list(cls_rates or []))
        else:
            self._check_std(self.top1_listed())
        return self

    @model_validator(mode="after")
    def _shape_fits_anchor(self) -> Self:
        listed = self.per_position is not None or self.mix is not None
        if self.shape == "repeat" and not listed:
            raise ValueError("shape = 'repeat' continues a per_position list; use flat")
        if self.decay is not None and self.shape not in ("geometric", "step"):
            raise ValueError(
                f"decay is the parameter of shape 'geometric' or 'step', not {self.shape!r}"
            )
        k0 = self.measured_num_steps
        if self.accept_length is not None and k0 is not None and self.accept_length > k0 + 1:
            raise ValueError(
                f"accept_length {self.accept_length:g} exceeds measured_num_steps + 1 = {k0 + 1}"
            )
        return self

    @property
    def anchor(self) -> str:
        """Which of ``ACCEPTANCE_ANCHORS`` this section gives."""
        return next(n for n in ACCEPTANCE_ANCHORS if getattr(self, n) is not None)

    def top1_listed(self) -> list[float]:
        """The top-level top-1 rates as given (empty for a mix or an accept length)."""
        if self.alpha is not None:
            return [self.alpha]
        if self.first_rate is not None:
            return [self.first_rate]
        if self.rank_rates is not None:
            return [self.rank_rates[0]]
        if self.rank_rates_by_depth is not None:
            return [row[0] for row in self.rank_rates_by_depth]
        return list(self.per_position or [])

    def rank_shape(self) -> list[float] | None:
        """The rank profile p_1..p_W that shapes ranks 2..W (None: none given)."""
        if self.rank_rates is not None:
            return list(self.rank_rates)
        if self.rank_rates_by_depth is not None:  # depth 1's (each depth: ``rank_shapes``)
            return list(self.rank_rates_by_depth[0])
        if self.rank_profile is not None:
            # lazy: only a tree's rank profile needs it (start-up)
            from sim.model.tree.presets import rank_profile

            return list(rank_profile(self.rank_profile).rates)
        return None

    def rank_shape_field(self) -> str:
        if self.rank_rates_by_depth is not None:
            return "acceptance.rank_rates_by_depth"
        return "acceptance.rank_profile" if self.rank_profile else "acceptance.rank_rates"

    @property
    def heterogeneous(self) -> bool:
        """True when rates vary from request to request (a mix or a Beta spread)."""
        if self.mix is not None:
            return True
        return bool(self.concentration is not None or self.std)
