"""The fast engine's compiled kernel gives the NumPy kernel's numbers, bit for bit.

Both read the same draws (each replication's accept stream, cycle-major), so every output
array must be identical, whatever the acceptance model, the timing model, the draft length
or the row width; only the time they take differs. ``auto`` picks the compiled kernel for
large runs and once it is loaded, and never loads Numba for a small run.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.binding.bind import cycle_time_model
from sim.errors import SpecsimError
from sim.scenario.load import load_scenario, with_overrides
from sim.simulation.engines.kernels import COMPILED_ABOVE_CYCLES, KERNELS, kernel_for
from sim.simulation.simulate import simulate
from tests.helpers import make
from tests.simulation.test_engines_fast import PerCycleOnly

OUTPUTS = (
    "tok_s",
    "request_ms",
    "cycles",
    "emitted_tokens",
    "request_class",
    "accept_counts",
    "phase_ms",
)


def assert_same_numbers(scenario, **kwargs) -> None:
    ref = simulate(scenario, kernel="numpy", stream=False, **kwargs)
    out = simulate(scenario, kernel="compiled", stream=False, **kwargs)
    for name in OUTPUTS:
        assert np.array_equal(getattr(ref, name), getattr(out, name)), name


SEED_CASES = {
    "seed": {},
    "plain decoding (k = 0)": {"speculation.num_steps": 0},
    "k = 1": {"speculation.num_steps": 1},
    "k = 16, decaying rates": {"speculation.num_steps": 16, "acceptance.alpha": 0.91},
    "per-request Beta rates": {"acceptance.concentration": 5.0},
    "gamma jitter": {"timing.jitter_cv": 0.2},
    "Beta and jitter": {"acceptance.concentration": 5.0, "timing.jitter_cv": 0.2},
}


@pytest.mark.parametrize("overrides", SEED_CASES.values(), ids=SEED_CASES.keys())
def test_the_seed_and_its_variants(seed_path, overrides):
    # 53 requests: an odd row, so cycles straddle the halves of 64-bit draws
    assert_same_numbers(
        with_overrides(load_scenario(seed_path), overrides), replications=7, requests=53
    )


def test_every_shipped_scenario(seed_path):
    for path in sorted(seed_path.parent.glob("*.toml")):
        assert_same_numbers(load_scenario(path), replications=3, requests=21)


def test_an_extend_that_grows_with_l_under_per_cycle_jitter():
    """Per-request counts of cycles by L (the extend's scaling) and per-cycle draws."""
    slope = {"timing.draft_extend_ms_per_token": 0.6, "timing.draft_extend_tokens": 1.0}
    sc = with_overrides(make({"alpha": 0.75}, k=3, tokens=200, jitter=0.3, requests=9), slope)
    assert_same_numbers(sc)  # gamma jitter: summed per request
    assert_same_numbers(sc, cycle_times=PerCycleOnly(cycle_time_model(sc)))


def test_requests_longer_than_a_chunk():
    sc = make({"alpha": 0.3}, k=2, tokens=150_001, requests=3, replications=2)
    assert_same_numbers(sc)


@settings(max_examples=12, deadline=None)
@given(
    alpha=st.floats(0.0, 1.0),
    k=st.integers(0, 7),
    requests=st.integers(1, 40),
    tokens=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_rate_draft_length_and_row_width(alpha, k, requests, tokens, seed):
    sc = make({"alpha": alpha}, k=k, tokens=tokens, requests=requests, replications=3)
    assert_same_numbers(sc, seed=seed)


def test_auto_compiles_large_runs_and_keeps_it_once_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "sim.simulation.engines.compiled", raising=False)
    assert kernel_for("auto", COMPILED_ABOVE_CYCLES - 1) == "numpy"
    assert kernel_for("auto", COMPILED_ABOVE_CYCLES) == "compiled"
    assert kernel_for("numpy", 1e12) == "numpy"
    assert kernel_for("compiled", 1) == "compiled"
    import sim.simulation.engines.compiled  # noqa: F401 - loaded: auto keeps using it

    assert kernel_for("auto", 1) == "compiled"
    assert set(KERNELS) == {"auto", "numpy", "compiled"}


def test_an_unknown_kernel_is_refused():
    with pytest.raises(SpecsimError, match="unknown kernel 'fortran'"):
        simulate(make({"alpha": 0.5}), kernel="fortran")


def test_states_through_the_public_api_give_the_same_numbers(monkeypatch):
    """Where NumPy's memory layout is not the one checked, states move through
    ``bit_generator.state`` (sim/simulation/engines/pcg64.py): same numbers (the streams
    made as generators, one SeedSequence each, so that states are read and written)."""
    import sim.simulation.simulate as simulate_mod
    from sim.simulation.engines import pcg64

    monkeypatch.setattr(pcg64, "layout_checked", lambda: False)
    monkeypatch.setattr(simulate_mod, "words_match_numpy", lambda: False)
    assert_same_numbers(make({"alpha": 0.3}, k=2, tokens=150_001, requests=3, replications=2))


def test_streams_made_as_generators_give_the_same_numbers(monkeypatch):
    """The kernel takes a block's accept streams by their seed words (no generators); where
    the words are not known (``replication_rngs``: one SeedSequence each) it reads and
    writes the generators' states: same numbers."""
    import sim.simulation.simulate as simulate_mod

    sc = make({"alpha": 0.6}, k=3, tokens=150_001, requests=3, replications=3)
    taken = simulate(sc, kernel="compiled")
    monkeypatch.setattr(simulate_mod, "words_match_numpy", lambda: False)
    made = simulate(sc, kernel="compiled")
    for name in OUTPUTS:
        assert np.array_equal(getattr(taken, name), getattr(made, name)), name


def test_a_taken_stream_is_never_made():
    from sim.simulation.simulate import block_rngs

    rngs = block_rngs(7, range(2))
    words = rngs[0].take(1)
    assert words.dtype == np.uint64 and words.shape == (4,)
    with pytest.raises(RuntimeError, match="accept stream was taken"):
        rngs[0].accept  # noqa: B018 - reading it is the error
    with pytest.raises(RuntimeError, match="cannot be taken"):
        rngs[0].take(1)
    rngs[1].accept  # noqa: B018 - made: its words are no longer handed out
    assert not rngs[1].can_take(1)


@pytest.mark.parametrize("requests", [100, 257])
def test_wide_rows(requests):
    """Rows wider than a draw buffer's spare outputs (refills inside a row) and rows padded
    to whole 16-lane vectors."""
    assert_same_numbers(make({"alpha": 0.7}, k=3, tokens=120, requests=requests, replications=2))


def test_a_default_run_does_not_load_numba(seed_path):
    """Start-up: ``specsim run`` at its default size stays on NumPy (loading Numba would
    cost about 0.4 s of CPU for a few milliseconds of Monte Carlo)."""
    code = (
        "import sys; from sim.cli import main; sys.argv = ['specsim', 'run', "
        f"{str(seed_path)!r}, '-q']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('numba' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stderr.strip().splitlines()[-1] == "False", out.stderr
