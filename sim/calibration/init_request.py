"""What ``specsim init`` is given (``InitRequest``: its flags, and what the figures' files
state in their place) and what it returns (``InitScenario``: the scenario, each value's
origin, the file's header and the report's notes)."""

from __future__ import annotations

from dataclasses import dataclass

from sim.calibration.importers.request_lengths import RequestLengths
from sim.calibration.init_job import InitJob
from sim.scenario.schema import Scenario


@dataclass(frozen=True, slots=True)
class InitRequest:
    """What the owner gives (flags of ``specsim init``); None: not given."""

    config: str
    gpu: str
    engine: str
    gpus: int | None = None
    tensor_parallel: int | None = None
    expert_parallel: int | None = None
    interconnect: str | None = None
    engine_version: str | None = None
    drafter: str | None = None
    num_steps: int | None = None
    draft_params: float | None = None
    draft_config: str | None = None
    accept_length: float | None = None
    #: Where ``accept_length`` came from (a flag, or the measurement it was read from).
    accept_length_source: str = "--accept-length"
    name: str | None = None
    model_id: str | None = None
    #: Where ``model_id`` came from (a flag, or the file that names the model).
    model_id_source: str = "--model-id"
    #: Where ``engine_version`` came from: the flag, or the figures' file that states it.
    engine_version_source: str = "--engine-version"
    #: Where ``expert_parallel`` came from: the flag, or the figures' file that states it.
    expert_parallel_source: str = "--ep"
    #: The mean context (tokens) the measured figures' runs decoded at (prompt + half the
    #: answer); None: the figures' own files say it, or there are none.
    context_tokens: float | None = None
    #: The served prompt and answer lengths (``--input-tokens``, ``--output-tokens``);
    #: None: the files' (``lengths``), else the scenario's defaults.
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: The prompt and answer lengths the measurement files' runs had.
    lengths: tuple[RequestLengths, ...] = ()
    #: A run replayed as the served job (``--replay``): its keys, written after the
    #: workload's.
    job: InitJob | None = None
    #: The verify pass the owner measured (``--verify-ms``, batch 1, over the tokens the
    #: engine verifies a cycle); None: derived from the weights or fitted to the figures.
    verify_ms: float | None = None
    #: Whether the engine runs the verify in a CUDA graph (``--verify-cuda-graph`` /
    #: ``--no-verify-cuda-graph``); None: the engine's default.
    verify_cuda_graph: bool | None = None
    #: Kernels one decoder layer issues run eagerly (``--kernels-per-layer``); None: a named
    #: default where specsim has one.
    kernels_per_layer: int | None = None
    #: The plain decode pass the figures give (1000 / the baseline tok/s) and its source:
    #: what an ungraphed measured verify's GPU work is taken from (``verify_compute``).
    decode_ms: tuple[float, str] | None = None
    #: The server's ``--kv-cache-dtype`` (engine spellings, sim/calibration/kv_cache_dtype.py);
    #: None: ``auto``.
    kv_cache_dtype: str | None = None
    #: The measurement file and field that stated ``kv_cache_dtype`` (None: the flag).
    kv_cache_source: str | None = None
    #: Where ``drafter`` and ``num_steps`` came from: the flags, or the report that states
    #: them (sim/calibration/reported_drafter.py).
    drafter_source: str = "--drafter"
    num_steps_source: str = "--num-steps"


@dataclass(frozen=True, slots=True)
class InitScenario:
    """The scenario, its comments (dotted key -> where the value came from) and header."""

    scenario: Scenario
    comments: dict[str, str]
    header: str
    #: Lines for init's report (the workload written, and from what).
    notes: tuple[str, ...] = ()
