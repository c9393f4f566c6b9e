"""The rows and notes of a concurrency curve published for both arms (plain and speculative
aggregate tok/s at each load), shared by the cases that score such a table (cases 48, 49)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from scipy import optimize

from sim.validation.cases import Case, Row, error_summary
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED, Point

__all__ = [
    "aggregate_row",
    "crossing_text",
    "gain_text",
    "job_line",
    "level_root",
    "rounding_free",
    "row_maker",
    "two_arm_case",
    "two_arm_rows",
]

#: (route, users, predicted, its standard error, side) -> the scored row.
RowMaker = Callable[[str, int, float, float, str], Row]
#: (route, users) -> the measured figure.
Measured = Callable[[str, int], float]


def level_root(
    level: Callable[[float], float], target: float, bracket: tuple[float, float], xtol: float
) -> float:
    """The ``x`` in ``bracket`` where the monotone ``level(x)`` meets ``target``, to ``xtol``
    (scipy's brentq; on a simulated level, a step function under common random numbers, it
    ends at the step that crosses ``target``); ValueError if the bracket's ends do not
    straddle it."""
    try:
        return float(optimize.brentq(lambda x: level(x) - target, *bracket, xtol=xtol))
    except ValueError as exc:
        raise ValueError(f"no value in {bracket} gives {target:.4g}") from exc


def rounding_free(p: Point) -> float:
    """The plain level's Monte Carlo standard error, 0 when the replications agree to
    rounding (1e-9 of the level): with fixed lengths the plain arm draws nothing, and the
    spread of equal sums is their summation's last bits, not sampling error."""
    return 0.0 if p.baseline_sd <= 1e-9 * p.baseline_tok_s else p.baseline_sd


def two_arm_rows(
    points: Mapping[int, Point], row: RowMaker, plain: str, spec: str
) -> tuple[Row, ...]:
    """Each load's speculative row (its ± the paired gain's standard error times the plain
    level) and plain row, in that order."""
    return tuple(
        r
        for users, p in points.items()
        for r in (
            row(spec, users, p.speculative_tok_s, p.speedup_sd * p.baseline_tok_s, "speculative"),
            row(plain, users, p.baseline_tok_s, rounding_free(p), "plain"),
        )
    )


def gain_text(points: Mapping[int, Point], measured: Measured, plain: str, spec: str) -> str:
    """ "C: measured g, specsim g'" by load, the gain being speculative / plain tok/s."""
    return "; ".join(
        f"{u}: measured {measured(spec, u) / measured(plain, u):.2f}, specsim {p.speedup:.2f}"
        for u, p in points.items()
    )


def crossing_text(points: Mapping[int, Point]) -> str:
    """Where the model's gain first falls below 1 (a miss when none is measured)."""
    crossing = [u for u, p in points.items() if p.speedup < 1.0]
    if crossing:
        return f"; the model's gain falls below 1 at C = {crossing[0]} (a miss)."
    return "; none predicted up to 64."


def aggregate_row(
    figure: str,
    users: int,
    requests: int,
    measured: float,
    predicted: float,
    sd: float,
    side: str,
    calibrated_loads: tuple[float, ...],
) -> Row:
    """One arm's aggregate output tok/s at a closed loop of ``users`` over ``requests``."""
    return Row(
        f"aggregate tok/s ({'speculation' if side == 'speculative' else 'no speculation'})",
        figure,
        f"closed loop of {users} users, {requests} requests",
        measured,
        predicted,
        sd,
        load=users,
        calibrated_loads=calibrated_loads,
        side=side,
    )


def row_maker(
    label: str, prompts_per_user: int, measured: Measured, calibrated_loads: tuple[float, ...]
) -> RowMaker:
    """The scored row of a table ``label``: ``label route C=users``, a closed loop of
    ``users`` over ``prompts_per_user`` x ``users`` requests, the measured figure read from
    ``measured``."""

    def row(route: str, users: int, predicted: float, sd: float, side: str) -> Row:
        return aggregate_row(
            f"{label} {route} C={users}",
            users,
            prompts_per_user * users,
            measured(route, users),
            predicted,
            sd,
            side,
            calibrated_loads,
        )

    return row


def two_arm_case(
    title: str,
    source: str,
    calibrated_on: tuple[str, ...],
    points: Mapping[int, Point],
    calibrated_point: tuple[int, Point, str],
    row: RowMaker,
    measured: Measured,
    arms: tuple[str, str],
    setup: tuple[str, ...],
) -> Case:
    """The case of a two-arm table: both arms' rows at the scored ``points``, the gains and
    the error summary, the simulated job at the calibrated load (``calibrated_point``: the
    load, its point, how it was calibrated) against the measured levels there, and the
    crossing (none measured: the smallest measured gain is stated)."""
    plain, spec = arms
    rows = two_arm_rows(points, row, plain, spec)
    users, p, how = calibrated_point
    least = min(measured(spec, u) / measured(plain, u) for u in (users, *points))
    return Case(
        title,
        (source,),
        calibrated_on,
        rows,
        setup=setup,
        notes=(
            f"Gain (EAGLE-3 / plain aggregate tok/s) by C: "
            f"{gain_text(points, measured, plain, spec)}. {error_summary(rows)}. At C = {users} "
            f"({how}) the simulated job gives {p.baseline_tok_s:.1f} (plain) and "
            f"{p.speculative_tok_s:.1f} (EAGLE-3) tok/s against {measured(plain, users):.1f} "
            f"and {measured(spec, users):.1f} measured. No measured crossing: the gain is at "
            f"least {least:.2f} at every C" + crossing_text(points),
        ),
    )


def job_line(input_tokens: int, output_tokens: int) -> str:
    """The setup line of the simulated job (10 x C requests of fixed lengths)."""
    return (
        f"the job: a closed loop of C users over 10 x C requests of {input_tokens} prompt and "
        f"{output_tokens} answer tokens (fixed), aggregate output tok/s; {SERVING_REPLICATIONS} "
        f"replications, seed {SERVING_SEED}; the ± of the EAGLE-3 rows is the paired gain's "
        "Monte Carlo standard error times the plain level"
    )
