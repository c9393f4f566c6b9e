"""Calibration never mixes servers: the figures' server against the base scenario's.

What the files say (``ServerFact``: the engine that wrote them, the model they name, the
tensor-parallel size, the num_steps each figure was measured at) is compared with the base
scenario (``[server]``, ``model.name``, ``hardware.gpus``, ``speculation.num_steps``). A
contradiction is refused with one line naming both, unless the user says which wins:
``prefer="data"`` writes the data's value into the calibrated scenario where it has one
(num_steps, GPUs, engine, model id), ``prefer="base"`` keeps the base's; either way the
result lists what was kept from the base.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sim.calibration.hf_fields import quantized_part
from sim.calibration.measurements import AcceptLengthObs, Measurements, ServerFact, SpecPoint
from sim.errors import SpecsimError
from sim.scenario.schema import Scenario

PREFER = ("data", "base")


@dataclass(frozen=True, slots=True)
class Contradiction:
    """One server fact on which the data and the base differ."""

    what: str
    data: str | int
    base: str | int
    field: str
    source: str

    def line(self) -> str:
        return (
            f"the figures' {self.what} is {self.data} ({self.source}) but the base "
            f"scenario's {self.field} is {self.base}"
        )


def _model_key(name: str) -> str:
    """A model name compared across spellings: the last path part, lower case, without
    separators (``meta-llama/Llama-3.1-70B-Instruct`` -> ``llama3170binstruct``)."""
    return re.sub(r"[^a-z0-9]", "", name.rstrip("/").split("/")[-1].lower())


def _same_model(a: str, b: str) -> bool:
    ka, kb = _model_key(a), _model_key(b)
    return bool(ka and kb) and (ka in kb or kb in ka)


def measured_num_steps(data: Measurements) -> ServerFact | None:
    """The num_steps every speculative figure of ``data`` was measured at (a server fact
    stating it first, then the tok/s points' and accept lengths'), as the first fact
    naming it; None when they state none or several."""
    figures: tuple[SpecPoint | AcceptLengthObs, ...] = (
        *data.points,
        *data.accept_lengths,
        *data.checks,
    )
    facts = [f for f in data.server if f.what == "num_steps"]
    facts += [ServerFact("num_steps", x.num_steps, x.source) for x in figures]
    return facts[0] if len({f.value for f in facts}) == 1 else None


def contradictions(base: Scenario, data: Measurements) -> tuple[Contradiction, ...]:
    """Every fact of ``data`` that contradicts ``base`` (first per kind)."""
    out: list[Contradiction] = []
    fact = measured_num_steps(data)
    if fact is not None and fact.value != base.num_steps:
        out.append(
            Contradiction(
                "num_steps", fact.value, base.num_steps, "speculation.num_steps", fact.source
            )
        )
    seen: set[str] = set()
    for f in data.server:
        if f.what in seen:
            continue
        if f.what == "engine" and base.server.engine and f.value != base.server.engine:
            out.append(
                Contradiction("engine", f.value, base.server.engine, "server.engine", f.source)
            )
            seen.add(f.what)
        elif f.what == "model":
            name = base.server.model_id or base.model.name
            field = "server.model_id" if base.server.model_id else "model.name"
            if name != "unnamed" and not _same_model(str(f.value), name):
                out.append(Contradiction("model", f.value, name, field, f.source))
                seen.add(f.what)
        elif f.what == "tensor_parallel":
            gpus = base.server.tensor_parallel or base.hardware.gpus
            field = "server.tensor_parallel" if base.server.tensor_parallel else "hardware.gpus"
            if f.value != gpus:
                out.append(Contradiction("tensor-parallel size", f.value, gpus, field, f.source))
                seen.add(f.what)
    return tuple(out)


def check_server(
    base: Scenario, data: Measurements, prefer: str | None
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(overrides for the calibrated scenario, notes) after comparing the figures' server
    with the base's; SpecsimError on a contradiction unless ``prefer`` says which wins."""
    if prefer is not None and prefer not in PREFER:
        raise SpecsimError(f"must be one of {', '.join(PREFER)}, got {prefer!r}", param="prefer")
    found = contradictions(base, data)
    if found and prefer is None:
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise SpecsimError(
            f"{first.line()}{more}: calibrate the scenario of the server the figures come "
            "from (specsim init writes one), or say which wins with --prefer data or "
            "--prefer base",
            source="calibrate",
            field=first.field,
        )
    overrides: dict[str, Any] = {}
    notes: list[str] = []
    for c in found:
        if prefer == "base":
            notes.append(f"{c.line()}: the base's kept (--prefer base)")
            continue
        notes.append(f"{c.line()}: the figures' written (--prefer data)")
        if c.what == "num_steps":
            overrides["speculation.num_steps"] = int(c.data)
        elif c.what == "engine":
            overrides["server.engine"] = c.data
        elif c.what == "model":
            overrides["server.model_id"] = c.data
            notes.append(
                f"model.name and the weights stay the base's ({base.model.name}): a scenario "
                f"of {c.data} needs its own config.json (specsim init)"
            )
        elif c.what == "tensor-parallel size":
            overrides["hardware.gpus"] = int(c.data)
            if base.timing.measured_on is not None:
                overrides["timing.measured_on.gpus"] = int(c.data)
    return overrides, tuple(notes)


