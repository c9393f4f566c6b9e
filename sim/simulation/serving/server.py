"""The state of one serving replication between its events (``Server``): the rooms that
each do one job, wired together. The SimPy processes that drive it are
sim/simulation/serving/processes.py.

Each request joins the waiting queue when it arrives and is admitted at an iteration
boundary while a running slot is free and its KV fits (``admission``: ``Admission``,
with preemption). Decode iterations follow the SGLang cycle of what the policy drafts at
that batch size, a chain or a tree (sim/model/batched_cost.py, sim/model/drafts.py),
planned as blocks of iterations (``planner``: ``BlockPlanner``, over ``block_size``'s
pure rules and block_plan.py's ``plan_block``, pure and vectorized over the batch, so the
Python work per iteration is at most one timeout and one admission check whatever the
batch size): acceptance is decided per request from its own rates, or its own tree's
depth survival (``batch.accept_lengths``). A committed plan advances the batch
(``advance``: ``Advance``, with ``deliveries``): finished requests leave at the end of
the iteration in which they reach their token count, and when the KV cache cannot hold
the batch's growth the newest requests are preempted (their KV freed, to be recomputed
by a prefill of prompt + generated tokens when readmitted; vLLM V1
``Scheduler._preempt_request``). Answers and what closed-loop users do next are
``answers`` (``Answers``, with ``held_rows``: users whose requests are rows of the
batch); the KV a request and the decode rows hold is ``kv_ledger`` (``KvLedger``), and
prompts being prefilled ``prefills`` (``Prefills``).
"""

from __future__ import annotations

import simpy

from sim.simulation.serving.admission import Admission
from sim.simulation.serving.advance import Advance
from sim.simulation.serving.answers import Answers
from sim.simulation.serving.decode_batch import DecodeBatch
from sim.simulation.serving.kv_ledger import KvLedger
from sim.simulation.serving.plan import Drafting, ServingPlan
from sim.simulation.serving.planner import BlockPlanner, threshold_columns
from sim.simulation.serving.prefills import Prefills
from sim.simulation.serving.records import Recorder

__all__ = ["Server"]


class Server:
    """One replication's scheduler state (see the module docstring): its rooms
    ``admission``, ``planner``, ``advance``, ``answers``, ``prefills`` and ``ledger``, and
    what they share: the decode ``batch``, the recorder ``rec``, the KV cache ``kv``
    (None: no KV limit) and the prefilling requests ``prefilling`` (``Prefills.states``)."""

    def __init__(
        self, env: simpy.Environment, plan: ServingPlan, drafting: Drafting, rec: Recorder
    ):
        self.env = env
        self.plan = plan
        self.config = plan.scheduler
        self.cost = plan.cost
        self.rec = rec
        policy = drafting.policy
        self.ledger = KvLedger(drafting)
        self.kv = self.ledger.cache
        # threshold columns: the chain's max_k, then each tree the policy drafts
        self.trees = tuple(acc for _, acc in drafting.trees)
        columns, width = threshold_columns(plan.max_k, drafting.trees)
        self.batch = DecodeBatch(width)
        self.prefills = Prefills(self.ledger, self.config.prefill == "skip")
        self.prefilling = self.prefills.states
        self.admission = Admission(
            env, self.batch, self.prefills, self.kv, rec, self.config.max_running(policy)
        )
        self.queue = self.admission.queue
        self.planner = BlockPlanner(
            env, plan, drafting, self.batch, self.ledger, self.admission, self.prefills, columns
        )
        self.answers = Answers(env, plan.workload, rec, self.admission)
        self.advance = Advance(
            self.batch,
            rec,
            self.ledger,
            self.prefills,
            self.planner,
            self.admission,
            self.answers,
        )
        self.stop = self.answers.stop
        self.drafter = policy.max_k > 0
        self.prefill_first = self.config.batching == "prefill_first"
        # a completion resumes other processes (a thinking user, an open request, the
        # horizon) at its instant: they run before the scheduler's next step
        self.others_wait = True

    @property
    def idle(self) -> bool:
        """Nothing runs: no decode row and no prefill."""
        return self.batch.size == 0 and not self.prefilling

    def held_tokens(self) -> int:
        """KV tokens held now: decode contexts + lookahead, and prefilling requests."""
        return self.ledger.rows_hold(self.batch.context) + self.prefills.hold_tokens
