"""tree-load's 90% intervals from inputs and model (sim/studies/serving/tree_load_draws.py): each
tree / chain ratio and its sign, the crossing, and the loads beyond the measured batch."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model.model_error import DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, Z90, gain_sigma
from sim.model.tree.acceptance import TreeDraft
from sim.report.tree_load import tree_load_to_dict
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.validate import scenario_from_dict
from sim.studies.serving.tree_load import tree_load_study
from sim.studies.serving.tree_load_draws import crossing_interval, sign_of
from tests.conftest import ROOT

LLAMA = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
SMALL = [
    "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
    "workload.output_tokens=64",
    "workload.requests=16",
    "simulation.replications=3",
]
TREE = TreeDraft(6, 8, 32)

#: The model-error term off (s = a = 0).
TERM_OFF = {"serving.model_error": {"level_per_sqrt_log_load": 0.0, "gain_ceiling": 0.0}}


def _study(sc, draws: int = 4, **kw):
    return tree_load_study(sc, [1, 8, 64], chains=[5], trees=[TREE], draws=draws, **kw)


def _certain():
    """The Llama scenario with every uncertain input pinned: nothing to draw."""
    raw = load_scenario(LLAMA, SMALL).model_dump(exclude_none=True)
    raw.setdefault("serving", {}).update(
        host_us_per_request=20.0, kernel_slope=1.0, kv_reserve_gib=0.69, bytes_per_logit=12.0
    )
    raw["acceptance"].update(shape="flat", tilt=1.0)
    raw["uncertainty"] = {"hardware": raw["uncertainty"]["hardware"]}  # range [1, 1]
    return scenario_from_dict(raw, source="test")


def test_every_interval_holds_the_nominal_and_is_wider_than_monte_carlo():
    # alpha known to +-0.05 (the shipped +-0.004 hides under 3 replications' noise)
    result = _study(load_scenario(LLAMA, [*SMALL, "uncertainty.acceptance.alpha.stderr=0.05"]))
    assert result.intervals["draws"] == result.intervals["draws_run"] == 4
    widened = 0
    for p in result.points:
        for m, r in p.vs_chain["tree 6/8/32"]["chain 5"].items():
            lo, hi = p.vs_chain_interval90["tree 6/8/32"]["chain 5"][m]
            assert lo <= r.mean <= hi and lo <= r.ci95[0] and r.ci95[1] <= hi
            widened += (hi - lo) > (r.ci95[1] - r.ci95[0]) + 1e-12
    assert widened > 0  # the inputs move the ratio beyond its Monte Carlo interval
    for c in result.crossings:
        lo, hi = c.interval90
        if c.at is not None:
            assert (lo is None or lo <= c.at) and (hi is None or c.at <= hi)
    # the batched costs are measured at batch 1 only: 8 and 64 users are beyond them
    assert [p.beyond_measured for p in result.points] == [False, True, True]
    assert "beyond the highest measured batch (1)" in result.intervals["note"]


def test_without_uncertain_inputs_or_model_error_the_interval_is_the_monte_carlo_one():
    off = "serving.model_error={level_per_sqrt_log_load=0,gain_ceiling=0}"
    for sc, draws in ((_certain(), 8), (load_scenario(LLAMA, [*SMALL, off]), 0)):
        if draws:
            sc = with_overrides(sc, TERM_OFF)
        result = _study(sc, draws=draws)
        assert result.intervals["model_error"]["included"] is False
        assert result.intervals["draws"] == 0 and result.intervals["replications_per_draw"] == 0
        for p in result.points:
            for m, r in p.vs_chain["tree 6/8/32"]["chain 5"].items():
                assert p.vs_chain_interval90["tree 6/8/32"]["chain 5"][m] == list(r.ci95)
        for c in result.crossings:  # the grid's own interval: last win to first loss
            assert c.interval90 == (c.last_win, c.first_loss)


@pytest.mark.slow
def test_same_seed_same_document_whatever_the_workers():
    from sim.parallel import LocalExecutor

    sc = load_scenario(LLAMA, SMALL)
    one = tree_load_to_dict(_study(sc))
    again = tree_load_to_dict(_study(sc))
    two = tree_load_to_dict(_study(sc, workers=2, executor=LocalExecutor(2)))
    assert one == again == two


def test_sign_and_crossing_interval_by_hand():
    assert [sign_of(x) for x in ([1.01, 1.2], [0.8, 0.99], [0.9, 1.1], None)] == [
        "wins",
        "loses",
        "undecided",
        "undecided",
    ]

    def at(values):  # crossing of a ratio over loads 1, 10, 100 (linear here, by hand)
        xs = [1.0, 10.0, 100.0]
        for i in range(2):
            if values[i] > 1.0 >= values[i + 1]:
                return xs[i], xs[i] + (values[i] - 1) / (values[i] - values[i + 1]) * 9 * xs[i]
        return (xs[-1], None) if values[-1] > 1.0 else (None, None)

    # 20 draws: one never wins, one always wins, 18 cross between 1 and 10
    cols = [[0.9, 0.8, 0.7], [1.2, 1.1, 1.05]] + [[1.1, 1.1 - 0.01 * k, 0.5] for k in range(18)]
    table = np.array(cols).T  # (loads, draws)
    lo, hi = crossing_interval(table, (10, 100), at)
    # 5% of 20 draws (inverted cdf) is the 1st value, the draw that never wins: off the grid;
    # 95% the 19th, the latest crossing (< 10): inside the nominal grid interval, which stays
    assert lo is None and hi == 100
    lo, hi = crossing_interval(table[:, 2:], (10, 100), at)
    assert 1 < lo < 10 and hi == 100  # the earliest drawn crossing widens the low end
    assert crossing_interval(table[:, 2:3], (10, 100), at) == [10, 100]  # crossing at 25: inside
    # draws the scenario rejects (NaN) leave the nominal's interval
    assert crossing_interval(np.full((3, 2), np.nan), (1, 10), at) == [1, 10]


def test_each_ratio_takes_the_model_error_at_its_decode_batch():
    """The scenario's costs are measured at batch 1 only: at 1 user the ratio's interval is
    the one from inputs alone, beyond it it holds r exp(+-Z90 s ln B), B the load's decode
    batch, and the band grows with B; a crossing's interval holds the loads where the
    band holds 1."""
    sc = _certain()
    bare = _study(with_overrides(sc, TERM_OFF))
    term = _study(sc)
    pair = ("tree 6/8/32", "chain 5")
    margins = []
    for p0, p in zip(bare.points, term.points, strict=True):
        assert p.decode_batch == p0.decode_batch >= 1.0
        m = Z90 * gain_sigma(DEFAULT_GAIN_CEILING, DEFAULT_GAIN_SCALE, np.log(p.decode_batch))
        for metric, r in p.vs_chain[pair[0]][pair[1]].items():
            lo0, hi0 = p0.vs_chain_interval90[pair[0]][pair[1]][metric]
            lo, hi = p.vs_chain_interval90[pair[0]][pair[1]][metric]
            assert lo == pytest.approx(min(lo0, r.mean * np.exp(-m)), rel=1e-12)
            assert hi == pytest.approx(max(hi0, r.mean * np.exp(m)), rel=1e-12)
        margins.append(m)
    assert margins[0] == 0.0 and margins[0] < margins[1] < margins[2]  # 1, 8, 64 users
    doc = term.intervals["model_error"]
    assert doc["included"] and doc["decode_batch"] == term.points[-1].decode_batch
    for c0, c in zip(bare.crossings, term.crossings, strict=True):
        if c.at is not None:  # the term's interval holds the inputs' one
            (lo0, hi0), (lo, hi) = c0.interval90, c.interval90
            assert lo is None or (lo0 is not None and lo <= lo0)
            assert hi is None or (hi0 is not None and hi >= hi0)


def test_a_load_keeps_one_replication_where_every_ratio_passes_the_one_rule():
    """tree-load's draws take the rule of every study's sequential draws
    (``one_replication_enough``), for every ratio at a load: the a priori bound, or the
    move measured on the probe draws where it is given."""
    from sim.studies.serving.draw_intervals import DRAW_NOISE_SHARE, interval90
    from sim.studies.serving.tree_load_draws import every_ratio_enough

    spread = np.array([0.8, 0.9, 1.0, 1.1, 1.2])
    nominal = 1.0 + np.array([-1.0, 1.0, -1.0, 1.0]) * 0.001  # sd 0.00115
    drawn = {"t": {"c": {"a": spread, "b": spread}}}
    lo, hi = interval90(spread.tolist(), None)
    assert every_ratio_enough(drawn, {"t": {"c": {"a": nominal, "b": nominal}}})
    # sqrt(2) x the per-replication sd above the share of the width: the a priori bound fails
    sd = 1.1 * DRAW_NOISE_SHARE * (hi - lo) / np.sqrt(2.0)
    noisy = 1.0 + (nominal - 1.0) * sd / 0.00115
    both = {"t": {"c": {"a": nominal, "b": noisy}}}
    assert not every_ratio_enough(drawn, both)
    # ... and the probe draws' differences settle it when the move they measure is small
    small = {"t": {"c": {"a": np.full(4, 1e-4), "b": np.full(4, 1e-4)}}}
    assert every_ratio_enough(drawn, both, small)
    large = {"t": {"c": {"a": np.full(4, 1e-4), "b": np.full(4, 0.2 * (hi - lo))}}}
    assert not every_ratio_enough(drawn, both, large)
    few = {"t": {"c": {"a": np.array([1.0, np.nan]), "b": spread}}}
    assert not every_ratio_enough(few, {"t": {"c": {"a": nominal, "b": nominal}}})


def test_draws_stop_at_one_replication_only_where_it_is_enough_and_otherwise_run_both():
    """Where a load's draws ran both replications their ratios and intervals are those of
    every draw running both (--all-replications); the document counts what ran."""
    sc = load_scenario(LLAMA, [*SMALL, "uncertainty.acceptance.alpha.stderr=0.05"])
    seq, full = _study(sc), _study(sc, sequential=False)
    ran = seq.intervals["replications_per_draw_at"]
    assert set(ran.values()) <= {1, 2}
    assert full.intervals["replications_per_draw_at"] == {"1": 2, "8": 2, "64": 2}
    assert "probes_ran_two_at" not in full.intervals
    drafts = 2  # the chain and the tree: plain decoding is no ratio
    draws = seq.intervals["draws_run"]
    probed = seq.intervals.get("probes_ran_two_at", [])
    assert all(ran[str(c)] == 1 for c in probed)
    extra = len(probed) * seq.intervals.get("probe_draws", 0)  # the probes' second
    assert seq.intervals["draw_replications_run"] == drafts * (draws * sum(ran.values()) + extra)
    for p, q in zip(seq.points, full.points, strict=True):
        if ran[str(p.concurrency)] == 2:
            assert p.vs_chain_interval90 == q.vs_chain_interval90


def test_where_the_a_priori_bound_fails_the_probe_draws_run_two_and_measure_the_move(
    monkeypatch,
):
    """The a priori bound made to fail and the measured one to pass at every load: the
    probe draws (the first half) run their second replication, the move is measured on
    their differences (one finite value a probe for every ratio), the other draws keep
    one, and the document says where and counts it."""
    import sim.studies.serving.tree_load_draws as tld

    seen = []

    def rule(drawn, nominal, differences=None):
        if differences is not None:
            seen.extend(v for d in differences.values() for ms in d.values() for v in ms.values())
        return differences is not None

    monkeypatch.setattr(tld, "every_ratio_enough", rule)
    sc = load_scenario(LLAMA, [*SMALL, "uncertainty.acceptance.alpha.stderr=0.05"])
    got = _study(sc).intervals
    assert got["replications_per_draw_at"] == {"1": 1, "8": 1, "64": 1}
    assert got["probes_ran_two_at"] == [1, 8, 64] and got["probe_draws"] == 2
    assert got["draw_replications_run"] == 2 * (4 * 3 + 2 * 3)  # drafts x (first + probes)
    assert seen and all(v.shape == (2,) and np.all(np.isfinite(v)) for v in seen)
