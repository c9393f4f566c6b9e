"""SpecsimError keeps where the problem is however it is rebuilt: pickled to or from a
worker process, or re-raised by SimPy as ``type(e)(*e.args)`` from a failed process."""

from __future__ import annotations

import pickle

import simpy

from sim.errors import SpecsimError


def _parts(exc: SpecsimError) -> tuple[str, str | None, str | None, str | None]:
    return exc.message, exc.source, exc.field, exc.param


def test_pickling_keeps_source_field_and_param() -> None:
    exc = SpecsimError("too large", source="s.toml", field="model.layers", param="layers")
    again = pickle.loads(pickle.dumps(exc))
    assert _parts(again) == _parts(exc)
    assert str(again) == "s.toml: model.layers: too large"


def test_an_error_inside_a_simpy_process_keeps_its_field() -> None:
    def fails(env: simpy.Environment):
        yield env.timeout(1)
        raise SpecsimError("needed", field="model.kernels_per_layer")

    env = simpy.Environment()
    env.process(fails(env))
    try:
        env.run()
    except SpecsimError as exc:
        assert exc.field == "model.kernels_per_layer"
        assert str(exc) == "model.kernels_per_layer: needed"
    else:
        raise AssertionError("the process's error was not raised")
