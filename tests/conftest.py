"""Shared fixtures: the seed scenario path and a writer for small scenario files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from sim.binding.decompose import scenario_hardware
from sim.hardware.pass_physics import PassPhysics
from sim.scenario.schema import Scenario

# No per-example deadline: a shared CI machine can stall any example past Hypothesis's
# default 200 ms, which would fail a property that holds (a flaky CI run). Properties are
# what these tests check; speed lives in `make bench`.
settings.register_profile("specsim", deadline=None)
settings.load_profile("specsim")

# The heavy studies default to every processor (sim/parallel/choice.py ``default_workers``): the
# suite already runs on both cores (pytest -n 2), so its commands run in their own process
# unless a test asks for workers. (One BLAS thread a process: tests/__init__.py, which runs
# before this file imports numpy.)
os.environ["SPECSIM_WORKERS"] = "1"

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"

MINIMAL = """\
name = "tiny"
[timing]
decode_ms = 10.0
verify_ms = 20.0
draft_step_ms = 1.0
draft_extend_ms = 2.0
cycle_overhead_ms = 0.5
[speculation]
num_steps = 3
[acceptance]
alpha = 0.7
[targets]
tok_s = [100.0]
"""


#: [uncertainty] of the seed's inputs known exactly (with flat rates: no input uncertain).
EXACT_UNCERTAINTY = """
[uncertainty]
timing.decode_ms = { range = [12.12, 12.12] }
timing.verify_ms = { stderr = 0.0 }
timing.draft_step_ms = { range = [1.2, 1.2] }
acceptance.alpha = { stderr = 0.0 }
"""


def decode_physics(scenario: Scenario, **physics: float) -> PassPhysics:
    """The graphed target decode pass of a scenario on its own hardware (``physics``: the
    optional PassPhysics fields, e.g. ``kv_bytes_per_token``)."""
    hw = scenario_hardware(scenario)
    return PassPhysics(
        "decode", hw.target_weights(), hw.geom.layers, hw.current, hw.geom, True, **physics
    )


def seed_text_without_uncertainty() -> str:
    """The seed file without its [uncertainty] tables (for tests that edit its values)."""
    return SEED.read_text().split("\n[uncertainty]")[0] + "\n"


@pytest.fixture
def seed_path() -> Path:
    return SEED


@pytest.fixture
def write_scenario(tmp_path: Path):
    """Write TOML text to a file and return its path (default: a small valid scenario)."""

    def write(text: str = MINIMAL, name: str = "scenario.toml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
