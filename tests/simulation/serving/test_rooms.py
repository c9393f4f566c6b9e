"""The serving floor's rooms by hand: which announced arrival can cut a block
(block_size.py ``admissible_arrival``), the trees' threshold columns in the decode batch
(planner.py ``threshold_columns``), the KV a request holds through its prefill
(prefills.py ``Prefills``), and FIFO admission under the running slots and the KV cache
(admission.py ``Admission``)."""

from __future__ import annotations

import numpy as np
import simpy

from sim.model.policy import FixedK, KTable
from sim.model.tree.acceptance import TreeDraft
from sim.simulation.serving import ClosedLoop
from sim.simulation.serving.admission import PREEMPTED, WAITING, Admission
from sim.simulation.serving.block_size import admissible_arrival
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.plan import Drafting
from sim.simulation.serving.planner import threshold_columns
from sim.simulation.serving.prefills import Prefills
from sim.simulation.serving.records import Recorder
from sim.simulation.serving.workload import Request
from tests.simulation.serving.helpers import tree_plan

ALPHA = {"alpha": 0.7, "rank_profile": "sequoia-jf68m-llama2-7b"}


def test_an_arrival_can_cut_a_block_only_into_an_empty_queue_and_a_free_slot():
    """Arrivals announced at 10 and 20 ms, 3 of 4 slots running: the one at 10 ms could be
    admitted as it arrives. Behind a waiting request, or with every slot held, no arrival
    can be, nor when none is announced."""
    assert admissible_arrival(True, 3, 4, [10.0, 20.0]) == 10.0
    assert admissible_arrival(False, 3, 4, [10.0, 20.0]) is None
    assert admissible_arrival(True, 4, 4, [10.0, 20.0]) is None
    assert admissible_arrival(True, 3, 4, []) is None


def test_trees_read_the_threshold_columns_after_the_chains():
    """A plan of up to 3 drafts: a chain reads the first 3 columns; a policy drafting two
    trees (a 3-step tree at small batches, a 2-step one beyond) puts the first at columns
    3-5 and the second at 6-7, in first-use order: 8 columns in all."""
    p = tree_plan(ClosedLoop(8), TreeDraft(3, 2, 6), acceptance=ALPHA)
    small, large = TreeDraft(3, 2, 6), TreeDraft(2, 2, 4)
    drafting = p.drafting(KTable(((1, 4, small), (5, 8, large))))
    columns, width = threshold_columns(3, drafting.trees)
    assert columns == {small: slice(3, 6), large: slice(6, 8)}
    assert width == 8
    assert threshold_columns(3, ()) == ({}, 3)


def _request(rid: int, prompt: int) -> Request:
    req = Request(prompt, 10, -1, np.zeros(3, dtype=np.int64), np.uint64(rid))
    req.id = rid
    return req


def _admission(capacity: int, max_running: int, lookahead: int = 3) -> Admission:
    drafting = Drafting(FixedK(2), (2,) * (max_running + 1), (), lookahead, capacity)
    ledger = KvLedger(drafting)
    env = simpy.Environment()
    rec = Recorder(max_running, capacity, 0, 10)
    return Admission(env, DecodeBatch(3), Prefills(ledger, False), ledger.cache, rec, max_running)


def test_a_request_holds_its_context_lookahead_and_its_prefills_token():
    """A 10-token prompt with 3 lookahead slots holds 10 + 1 + 3 = 14 KV tokens from its
    admission; without a prompt there is nothing to prefill: 0 + 3. When its prefill is
    complete the prefills give its hold back."""
    prefills = _admission(100, 4).prefills
    assert (prefills.needs(_request(0, 10)), prefills.holds(_request(0, 10))) == (True, 14)
    assert (prefills.needs(_request(1, 0)), prefills.holds(_request(1, 0))) == (False, 3)
    req = _request(2, 10)
    prefills.start(req, prefills.holds(req))
    assert prefills.hold_tokens == 14
    assert prefills.finish(prefills.states[0]) is req
    assert (prefills.states, prefills.hold_tokens) == ([], 0)


def test_admission_is_first_come_first_served_under_slots_and_kv():
    """Prompts of 10, 50 and 10 tokens hold 14, 54 and 14 KV tokens: with 80 free the
    first two start their prefills (12 left) and the third, which would fit alone in 14,
    waits behind the head that does not: admission never skips the queue. A preempted
    request queued after new arrivals is still readmitted first."""
    adm = _admission(80, 4)
    for rid, prompt in ((0, 10), (1, 50), (2, 10)):
        adm.enqueue((WAITING, rid, _request(rid, prompt)))
    adm.admit_waiting()
    assert [s.request.id for s in adm.prefilling] == [0, 1]
    assert adm.kv is not None and adm.kv.level == 80 - 14 - 54
    assert not adm.admissible()
    late = _request(3, 0)
    adm.enqueue((PREEMPTED, 3, late))
    assert adm.queue.items[0][2] is late  # ahead of the waiting new arrival


def test_admission_stops_at_the_running_slots():
    """Three requests without prompts, two slots: two join the decode batch at once (no
    prefill), in order; the third waits."""
    adm = _admission(1000, 2)
    for rid in range(3):
        adm.enqueue((WAITING, rid, _request(rid, 0)))
    adm.admit_waiting()
    assert adm.batch.ids.tolist() == [0, 1]
    assert len(adm.queue.items) == 1 and not adm.admissible()
