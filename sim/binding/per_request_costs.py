"""What a request adds to a target pass beyond its tokens, read from the scenario: a row of
target logits (``logit_rows``: the vocabulary, bytes a logit, the tensor-parallel gather)
and a hybrid target's recurrent states (``recurrent_state``); the batched iteration cost
(sim/binding/serving_cost.py) prices both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.binding.state_shape import state_bandwidth_fraction, state_shape
from sim.errors import SpecsimError
from sim.model.logit_rows import DEFAULT_BYTES_PER_LOGIT, LogitRows, logit_row_ms
from sim.model.recurrent_state import RecurrentState
from sim.scenario.schema import Scenario

if TYPE_CHECKING:
    from sim.hardware.pass_model import PassModel
    from sim.hardware.passes import HardwarePoint


def target_vocab(scenario: Scenario) -> float | None:
    """The target's vocabulary, ``model.lm_head_params`` / ``model.hidden_size`` (None:
    the scenario gives neither, and the logit rows are not priced)."""
    model = scenario.model
    if not model.lm_head_params or not model.hidden_size:
        return None
    return model.lm_head_params / model.hidden_size


def logit_rows(scenario: Scenario, hardware: HardwarePoint) -> LogitRows:
    """What a row of target logits costs on ``hardware`` (sim/model/logit_rows.py): the
    vocabulary (``target_vocab``) at ``serving.bytes_per_logit`` (None:
    ``DEFAULT_BYTES_PER_LOGIT``; ``LogitRows.given`` says which) and the tensor-parallel
    gather; not priced (0) without the vocabulary or a GPU preset."""
    vocab, gpu = target_vocab(scenario), hardware.gpu
    if vocab is None or gpu is None:
        return LogitRows()
    given = scenario.serving.bytes_per_logit if scenario.serving is not None else None
    per_logit = DEFAULT_BYTES_PER_LOGIT if given is None else given
    return LogitRows(
        logit_row_ms(
            vocab,
            per_logit,
            gpu.memory_bandwidth_gbps,
            hardware.gpus,
            hardware.interconnect.bus_bandwidth_gbps,
        ),
        vocab,
        per_logit,
        given is not None,
    )


def recurrent_state(
    scenario: Scenario, hardware: HardwarePoint, hw: PassModel | None = None
) -> RecurrentState:
    """A request's states in the target's passes (sim/model/recurrent_state.py):
    ``state_shape`` at ``state_bandwidth_fraction`` (the scenario's
    ``serving.state_bandwidth_fraction``, else its server's measured batch-1 memory
    efficiency) of the GPU preset's memory bandwidth; none
    when the scenario gives no state. SpecsimError naming ``hardware.gpu`` when a state is
    given without a GPU preset to move it at. ``hw``: the scenario's hardware model when
    the caller holds it (``serving_cost``: the ``Bound``'s), so it is not taken apart again."""
    shape = state_shape(scenario)
    if not shape:
        return RecurrentState()
    gpu = hardware.gpu
    if gpu is None:
        raise SpecsimError(
            "needed with model.state_bytes_per_request (or the conv state): the memory "
            "bandwidth the state moves at",
            field="hardware.gpu",
        )
    return RecurrentState(shape, gpu.memory_bandwidth_gbps, state_bandwidth_fraction(scenario, hw))
