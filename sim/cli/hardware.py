"""``specsim hardware`` (pass breakdown, presets) and ``specsim allreduce`` (one all-reduce)."""

from __future__ import annotations

import click

from sim.cli import main
from sim.cli.options import echo_json, json_option, set_option
from sim.errors import SpecsimError
from sim.hardware.allreduce import allreduce_time
from sim.hardware.interconnects import LIBRARIES, resolve_interconnect
from sim.hardware.summary import hardware_summary, presets_dict, render_hardware, render_presets
from sim.scenario import load_scenario


@main.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False, path_type=str))
@click.option("--list", "list_presets", is_flag=True, help="List interconnect and GPU presets.")
@set_option
@json_option
def hardware(
    scenario: str | None, list_presets: bool, sets: tuple[str, ...], as_json: bool
) -> None:
    """Every pass taken apart (compute, all-reduces, launch) and verify what-ifs."""
    if list_presets:
        presets = presets_dict()
        if as_json:
            echo_json(presets)
        else:
            click.echo(render_presets(presets))
        return
    if scenario is None:
        raise SpecsimError("give a SCENARIO file or --list", source="hardware")
    loaded = load_scenario(scenario, sets)
    try:
        summary = hardware_summary(loaded)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=exc.source or scenario, field=exc.field) from None
    if as_json:
        echo_json(summary)
    else:
        click.echo(render_hardware(summary))


@main.command()
@click.option("--interconnect", required=True, help="Preset name (specsim hardware --list).")
@click.option("--gpus", required=True, type=int, help="Tensor-parallel degree.")
@click.option("--bytes", "nbytes", required=True, type=int, help="Message size in bytes.")
@click.option("--graphed", is_flag=True, help="Inside a CUDA graph (no eager NCCL cost).")
@click.option(
    "--library",
    type=click.Choice(LIBRARIES),
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
    try:
        ic = resolve_interconnect(interconnect)
    except KeyError as exc:
        raise SpecsimError(str(exc.args[0]), source="--interconnect") from None
    if gpus < 1:
        raise SpecsimError(f"must be >= 1, got {gpus}", source="--gpus")
    if nbytes < 0:
        raise SpecsimError(f"must be >= 0, got {nbytes}", source="--bytes")
    result = allreduce_time(ic, gpus, nbytes, graphed=graphed, library=library)
    if as_json:
        echo_json(result.as_dict())
    else:
        click.echo(f"{result.us:.3f} us  {result.algorithm}/{result.protocol}")
