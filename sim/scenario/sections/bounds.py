"""The ceilings every number of a scenario is checked against, and the bounded number types
the sections share."""

from typing import Annotated

from pydantic import Field

# Bounds. Every number is finite (``allow_inf_nan=False``: TOML's inf and nan are refused),
# and every size has a ceiling well above any real server, so that a typo (1e9 layers)
# is an error naming the field instead of a multi-GiB allocation or a run that never ends:
#: One hour: no pass of a decoding step takes longer (real ones take 1-100 ms).
MAX_MS = 3_600_000.0
#: Draft length: EAGLE/SGLang/vLLM use 1-10; 64 positions cover every published setting.
MAX_NUM_STEPS = 64
#: Decoder layers (the largest public models have ~130) and kernels one layer launches.
MAX_LAYERS = 1_000
MAX_KERNELS_PER_LAYER = 1_000
#: Tensor-parallel degree: NVL72 racks are the largest single all-reduce domain (72).
MAX_GPUS = 1_024
#: Output tokens of one request: the longest context windows are ~1M tokens.
MAX_OUTPUT_TOKENS = 1_000_000
#: Most requests a recorded run's job may list (sim/calibration/run_job.py).
MAX_JOB_REQUESTS = 1_000_000
#: Requests per replication and replications: results hold R x Q per-request rows
#: (sim/simulation/budget.py bounds their product and the run time as well).
MAX_REQUESTS = 1_000_000
MAX_REPLICATIONS = 100_000
#: Slowest and fastest Poisson arrival rates (requests/s): one request in 11.6 days, ten
#: million a second (beyond any server; a smaller rate's gaps overflow a simulated clock).
MIN_RATE_PER_S = 1e-6
MAX_RATE_PER_S = 1e7
#: Log-space standard deviation of a lognormal length: at 10 one standard deviation is a
#: factor of 22,000 (real traffic is 0.5-1.5); beyond ~1e154 its square overflows.
MAX_LOG_SIGMA = 10.0
#: Parameters (weights) of one layer, expert or head: 1e13 is beyond any model.
MAX_PARAMS = 1e13
#: Throughput targets: no decoding reaches 1e7 tok/s per request.
MAX_TOK_S = 1e7
#: Entries of a list in a scenario (per-position rates, mix classes, targets).
MAX_LIST = 64
#: Figures a calibration records (``[[serving.calibrated_on]]``): every run of a sweep
#: re-fitted in each draw of an interval; a thousand is beyond any load sweep.
MAX_CALIBRATION_FIGURES = 1_000

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveMs = Annotated[float, Field(gt=0.0, le=MAX_MS)]
NonNegativeMs = Annotated[float, Field(ge=0.0, le=MAX_MS)]
Params = Annotated[float, Field(gt=0.0, le=MAX_PARAMS)]
#: Batch sizes an engine captured as CUDA graphs (``serving.graph_batches``).
CapturedBatches = Annotated[
    list[Annotated[int, Field(gt=0, le=MAX_REQUESTS)]], Field(min_length=1, max_length=MAX_LIST)
]