def kept_from_base(base: Scenario, overrides: dict[str, Any]) -> str:
    """One line: the server the calibrated scenario keeps from the base (what the data
    did not override)."""
    hw = base.hardware
    parts = [
        f"model {base.model.name}"
        + (" (its weights)" if base.model.layer_params is not None else ""),
        f"{hw.gpu or 'no GPU preset'} on {hw.interconnect}",
    ]
    if "hardware.gpus" not in overrides:
        parts.append(f"{hw.gpus} GPU{'s' * (hw.gpus != 1)}")
    if "speculation.num_steps" not in overrides:
        parts.append(f"num_steps {base.num_steps}")
    parts.append("verify " + ("graphed" if base.timing.verify_cuda_graph else "ungraphed"))
    if base.server.engine and "server.engine" not in overrides:
        version = base.server.engine_version
        parts.append(f"engine {base.server.engine}" + (f" {version}" if version else ""))
    return "kept from the base scenario: " + ", ".join(parts)


#: Model families as their names appear in Hugging Face ids and in ``config.json``'s
#: ``model_type`` and ``architectures`` (``meta-llama/Llama-3.1-70B`` and
#: ``LlamaForCausalLM``; ``Qwen/Qwen3-235B-A22B`` and ``qwen3_moe``).
MODEL_FAMILIES = (
    "llama", "qwen", "deepseek", "mistral", "mixtral", "gemma", "phi", "glm", "kimi",
    "minimax", "ernie", "hunyuan", "granite", "olmo", "falcon", "nemotron", "internlm",
    "baichuan", "exaone",
)  # fmt: skip


def id_families(model_id: str) -> set[str]:
    """The families a model id names: its words (split at anything not a letter or digit)
    that begin with a family's name (``Qwen3`` -> qwen, ``mistralai`` -> mistral)."""
    words = re.split(r"[^a-z0-9]+", model_id.lower())
    return {f for f in MODEL_FAMILIES for w in words if w.startswith(f)}


def config_families(config: dict[str, Any]) -> set[str]:
    """The families a config.json names in its ``model_type`` and ``architectures`` (its
    ``text_config``'s too)."""
    names: list[str] = []
    text = config.get("text_config")
    for cfg in (config, text if isinstance(text, dict) else {}):
        kind, archs = cfg.get("model_type"), cfg.get("architectures")
        names += [kind] if isinstance(kind, str) else []
        names += [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    joined = " ".join(names).lower()
    return {f for f in MODEL_FAMILIES if f in joined}


def check_init_server(
    engine: str,
    config: dict[str, Any],
    config_source: str,
    data: Measurements,
    num_steps: int | None = None,
) -> None:
    """``specsim init``'s figures against its flags, before the scenario is named from
    them: SpecsimError when a file was written by another engine than ``--engine``
    (pointing to the engine that wrote it), when the figures were all measured at one
    num_steps other than ``--num-steps`` (``None``: plain decoding, k = 0; figures at
    several k pass, each is fitted at its own), or names a model of another family than
    the config.json's (a ``model_id`` naming only other families; ids naming no family, a
    fine-tune's, pass)."""
    for fact in data.server:
        if fact.what == "engine" and fact.value != engine:
            raise SpecsimError(
                f"{engine}, but {fact.source} is {fact.value}'s: give --engine {fact.value} "
                f"if the figures are this server's, or the {engine} server's own figures",
                source="--engine",
            )
    _check_init_num_steps(num_steps or 0, data)
    ours = config_families(config)
    for fact in data.server:
        if fact.what != "model" or not ours:
            continue
        theirs = id_families(str(fact.value))
        if theirs and not theirs & ours:
            raise SpecsimError(
                f"{fact.value} is not the model of {config_source} "
                f"({', '.join(sorted(ours))}): figures of another server; give this "
                f"model's figures, or --model-id {fact.value} if the config.json is its",
                source=fact.source,
                field="model",
            )


def _check_init_num_steps(num_steps: int, data: Measurements) -> None:
    """SpecsimError in init's flags when every figure was measured at one num_steps and
    ``--num-steps`` says another (or no drafter, k = 0)."""
    fact = measured_num_steps(data)
    if fact is None or fact.value == num_steps:
        return
    if fact.value == 0:
        said, give = "plain decoding", "drop --drafter and --num-steps"
    else:
        said = f"speculative decoding at num_steps {fact.value}"
        give = f"give --drafter and --num-steps {fact.value}"
    flags = f"--num-steps {num_steps}" if num_steps else "no --drafter"
    raise SpecsimError(
        f"{flags}, but the figures of {fact.source} are of {said}: {give} if they are this "
        "server's",
        source="--num-steps",
    )


def check_init_quantization(config: dict[str, Any], config_source: str, data: Measurements) -> None:
    """SpecsimError when a file's server ran quantized weights and ``config`` (the
    config.json given, read from ``config_source``) states no ``quantization_config``, or
    the other way round: the figures are of another checkpoint than the one whose weights
    ``specsim init`` prices (a bf16 base model's config.json given for its FP8 export)."""
    stated = "quantization_config" in quantized_part(config)
    for fact in data.server:
        if fact.what != "quantization" or (fact.value != "none") == stated:
            continue
        ran = "unquantized weights" if fact.value == "none" else f"{fact.value} weights"
        has = "states a quantization_config" if stated else "states no quantization_config"
        raise SpecsimError(
            f"{ran}, but {config_source} {has}: figures of another checkpoint; give the served "
            "checkpoint's config.json, or --prefer base to price the config.json's weights",
            source=fact.source,
        )
