"""The file ``specsim init`` writes: the scenario with where each value came from."""

from __future__ import annotations

import tomllib

from sim.calibration.init_request import InitScenario
from sim.calibration.result import Calibration
from sim.errors import SpecsimError
from sim.report.calibrate import calibrated_toml
from sim.report.screen import wrap
from sim.scenario.toml_writer import dumps
from sim.scenario.validate import scenario_from_dict

DEFAULTS_NOTE = "Keys not written take specsim's defaults (`specsim keys` lists them)."

#: Said when the measured passes' context is unknown (figures without bench files): the
#: serving commands refuse such a scenario (timing.context_tokens) until it is given.
SERVING_NEEDS_CONTEXT = (
    "serving commands (serve, crossover, best-k, capacity) need the context the figures were "
    "measured at: --context-tokens N (prompt + half the answer of those runs)"
)


def init_toml(init: InitScenario, cal: Calibration | None, source: str) -> str:
    """The scenario file: only the values ``init`` set, each under a comment naming its
    origin; calibrated, the calibrated scenario with those comments beside the fit's."""
    if cal is not None:
        return calibrated_toml(cal, source, base_comments=init.comments, writer="specsim init")
    full = init.scenario.model_dump(exclude_none=True)
    raw: dict = {"name": full["name"], "description": full["description"]}
    for dotted in init.comments:  # exactly what init set, each under its comment
        section, key = dotted.split(".", 1)
        raw.setdefault(section, {})[key] = full[section][key]
    text = dumps(raw, header=f"{init.header}\n{DEFAULTS_NOTE}", comments=init.comments)
    if scenario_from_dict(tomllib.loads(text), source="written scenario") != init.scenario:
        raise SpecsimError("the written scenario does not read back the same", source="toml")
    return text


def _own_width(draft_bytes: float | None, target_bytes: float) -> str:
    """A drafter stored in another dtype than its target, said beside its size."""
    if draft_bytes is None or draft_bytes == target_bytes:
        return ""
    return f" at {draft_bytes:g} B a weight (target {target_bytes:g} B)"


def init_summary(init: InitScenario, cal: Calibration | None, verbose: bool = True) -> str:
    """A few lines: the server, whether its passes rest on no timing figure (the hardware
    model's, at the bandwidth efficiency written: at peak, an optimistic bound), and what
    calibration fitted (if it ran); not ``verbose``, within ``WIDTH`` characters a line."""
    s = init.scenario
    model = (
        f"model: {s.model.layers} layers, hidden {s.model.hidden_size}, "
        + (
            f"{s.model.layer_params / 1e6:.1f}M a layer"
            if s.model.layer_params is not None
            else "parameters a layer not given"
        )
        + (
            f", {s.model.experts} experts ({s.model.experts_per_token} a token)"
            if s.model.experts
            else ""
        )
        + (f"; drafter {s.model.draft_params / 1e9:.3g}B" if s.model.draft_params else "")
        + _own_width(s.model.draft_bytes_per_param, s.model.weight_bytes_per_param)
    )
    lines = [
        *(
            [f"{s.name}: {s.description}"]
            if verbose
            else wrap(f"{s.name}: {s.description}", "", "  ")
        ),
        *([f"  {model}"] if verbose else wrap(model, "  ", "    ")),
    ]
    final = cal.scenario if cal is not None else s
    if final.timing.decode_ms is None and final.timing.verify_ms is None:
        eff = final.hardware.bandwidth_efficiency
        at = "at peak bandwidth" if eff == 1.0 else f"at {eff:.3g} of peak bandwidth"
        passes = (
            f"passes: derived from the weights {at}, no tok/s at --max-concurrency 1 given: "
            + ("an optimistic bound" if eff == 1.0 else "as assumed")
        )
        lines.extend([f"  {passes}"] if verbose else wrap(passes, "  ", "    "))
    notes = list(init.notes)
    measured = final.timing.decode_ms is not None or final.timing.verify_ms is not None
    if measured and final.timing.context_tokens is None and final.model.kv_bytes_per_token:
        notes.append(SERVING_NEEDS_CONTEXT)
    for note in notes:
        lines.extend([f"  {note}"] if verbose else wrap(note, "  ", "    "))
    return "\n".join(lines)
