"""``specsim hardware`` (pass breakdown, presets) and ``specsim allreduce`` (one all-reduce)."""

from __future__ import annotations

import click

from sim.cli.options import (
    bind_file,
    echo_document,
    json_option,
    set_option,
    verbose_option,
)
from sim.errors import SpecsimError

#: sim/hardware/interconnects.py LIBRARIES, spelled here so ``--help`` imports no model
#: code (tests/hardware/test_allreduce.py checks the two agree).
ALLREDUCE_LIBRARIES = ("nccl", "custom", "auto")


@click.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False, path_type=str))
@click.option("--list", "list_presets", is_flag=True, help="List interconnect and GPU presets.")
@set_option
@verbose_option
@json_option
def hardware(
    scenario: str | None,
    list_presets: bool,
    sets: tuple[str, ...],
    verbose: bool,
    as_json: bool,
) -> None:
    """Every pass taken apart (compute, all-reduces, launch) and verify what-ifs."""
    # lazy: the library is imported when the command runs, not for --help (start-up)
    from sim.report.hardware import render_hardware, render_presets
    from sim.scenario.load import load_scenario
    from sim.studies.hardware import hardware_summary, presets_dict

    if list_presets:
        presets = presets_dict()
        if as_json:
            echo_document("presets", presets)
        else:
            click.echo(render_presets(presets, verbose))
        return
    if scenario is None:
        raise SpecsimError("give a SCENARIO file or --list", source="hardware")
    bound = bind_file(load_scenario(scenario, sets), scenario, sets)  # the hardware model checks it
    try:
        summary = hardware_summary(bound)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=exc.source or scenario, field=exc.field) from None
    if as_json:
        echo_document("hardware", summary)
    else:
        click.echo(render_hardware(summary, verbose))


@click.command()
@click.option("--interconnect", required=True, help="Preset name (specsim hardware --list).")
@click.option("--gpus", required=True, type=click.IntRange(1, 1024), help="Tensor-parallel degree.")
@click.option(
    "--bytes",
    "nbytes",
    required=True,
    type=click.IntRange(1, 2**40),
    help="Message size in bytes (1 B to 1 TiB: zero bytes is no collective).",
)
@click.option(
    "--graphed",
    is_flag=True,
    help="Inside a CUDA graph: drops an eager call's extra GPU time (the interconnect's "
    "eager_extra_us, 0 in every preset: an eager call's cost is host time, which "
    "`specsim hardware` counts as launch work).",
)
@click.option(
    "--library",
    type=click.Choice(ALLREDUCE_LIBRARIES),
    default="auto",
    show_default=True,
    help="nccl: NCCL alone (what nccl-tests measure); custom: the engine's custom "
    "all-reduce where it applies, NCCL elsewhere; auto: the faster.",
)
@json_option
def allreduce(
    interconnect: str, gpus: int, nbytes: int, graphed: bool, library: str, as_json: bool
) -> None:
    """Time of one all-reduce: {us, algorithm, protocol} (NCCL's tuner / custom all-reduce)."""
    # lazy: the hardware model is imported when the command runs (start-up)
    from sim.errors import UnknownNameError
    from sim.hardware.allreduce import allreduce_time
    from sim.hardware.interconnects import resolve_interconnect

    try:
        ic = resolve_interconnect(interconnect)
    except UnknownNameError as exc:
        raise SpecsimError(str(exc), source="--interconnect") from None
    beyond = ic.domain_error(gpus)
    if beyond is not None:
        raise SpecsimError(beyond, source="allreduce", field="--gpus")
    result = allreduce_time(ic, gpus, nbytes, graphed=graphed, library=library)
    note = ic.domain_note(gpus)
    if as_json:
        echo_document("allreduce", {**result.as_dict(), **({"note": note} if note else {})})
    else:
        from sim.report.hardware import render_allreduce  # lazy: start-up

        click.echo(render_allreduce(result, note))
