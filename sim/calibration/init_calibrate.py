"""``specsim init`` with figures: the request completed from what the figures' files state
(the drafter and k a report names, the KV cache dtype, expert parallelism, the engine
version, the model, a provisional accept length, the decode an ungraphed verify needs),
checked against them, then its scenario calibrated to them with that scenario as the base
(sim/calibration/verify_refit.py: the verify refitted where the hardware model's misses)."""

from __future__ import annotations

from dataclasses import replace

from sim.calibration.calibrate import calibrate
from sim.calibration.engine_defaults import ENGINES
from sim.calibration.hf_fields import read_json
from sim.calibration.init_request import InitRequest, InitScenario
from sim.calibration.init_scenario import init_scenario
from sim.calibration.kv_cache_dtype import reported_kv_cache
from sim.calibration.measurements import Measurements
from sim.calibration.reported_drafter import check_reported_drafter, reported_drafter
from sim.calibration.result import Calibration
from sim.calibration.server_match import check_init_quantization, check_init_server
from sim.calibration.settings import TABLE_TIMING_FIT
from sim.calibration.verify_refit import refit_verify
from sim.errors import SpecsimError
from sim.hardware.passes import PassMemo


def provisional_accept_length(data: Measurements, num_steps: int) -> tuple[float, str] | None:
    """The accept length the figures give at ``num_steps`` (a measured accept length, or
    1 + the sum of vLLM's cumulative rates), with its source; None if they give none.
    ``calibrate`` then fits the acceptance to every figure and replaces it."""
    for a in data.accept_lengths:
        if a.num_steps == num_steps:
            return a.accept_length, a.source
    cumulative = sorted((c.position, c.rate, c.source) for c in data.cumulative)
    if cumulative and [p for p, _, _ in cumulative] == list(range(1, num_steps + 1)):
        return 1.0 + sum(r for _, r, _ in cumulative), cumulative[0][2]
    return None


def init_and_calibrate(
    req: InitRequest, data: Measurements, *, prefer: str | None = None
) -> tuple[InitScenario, Calibration | None]:
    """The scenario ``req`` describes and, with figures, its calibration to them (the
    scenario as the base; every pass time then comes from the figures or is derived at
    the efficiency they imply)."""
    req = replace(req, lengths=data.lengths)
    if data.empty:
        if req.context_tokens is not None:
            raise SpecsimError(
                "the context measured figures were taken at: without figures every pass is "
                "derived from the weights alone, at zero context (the serving commands add "
                "each request's own)",
                source="--context-tokens",
            )
        return init_scenario(req), None
    reported = reported_drafter(data, req.drafter, req.num_steps)
    if reported is not None and reported.drafter is not None:
        req = replace(req, drafter=reported.drafter, drafter_source=reported.drafter_why)
    if reported is not None and reported.num_steps is not None:
        req = replace(req, num_steps=reported.num_steps, num_steps_source=reported.num_steps_why)
    if prefer is None:  # --prefer says which wins; without it, refused here in the flags' words
        if req.drafter is not None and req.drafter_source == "--drafter":
            check_reported_drafter(req.drafter, data)
        config = read_json(req.config) if req.model_id is None else {}
        check_init_server(req.engine, config, req.config, data, req.num_steps)
        check_init_quantization(read_json(req.config), req.config, data)
    stated = tuple((str(f.value), f.source) for f in data.server if f.what == "kv_cache_dtype")
    kv_dtype, kv_source = reported_kv_cache(stated, req.kv_cache_dtype)
    req = replace(req, kv_cache_dtype=kv_dtype, kv_cache_source=kv_source)
    ep = next((f for f in data.server if f.what == "expert_parallel"), None)
    if req.expert_parallel is None and ep is not None:
        said = f"named by {ep.source} (recorded)"
        req = replace(req, expert_parallel=int(ep.value), expert_parallel_source=said)
    version = next((f for f in data.server if f.what == "engine_version"), None)
    if req.engine_version is None and version is not None:
        said = f"named by {version.source}"
        if req.engine in ENGINES:  # an unknown engine is refused in init_scenario
            said += f"; the engine defaults below are {req.engine} {ENGINES[req.engine].version}'s"
        req = replace(req, engine_version=str(version.value), engine_version_source=said)
    model = next((f for f in data.server if f.what == "model"), None)
    if req.model_id is None and model is not None:
        req = replace(req, model_id=str(model.value), model_id_source=f"named by {model.source}")
    if req.drafter is not None and req.accept_length is None:
        found = provisional_accept_length(data, req.num_steps or 0)
        if found is not None:
            req = replace(req, accept_length=found[0], accept_length_source=found[1])
    if req.verify_ms is not None and data.baselines:
        tok_s = sum(b.tok_s for b in data.baselines) / len(data.baselines)
        sources = ", ".join(dict.fromkeys(b.source for b in data.baselines))
        req = replace(req, decode_ms=(1000.0 / tok_s, f"the plain tok/s of {sources}"))
    init = init_scenario(req)
    memo = PassMemo()  # the hardware answers every fit of the command shares
    if req.verify_ms is not None:  # the measured verify is held; the figures fix the rest
        fit = TABLE_TIMING_FIT
        return init, calibrate(init.scenario, data, fit_timing=fit, prefer=prefer, memo=memo)
    cal = calibrate(init.scenario, data, prefer=prefer, memo=memo)
    return init, refit_verify(data, cal, prefer, memo)
