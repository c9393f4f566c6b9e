"""Options shared by several commands, so each means the same thing everywhere.

``--replications``/``--requests``/``--seed`` become scenario overrides where a command
fingerprints its runs (sweeps key them like any other field); ``--target`` replaces the
scenario's targets; ``--engine`` and ``--fidelity`` choose the Monte Carlo. Importing this
module imports no simulation code (start-up); the choices below are checked against the
library's registries by the tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sim.binding.bound import Bound
    from sim.scenario.schema import Scenario

#: ``sim.simulation.engines.ENGINES`` and ``sim.binding.drawn_cycle_times.FIDELITIES``
#: (tests check).
ENGINE_NAMES: tuple[str, ...] = ("des", "fast")
FIDELITY_NAMES: tuple[str, ...] = ("cycle", "layer")


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses NaN and the infinities (``float("nan")`` passes
    every comparison a range makes)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math  # lazy: start-up

        rv = super().convert(value, param, ctx)
        if isinstance(rv, float) and not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


scenario_argument = click.argument("scenario", type=click.Path(dir_okay=False, path_type=str))

set_option = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario field, e.g. --set acceptance.alpha=0.8 (value parsed as TOML).",
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def bind_file(scenario: Scenario, path: str, sets: tuple[str, ...] | list[str]) -> Bound:
    """``bind(scenario)``, the scenario loaded from the file ``path`` with ``--set``
    ``sets``: what the scenario means, bound once, the hardware model checking it here. Its
    problem names ``FILE (--set)`` when ``--set`` changed a hardware, model or timing field
    (sim/scenario/origins.py); when the file bound alone has the same problem (field and
    message), it is the file's and names the file."""
    # lazy: start-up
    from sim.binding.bound import bind
    from sim.errors import SpecsimError
    from sim.scenario.load import load_scenario

    try:
        return bind(scenario)
    except SpecsimError as exc:
        if not sets or exc.source != f"{path} (--set)":
            raise
        try:
            bind(load_scenario(path))
        except SpecsimError as alone:
            if (alone.field, alone.message) == (exc.field, exc.message):
                raise SpecsimError(
                    exc.message, source=path, field=exc.field, param=exc.param
                ) from None
        raise


def echo_json(document: Any) -> None:
    """Print a JSON document; NaN and infinities are not JSON: one error naming the field."""
    from sim.documents import check_finite  # lazy: start-up

    check_finite(document, "--json")
    click.echo(json.dumps(document, indent=2, allow_nan=False))


def echo_document(kind: str, body: Any) -> None:
    """Print ``body`` as a JSON document of ``kind`` (with ``kind`` and ``specsim_version``)."""
    from sim.documents import document  # lazy: start-up

    echo_json(document(kind, body))


engine_option = click.option(
    "--engine",
    type=click.Choice(ENGINE_NAMES),
    default="fast",
    show_default=True,
    help="fast: vectorized NumPy; des: the SimPy model of record.",
)
fidelity_option = click.option(
    "--fidelity",
    type=click.Choice(FIDELITY_NAMES),
    default="cycle",
    show_default=True,
    help="cycle: pass times from the cost model; layer: drawn from the layer-level SimPy "
    "pass (TP ranks, all-reduce barriers, kernel launches; sim/hardware/layer.py).",
)
replications_option = click.option(
    "--replications",
    type=click.IntRange(min=1),
    default=None,
    help="Independent replications [default: simulation.replications].",
)
requests_option = click.option(
    "--requests",
    type=click.IntRange(min=1),
    default=None,
    help="Requests per replication [default: workload.requests].",
)
seed_option = click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Root seed [default: simulation.seed]."
)


#: Most worker processes: more than any machine's cores is a typo, and each costs memory.
MAX_WORKERS = 256


def workers_option(
    what: str, *, auto: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--workers N``: processes over ``what``; results never depend on N. ``auto``: the
    default is None, every processor this process may use (sim/parallel/choice.py
    ``default_workers``; ``SPECSIM_WORKERS`` overrides), for the heavy studies."""
    if auto:
        return click.option(
            "--workers",
            type=click.IntRange(min=1, max=MAX_WORKERS),
            default=None,
            help=f"Worker processes over {what} (results do not depend on it) [default: "
            "the processors this process may use, or SPECSIM_WORKERS].",
        )
    return click.option(
        "--workers",
        type=click.IntRange(min=1, max=MAX_WORKERS),
        default=1,
        show_default=True,
        help=f"Worker processes over {what} (results do not depend on it).",
    )


def executor_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--executor local|dask`` and ``--scheduler ADDRESS`` (sim/parallel/choice.py
    ``make_executor``: a local process pool of ``--workers``, or an existing Dask
    cluster); results are identical either way."""
    fn = click.option(
        "--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address."
    )(fn)
    return click.option(
        "--executor",
        type=click.Choice(["local", "dask"]),
        default="local",
        show_default=True,
        help="local process pool, or an existing Dask cluster (needs specsim-llm[dask]).",
    )(fn)


target_option = click.option(
    "--target",
    "targets",
    type=FiniteFloatRange(min=0.0, min_open=True, max=1e7),
    multiple=True,
    metavar="TOK_S",
    help="Target tok/s (repeatable; default: the scenario's [targets]).",
)
quiet_option = click.option(
    "--quiet", "-q", is_flag=True, help="No progress bar and no 'wrote FILE' lines."
)

verbose_option = click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Every table after the first screen's answer (--json has every field either way).",
)


def output_dir_checked(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """click callback: an output directory is checked when the options are read, before
    any work (a file in the way, no permission, a name too long)."""
    if value is not None:
        from sim.files import check_output_dir  # lazy: start-up

        check_output_dir(value, source=value)
    return value


def list_values(text: str, option: str) -> tuple[Any, ...]:
    """The values of a list option: ``1,2,4``, ``1:8``, ``0.5:4:0.5`` or a mix (``1:4,8``),
    read as a sweep's ``--grid`` values are (sim/studies/grid.py); bad text is a
    SpecsimError naming ``option``."""
    # lazy: start-up
    from sim.errors import SpecsimError
    from sim.studies.grid import parse_grid

    if not text.strip():
        raise SpecsimError("empty: give a list such as 1,2,4 or START:STOP[:STEP]", source=option)
    try:
        _, values = parse_grid(f"value={text}")
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=option) from None
    return values


def output_file_checked(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """click callback: an output file is checked before any work (see sim/files.py)."""
    if value is not None:
        from sim.files import check_output_file  # lazy: start-up

        check_output_file(value, source=value)
    return value


plot_option = click.option(
    "--plot",
    "plot_dir",
    type=click.Path(path_type=str),
    default=None,
    metavar="DIR",
    callback=output_dir_checked,
    help="Also write the figures into DIR (checked before the run).",
)
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["png", "svg"]),
    default="png",
    show_default=True,
    help="Figure file format.",
)


def monte_carlo_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--engine, --fidelity, --replications, --requests, --seed."""
    options = (seed_option, requests_option, replications_option, fidelity_option, engine_option)
    for option in options:
        fn = option(fn)
    return fn


def target_setting(targets: tuple[float, ...]) -> tuple[str, str, Any]:
    """``--target`` values as the scenario's [targets] setting (None without any: the
    scenario's own targets)."""
    return ("--target", "targets.tok_s", list(targets) if targets else None)


def targets_or_scenario(targets: tuple[float, ...], scenario: Scenario) -> tuple[float, ...]:
    return tuple(targets) if targets else scenario.target_tok_s
