"""The uncertain inputs of a scenario: which of its inputs are uncertain, and how.

* every ``[uncertainty]`` entry: a ``stderr`` is a normal around the value (with the
  ``[uncertainty.correlation]`` matrix among them: calibrated values with their
  covariance), a ``range`` uniform over it; list fields give one input per entry
  (``acceptance.per_position[1]``);
* the acceptance decay when it comes from the draft method's prior: the prior's
  empirical quantile function (sim/binding/priors.py), flat its optimistic end;
* the tilt left to the draft method's shape error: a normal around its nominal tilt;
* ``hardware.bandwidth_efficiency`` when derived compute enters the answer and no range
  is stated: uniform over 0.5-1 of peak (sim/binding/decompose.py);
* ``hardware.expert_read_efficiency`` when a MoE verify's growth over tokens comes from
  its weights (the extra routed experts it reads), the value is the default and no range
  is stated: uniform over 0.5-1 of peak (sim/hardware/expert_reads.py).

``bind`` finds them once and the ``Bound`` carries them (``Bound.inputs``). Draws are
Sobol points, linearly scrambled and digitally shifted (sim/model/sobol.py), mapped
through each input's quantile function and clipped to the field's valid range
(``field_bounds``); the rows a study solves (``study_rows``) add the drivers' ends and
the draws conditioned on each input. What the draws give (the sampled closed forms) is
sim/uncertainty/sampled_draws.py's.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sim.binding.decompose import EFFICIENCY_RANGE, EFFICIENCY_REASON
from sim.binding.priors import DecayPrior
from sim.hardware.expert_reads import (
    EXPERT_READ_EFFICIENCY,
    EXPERT_READ_EFFICIENCY_RANGE,
    EXPERT_READ_REASON,
)
from sim.model.sobol import scrambled_sobol_points
from sim.scenario.schema import Scenario

if typing.TYPE_CHECKING:
    from sim.binding.acceptance_shape import AcceptanceShape

_Z90 = 1.6448536269514722  # the standard normal's 95% quantile
#: The two ends of an input reported as a driver: the 5% and 95% quantiles.
END_QUANTILES = (0.05, 0.95)
_Z90 = 1.6448536269514722  # the standard normal's 95% quantile
#: The share of an input's draws clipped to a bound of its field above which the answer
#: says so (``UncertainInput.clipping_note``): one draw in a hundred.
CLIP_NOTE_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class UncertainInput:
    """One uncertain input: its nominal value and distribution.

    ``kind``: ``normal`` (``stderr``; the shape error's tilt is one), ``uniform``
    (``low``..``high``) or ``prior`` (the decay prior's quantile function); ``bounds`` the
    field's valid range (draws are clipped to it).
    """

    field: str
    nominal: float
    kind: str
    origin: str
    reason: str
    stderr: float = 0.0
    low: float = 0.0
    high: float = 0.0
    prior: DecayPrior | None = None
    bounds: tuple[float, float] = (-math.inf, math.inf)
    integer: bool = False
    #: The fields a draw of it sets with it, found with it (``uncertain_inputs``): a decay
    #: keeps the shape it was resolved with (``acceptance.shape``).
    set_with: tuple[tuple[str, typing.Any], ...] = ()

    def from_uniform(self, u: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
        """Values at uniforms ``u`` (n,) (``z``: correlated standard normals for normal)."""
        if self.kind == "normal":
            from scipy.special import ndtri  # lazy: scipy.special at import is slow

            zz = ndtri(u) if z is None else z
            values = self.nominal + self.stderr * zz
        elif self.kind == "uniform":
            values = self.low + (self.high - self.low) * u
        else:
            assert self.prior is not None
            values = np.asarray(self.prior.quantile(u), dtype=float)
        return np.clip(values, *self.bounds)

    def ends(self) -> tuple[float, float]:
        """The 5% and 95% quantiles (a driver's low and high end)."""
        if self.kind == "normal":
            lo, hi = self.nominal - _Z90 * self.stderr, self.nominal + _Z90 * self.stderr
            return float(max(lo, self.bounds[0])), float(min(hi, self.bounds[1]))
        u = np.array(END_QUANTILES)
        values = self.from_uniform(u)
        return float(values[0]), float(values[1])

    def clipped_shares(self) -> tuple[float, float]:
        """The shares of this input's distribution below and above the field's valid range
        (its draws there are clipped to the bound)."""
        lo, hi = self.bounds
        if self.kind == "normal" and self.stderr > 0:
            from scipy.special import ndtr  # lazy: scipy.special at import is slow

            return (
                float(ndtr((lo - self.nominal) / self.stderr)),
                float(1.0 - ndtr((hi - self.nominal) / self.stderr)),
            )
        if self.kind == "uniform" and self.high > self.low:
            width = self.high - self.low
            return (max(0.0, lo - self.low) / width, max(0.0, self.high - hi) / width)
        return (0.0, 0.0)

    def clipping_note(self) -> str | None:
        """A note naming the field when its stated error or range reaches past the field's
        valid values for at least ``CLIP_NOTE_SHARE`` of the draws (None: it does not)."""
        below, above = self.clipped_shares()
        parts = [
            f"{share:.0%} of its draws fall {side} the field's {which} bound "
            f"{round(bound, 6):g} and are clipped to it"
            for share, side, which, bound in (
                (below, "below", "lower", self.bounds[0]),
                (above, "above", "upper", self.bounds[1]),
            )
            if share >= CLIP_NOTE_SHARE
        ]
        if not parts:
            return None
        stated = (
            f"± {self.stderr:.4g}"
            if self.kind == "normal"
            else f"range {self.low:.4g}-{self.high:.4g}"
        )
        return (
            f"{self.field}: the stated {stated} is wider than the value {self.nominal:.4g} allows: "
            + " and ".join(parts)
        )

    @property
    def spread(self) -> tuple[float, float] | None:
        """(low, high) for reports: the range, the prior's 5-95%, or None (a stderr)."""
        if self.kind == "uniform":
            return (self.low, self.high)
        if self.kind == "prior":
            return self.ends()
        return None


# --------------------------------------------------------------------------- field bounds


def _field_info(scenario: Scenario, dotted: str):
    section, key = dotted.split(".", 1)
    key = key.split("[", 1)[0]
    return type(getattr(scenario, section)).model_fields[key]


def field_bounds(scenario: Scenario, dotted: str) -> tuple[float, float]:
    """The valid range of a numeric field from its schema constraints (gt/ge/lt/le)."""
    info = _field_info(scenario, dotted)
    lo, hi = -math.inf, math.inf
    found = list(info.metadata)

    def walk(annotation: object) -> None:
        for arg in typing.get_args(annotation):
            found.extend(getattr(arg, "metadata", []) or [])
            if hasattr(arg, "__metadata__"):
                found.extend(arg.__metadata__)
            walk(arg)

    walk(info.annotation)
    for meta in found:
        for c in getattr(meta, "metadata", [meta]):  # annotated_types Gt/Ge/Lt/Le
            if getattr(c, "gt", None) is not None:
                lo = max(lo, float(c.gt) + 1e-9 * max(1.0, abs(float(c.gt))))
            if getattr(c, "ge", None) is not None:
                lo = max(lo, float(c.ge))
            if getattr(c, "lt", None) is not None:
                hi = min(hi, float(c.lt) - 1e-9 * max(1.0, abs(float(c.lt))))
            if getattr(c, "le", None) is not None:
                hi = min(hi, float(c.le))
    if dotted.startswith("acceptance.accept_length") and scenario.acceptance is not None:
        k0 = scenario.acceptance.measured_num_steps or scenario.num_steps
        hi = min(hi, float(k0 + 1))
    return lo, hi


def _value(scenario: Scenario, dotted: str) -> float:
    section, key = dotted.split(".", 1)
    if "[" in key:
        name, index = key[:-1].split("[")
        return float(getattr(getattr(scenario, section), name)[int(index)])
    return float(getattr(getattr(scenario, section), key))


# --------------------------------------------------------------------------- inputs


def _set_with(field: str, shape: AcceptanceShape | None) -> tuple[tuple[str, typing.Any], ...]:
    """What a draw of ``field`` sets with it: a decay, the acceptance shape it was resolved
    with (the shape a prior gives is not in the file)."""
    if field == "acceptance.decay" and shape is not None:
        return (("acceptance.shape", shape.shape),)
    return ()


def uncertain_inputs(
    scenario: Scenario,
    shape: AcceptanceShape | None,
    derived_compute: bool,
    expert_growth: bool = False,
) -> tuple[UncertainInput, ...]:
    """Every uncertain input of a scenario (see the module docstring), in a fixed order,
    given its acceptance ``shape``, whether its hardware model derives compute from the
    weights and the GPU preset (``derived_compute``: ``PassModel.uses_derived_compute``)
    and whether a MoE verify grows by its extra experts' reads (``expert_growth``:
    ``PassModel.grows_experts``): ``bind`` finds them once (``Bound.inputs``)."""
    out: list[UncertainInput] = []
    entries = scenario.uncertainty.entries()  # read once: the inputs, then what they state
    for dotted, entry in entries.items():
        section, key = dotted.split(".", 1)
        value = getattr(getattr(scenario, section), key)
        names = (
            [f"{dotted}[{i}]" for i in range(len(value))] if isinstance(value, list) else [dotted]
        )
        for i, name in enumerate(names):
            nominal = _value(scenario, name)
            common: dict[str, typing.Any] = {  # what both kinds of input carry
                "field": name,
                "nominal": nominal,
                "origin": entry.resolved_origin,
                "reason": entry.reason,
                "bounds": field_bounds(scenario, name),
                "integer": isinstance(value, int) and not isinstance(value, bool),
                "set_with": _set_with(name, shape),
            }
            if entry.range is not None:
                low, high = entry.range
                if high > low:
                    out.append(UncertainInput(kind="uniform", low=low, high=high, **common))
            elif entry.stderr is not None:
                se = entry.stderr[i] if isinstance(entry.stderr, list) else entry.stderr
                if se > 0:
                    out.append(UncertainInput(kind="normal", stderr=float(se), **common))
    # A field the file states (even with a zero range or stderr: "known exactly") is never
    # given a default spread below.
    fields = {u.field for u in out} | set(entries)
    prior = shape.prior if shape is not None else None
    if prior is not None and prior.high > prior.low and "acceptance.decay" not in fields:
        assert shape is not None
        out.append(
            UncertainInput(
                "acceptance.decay",
                shape.decay,
                "prior",
                "derived",
                shape.reason,
                prior=prior,
                bounds=(1e-6, 1.0),
                set_with=_set_with("acceptance.decay", shape),
            )
        )
    error = shape.tilt_error if shape is not None else None  # the tilt left to the method's
    if error is not None and "acceptance.tilt" not in fields and error.sd > 0:
        out.append(
            UncertainInput(
                "acceptance.tilt",
                error.nominal,
                "normal",
                "derived",
                error.reason,
                stderr=error.sd,
                bounds=field_bounds(scenario, "acceptance.tilt"),
            )
        )
    if "hardware.bandwidth_efficiency" not in fields and derived_compute:
        low, high = EFFICIENCY_RANGE
        out.append(
            UncertainInput(
                "hardware.bandwidth_efficiency",
                scenario.hardware.bandwidth_efficiency,
                "uniform",
                "assumed",
                EFFICIENCY_REASON,
                low=low,
                high=high,
                bounds=(low, high),
            )
        )
    expert, value = "hardware.expert_read_efficiency", scenario.hardware.expert_read_efficiency
    # the default is assumed wherever it stands (a written file repeats it); another value
    # is the file's own
    if expert_growth and value == EXPERT_READ_EFFICIENCY and expert not in fields:
        low, high = EXPERT_READ_EFFICIENCY_RANGE
        out.append(
            UncertainInput(
                expert,
                value,
                "uniform",
                "assumed",
                EXPERT_READ_REASON,
                low=low,
                high=high,
                bounds=(low, high),
            )
        )
    return tuple(out)


def clipping_notes(inputs: Iterable[UncertainInput]) -> dict[str, str]:
    """Per field (a list field's base name), the notes of ``inputs`` whose stated error or
    range the field's valid values clip (``UncertainInput.clipping_note``)."""
    out: dict[str, str] = {}
    for inp in inputs:
        note = inp.clipping_note()
        if note is not None:
            base = inp.field.split("[", 1)[0]
            out[base] = f"{out[base]}; {note}" if base in out else note
    return out


# --------------------------------------------------------------------------- draws


def _correlated_normals(
    scenario: Scenario, inputs: Sequence[UncertainInput], u: np.ndarray
) -> dict[int, np.ndarray]:
    """Standard normals (by input index) with the scenario's correlation matrix applied."""
    corr = scenario.uncertainty.correlation
    if corr is None:
        return {}
    index = {inp.field: j for j, inp in enumerate(inputs) if inp.kind == "normal"}
    present = [(i, index[f]) for i, f in enumerate(corr.fields) if f in index]
    if len(present) < 2:
        return {}
    from scipy.special import ndtri  # lazy: scipy.special at import is slow

    rows = [i for i, _ in present]
    cols = [j for _, j in present]
    matrix = np.array(corr.matrix, dtype=float)[np.ix_(rows, rows)]
    w, v = np.linalg.eigh(matrix)
    root = v @ np.diag(np.sqrt(np.clip(w, 0.0, None))) @ v.T  # symmetric square root
    z = ndtri(u[:, cols]) @ root.T
    return {j: z[:, m] for m, j in enumerate(cols)}


def draw_inputs(
    scenario: Scenario, inputs: Sequence[UncertainInput], n: int, seed: int
) -> np.ndarray:
    """``n`` quasi-random draws (a power of 2) of the inputs, shape (n, len(inputs)):
    Sobol points, linearly scrambled and digitally shifted by a generator made from
    ``seed`` (sim/model/sobol.py), through each input's quantile function."""
    if not inputs:
        return np.zeros((n, 0))
    m = max(math.ceil(math.log2(n)), 1)
    u = scrambled_sobol_points(len(inputs), m, np.random.default_rng(seed))[:n]
    u = np.clip(u, 1e-12, 1.0 - 1e-12)
    z = _correlated_normals(scenario, inputs, u)
    return np.column_stack([inp.from_uniform(u[:, j], z.get(j)) for j, inp in enumerate(inputs)])


def correlation_matrix(scenario: Scenario, inputs: Sequence[UncertainInput]) -> np.ndarray:
    """Correlations between the inputs (F, F): the stated ones among normal inputs, else 0."""
    n = len(inputs)
    out = np.eye(n)
    corr = scenario.uncertainty.correlation
    if corr is None:
        return out
    index = {inp.field: j for j, inp in enumerate(inputs) if inp.kind == "normal"}
    for a, fa in enumerate(corr.fields):
        for b, fb in enumerate(corr.fields):
            if fa in index and fb in index and a != b:
                out[index[fa], index[fb]] = corr.matrix[a][b]
    return out


def conditioned(
    inputs: Sequence[UncertainInput], corr: np.ndarray, values: np.ndarray, j: int, x: float
) -> np.ndarray:
    """Draws ``values`` (n, F) with input ``j`` set to ``x`` and the normal inputs
    correlated with it moved by their regression on it (for Gaussian inputs the conditional
    draw: x_o - rho sigma_o / sigma_j (x_j - x), clipped to their bounds)."""
    out = values.copy()
    inp = inputs[j]
    if inp.kind == "normal" and inp.stderr > 0:
        shift = (values[:, j] - x) / inp.stderr
        for o, other in enumerate(inputs):
            rho = corr[o, j]
            if o != j and rho != 0.0 and other.kind == "normal":
                out[:, o] = np.clip(values[:, o] - rho * other.stderr * shift, *other.bounds)
    out[:, j] = x
    return out


def nominal_row(inputs: Sequence[UncertainInput]) -> np.ndarray:
    """The nominal values as one draw, shape (1, len(inputs))."""
    return np.array([[inp.nominal for inp in inputs]], dtype=float).reshape(1, len(inputs))


def driver_rows(scenario: Scenario, inputs: Sequence[UncertainInput]) -> np.ndarray:
    """Rows (2F, F): each input at its 5% then its 95% end, the others nominal (correlated
    normal inputs at their conditional values)."""
    if not inputs:
        return np.zeros((0, 0))
    corr = correlation_matrix(scenario, inputs)
    nominal = nominal_row(inputs)
    rows = [
        conditioned(inputs, corr, nominal, j, end)[0]
        for j, inp in enumerate(inputs)
        for end in inp.ends()
    ]
    return np.array(rows).reshape(-1, len(inputs))


def study_rows(
    scenario: Scenario, inputs: Sequence[UncertainInput], draws: np.ndarray, few: int
) -> tuple[np.ndarray, list[tuple[int, slice]]]:
    """Every row an uncertainty study solves, one block under the other: the nominal row,
    ``draws`` (n, F), the drivers' ends (``driver_rows``), then for each input j its
    first ``few`` draws with it fixed at its nominal value (``conditioned``; none when
    ``few`` is 0); with each input's (j, rows) of that last part."""
    blocks = [nominal_row(inputs), draws, driver_rows(scenario, inputs)]
    measure = []
    if few and inputs:
        corr = correlation_matrix(scenario, inputs)
        some = draws[:few]
        start = blocks[2].shape[0]
        for j, inp in enumerate(inputs):
            blocks.append(conditioned(inputs, corr, some, j, inp.nominal))
            measure.append((j, slice(start, start + some.shape[0])))
            start += some.shape[0]
    return np.concatenate(blocks), measure
