"""The drafter a run's own report names: ``specsim init`` takes the drafter kind and k from
a ``trtllm-bench`` report when ``--drafter`` / ``--num-steps`` are not given, and refuses a
``--drafter`` that contradicts it.

The report's ``decoding_stats.mode`` is the ``decoding_type`` of the speculative config the
run had; sim/calibration/importers/trtllm_bench.py ``DRAFTER_MODES`` says which drafter each
mode is (Eagle3: eagle3, MTP: mtp, Draft_Target: draft_model, DFlash: dflash, DSpark:
dspark; Eagle on the PyTorch backend: eagle3), and sim/calibration/imported_trtllm.py reads
it as the server facts ``decoding_mode`` (as spelled) and ``drafter`` (the ``--drafter``
name, when specsim has one). k is the draft length every figure was measured at
(sim/calibration/server_match.py ``measured_num_steps``): the report's own is
(accept length - 1) / draft acceptance rate. Only the kind comes from the report: the
drafter's size still comes from the user's files (``--draft-config``, ``--draft-params``)
or the target's config.json, as for ``--drafter`` (sim/calibration/init_drafter.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.calibration.importers.trtllm_bench import DRAFTER_MODES, PYTORCH_EAGLE
from sim.calibration.measurements import Measurements, ServerFact
from sim.calibration.server_match import measured_num_steps
from sim.errors import SpecsimError

__all__ = ["ReportedDrafter", "check_reported_drafter", "reported_drafter"]

#: The modes named, as the refusal of another lists them.
NAMED_MODES = ", ".join(DRAFTER_MODES) + f", and {PYTORCH_EAGLE[0]} on the PyTorch backend"


@dataclass(frozen=True, slots=True)
class ReportedDrafter:
    """The drafter kind and k the figures' files state, with where each came from (the
    scenario's comments); None: given by the flag."""

    drafter: str | None
    num_steps: int | None
    drafter_why: str = ""
    num_steps_why: str = ""


def _mode(data: Measurements, fact: ServerFact) -> str:
    """The mode, as the file spells it, that the ``drafter`` fact was named from."""
    return next(
        str(f.value) for f in data.server if f.what == "decoding_mode" and f.source == fact.source
    )


def _drafter(data: Measurements) -> tuple[str, str]:
    """(the drafter every report's mode names, why); SpecsimError naming the file and field
    for a mode specsim names no drafter for, or reports naming different drafters."""
    named = {f.source: f for f in data.server if f.what == "drafter"}
    for f in data.server:
        if f.what == "decoding_mode" and f.source not in named:
            raise SpecsimError(
                f"{f.value!r} is not a drafter specsim names from the report (it names "
                f"{NAMED_MODES}): give --drafter and --num-steps",
                source=f.source,
            )
    kinds = sorted({str(f.value) for f in named.values()})
    if len(kinds) > 1:
        raise SpecsimError(
            f"the reports ran different drafters ({', '.join(kinds)}): give the reports of one "
            "server, or --drafter and --num-steps",
            source="--trtllm-bench",
        )
    fact = next(iter(named.values()))
    mode = _mode(data, fact)
    why = f"from the trtllm-bench report's decoding_stats.mode: {mode} ({fact.source})"
    if mode == PYTORCH_EAGLE[0]:
        why += "; EagleDecodingConfig on the PyTorch backend runs an EAGLE-3 drafter"
    return str(fact.value), why


def reported_drafter(
    data: Measurements, drafter: str | None, num_steps: int | None
) -> ReportedDrafter | None:
    """The drafter kind and k the files state, in place of those not given (``drafter``,
    ``num_steps`` None); None when both are given or no file states a decoding mode.
    SpecsimError (one line) when the mode is one specsim names no drafter for, the reports
    name different ones, or the figures were measured at several k."""
    if not any(f.what == "decoding_mode" for f in data.server):
        return None
    if drafter is not None and num_steps is not None:
        return None
    found = ReportedDrafter(None, None)
    if drafter is None:
        kind, why = _drafter(data)
        found = ReportedDrafter(kind, None, drafter_why=why)
    if num_steps is None:
        fact = measured_num_steps(data)
        stats = next(f.source for f in data.server if f.what == "decoding_mode")
        if fact is None or fact.value == 0:
            raise SpecsimError(
                "the figures were measured at several draft lengths: give the one this server runs",
                source="--num-steps",
            )
        why = (
            "from the trtllm-bench report's decoding_stats: (accept length - 1) / draft "
            f"acceptance rate ({stats.removesuffix('.mode')}), as every figure was measured"
        )
        found = ReportedDrafter(found.drafter, int(fact.value), found.drafter_why, why)
    return found


def check_reported_drafter(drafter: str, data: Measurements) -> None:
    """SpecsimError in init's flags when ``--drafter`` is not the drafter a report's
    ``decoding_stats.mode`` names (a mode specsim names none for is not checked)."""
    for fact in data.server:
        if fact.what == "drafter" and fact.value != drafter:
            raise SpecsimError(
                f"--drafter {drafter}, but {fact.source} is {_mode(data, fact)}, the "
                f"{fact.value} drafter: give --drafter {fact.value} (or leave it out) if the "
                "figures are this server's",
                source="--drafter",
            )
