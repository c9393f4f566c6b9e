"""Search rows: the seed's Monte Carlo search (issue 15) and its closed-form search (issue 9),
each against an older code path measured in the same run.

Both versions run the same snippet in a subprocess (``trees.run_snippet``): the snippet
times the search call alone with ``time.process_time`` and reports what it found, so the
comparison excludes interpreter start-up (reported separately, in the start-up rows).

* Monte Carlo search: ``search_acceptance(seed, [150, 200], k = 1..16)`` at the seed's own
  seed, against commit ``TODAY`` (main when issue 15's goals were set: the layout landed,
  the search scaling the acceptance model). The answers are compared with today's own
  Monte Carlo bisection (the same search through a plain wrapper, which takes the
  bisection path), run once: since ``TODAY`` the seed's acceptance falls with position
  (issue 10), so its answers differ from ``TODAY``'s by design, not by the root finder.
  Each older commit searches its own seed scenario file (the format moved with the code).
* Closed-form search: the same over three targets [100, 150, 200] with the closed form as
  the "simulation", counting scenario validations (``Scenario.model_validate`` calls),
  against the pre-layout commit ``PRE_LAYOUT``. The goals (issue 9) are on the search
  itself (``uncertainty=False``: the roots, what ``PRE_LAYOUT`` computed); the same call with
  the 90% intervals from inputs and model (issue 10, ``answer_uncertainty``: its own
  validations per uncertain input, Sobol draws and the scipy.stats import) is measured
  beside it, in its own process, and reported against the same old path.
"""

from __future__ import annotations

import json
from pathlib import Path

from timing import Timing
from trees import REPO, old_tree, run_snippet

TODAY = "c1b9c69"
PRE_LAYOUT = "10bd004"
SEED = REPO / "scenarios" / "kimi-k25-8xpcie-eagle3.toml"

_MC_SNIPPET = """
import json, time
from sim.scenario.load import load_scenario
from sim.studies.search import search_acceptance
sc = load_scenario({seed!r})
t0 = time.process_time()
res = search_acceptance(sc, [150.0, 200.0], range(1, 17))
cpu = time.process_time() - t0
rows = [[t.tok_s, r.num_steps, getattr(r, "first_rate", r.alpha), r.alpha]
        for t in res.targets for r in t.per_num_steps]
print(json.dumps({{"cpu": cpu, "evaluations": res.evaluations, "rows": rows}}))
"""

_BISECTION_SNIPPET = _MC_SNIPPET.replace(
    "res = search_acceptance(sc, [150.0, 200.0], range(1, 17))",
    "res = search_acceptance(sc, [150.0, 200.0], range(1, 17), simulate=Plain())",
).replace(
    "sc = load_scenario(",
    "from sim.studies.bisection import MonteCarloStats\n"
    "class Plain:\n"
    "    def __init__(self):\n"
    "        self.run = MonteCarloStats('fast')\n"
    "    def __call__(self, *args):\n"
    "        return self.run(*args)\n"
    "sc = load_scenario(",
)

_CF_NEW = """
import json, time
from sim.scenario.schema import Scenario
from sim.scenario.load import load_scenario
from sim.studies.bisection import closed_form_stats as closed_form
from sim.studies.search import search_acceptance
"""
_CF_OLD = """
import json, time
from sim.scenario import Scenario, load_scenario
from sim.rootfind import closed_form_simulate as closed_form
from sim.search import search_acceptance
"""
_CF_BODY = """
calls = [0]
validate = Scenario.model_validate
def counted(*args, **kwargs):
    calls[0] += 1
    return validate(*args, **kwargs)
Scenario.model_validate = staticmethod(counted)
sc = load_scenario({seed!r})
calls[0] = 0
t0 = time.process_time()
res = search_acceptance(sc, [100.0, 150.0, 200.0], range(1, 17), simulate=closed_form{extra})
cpu = time.process_time() - t0
print(json.dumps({{"cpu": cpu, "validations": calls[0]}}))
"""


def _recorded() -> dict:
    return json.loads((Path(__file__).parent / "recorded.json").read_text())


def search_rows(rounds: int, workdir: Path) -> list[tuple[str, str, str, str]]:
    """Rows (measure, value, goal, verdict) of both searches."""
    rows: list[tuple[str, str, str, str]] = []
    mc_code = _MC_SNIPPET.format(seed=str(SEED))
    cf_new = _CF_NEW + _CF_BODY.format(seed=str(SEED), extra=", uncertainty=False")
    cf_full = _CF_NEW + _CF_BODY.format(seed=str(SEED), extra="")
    today = old_tree(TODAY, workdir)
    pre = old_tree(PRE_LAYOUT, workdir)
    # each older commit searches its own seed scenario (same targets and k range)
    mc_old = _MC_SNIPPET.format(seed=str(today / SEED.relative_to(REPO))) if today else ""
    old_seed = str(pre / SEED.relative_to(REPO)) if pre else ""
    cf_old = _CF_OLD + _CF_BODY.format(seed=old_seed, extra="") if pre else ""
    new_mc, old_mc, new_cf, full_cf, old_cf = [], [], [], [], []
    for r in range(rounds):
        order = [0, 1] if r % 2 == 0 else [1, 0]
        for which in order:
            if which == 0:
                new_mc.append(run_snippet(mc_code, REPO))
                new_cf.append(run_snippet(cf_new, REPO))
                full_cf.append(run_snippet(cf_full, REPO))
            else:
                if today is not None:
                    old_mc.append(run_snippet(mc_old, today))
                if pre is not None:
                    old_cf.append(run_snippet(cf_old, pre))
    recorded = _recorded()
    # Monte Carlo search
    t_new = Timing(tuple(d["cpu"] for d in new_mc))
    evaluations = new_mc[0]["evaluations"]
    rows.append(
        ("seed search: Monte Carlo evaluations", f"{evaluations}", "<= 30", _ok(evaluations <= 30))
    )
    bisection = run_snippet(_BISECTION_SNIPPET.format(seed=str(SEED)), REPO)
    diff = _max_alpha_difference(new_mc[0]["rows"], bisection["rows"])
    rows.append(
        ("  evaluations of today's Monte Carlo bisection", f"{bisection['evaluations']}", "", "")
    )
    rows.append(
        (
            "  largest |first or mean rate - bisection's| (tolerance 5e-4)",
            f"{diff:.1e}",
            "<= 5e-4",
            _ok(diff <= 5e-4),
        )
    )
    t_old = None
    if old_mc:
        t_old = Timing(tuple(d["cpu"] for d in old_mc))
        source = f"{TODAY}, this run"
        rows.append((f"  evaluations at {TODAY}", f"{old_mc[0]['evaluations']}", "", ""))
    elif recorded["c1b9c69_mc_search_cpu_s"] is not None:
        t_old = Timing((recorded["c1b9c69_mc_search_cpu_s"],))
        source = f"{TODAY}, recorded (no git history here)"
    if t_old is None:
        rows.append(
            (
                f"seed search CPU: now / {TODAY}",
                "n/a",
                "<= 0.25",
                "not measured (no git history, no recorded figure)",
            )
        )
    else:
        ratio = t_new.median / t_old.median
        rows.append(
            (f"seed search CPU: now / {source}", f"{ratio:.3f}", "<= 0.25", _ok(ratio <= 0.25))
        )
        rows.append(
            (
                f"  search CPU at {TODAY}, s (median, min)",
                f"{t_old.median:.3f}",
                "",
                f"min {t_old.min:.3f}",
            )
        )
    rows.append(
        ("  search CPU now, s (median, min)", f"{t_new.median:.3f}", "", f"min {t_new.min:.3f}")
    )
    # closed-form search (issue 9)
    validations = new_cf[0]["validations"]
    rows.append(
        (
            "closed-form seed search (3 targets, k 1..16): validations",
            f"{validations}",
            "<= 20",
            _ok(validations <= 20),
        )
    )
    c_new = Timing(tuple(d["cpu"] for d in new_cf))
    if old_cf:
        c_old = Timing(tuple(d["cpu"] for d in old_cf))
        old_validations = old_cf[0]["validations"]
        source = f"{PRE_LAYOUT}, this run"
    elif recorded["10bd004_closed_form_search_cpu_s"] is not None:
        c_old = Timing((recorded["10bd004_closed_form_search_cpu_s"],))
        old_validations = recorded["10bd004_closed_form_search_validations"]
        source = f"{PRE_LAYOUT}, recorded (no git history here)"
    else:
        c_old = None
    if c_old is None:
        rows.append(
            (
                f"closed-form search speed-up vs {PRE_LAYOUT}",
                "n/a",
                ">= 50x",
                "not measured (no git history, no recorded figure)",
            )
        )
    else:
        speedup = c_old.median / c_new.median
        rows.append((f"  validations at {PRE_LAYOUT}", f"{old_validations}", "", ""))
        rows.append(
            (
                f"closed-form search speed-up vs {source}",
                f"{speedup:.0f}x",
                ">= 50x",
                _ok(speedup >= 50),
            )
        )
    rows.append(
        (
            "  closed-form search CPU now, s (median, min)",
            f"{c_new.median:.4f}",
            "",
            f"min {c_new.min:.4f}",
        )
    )
    c_full = Timing(tuple(d["cpu"] for d in full_cf))
    rows.append(
        (
            "  with the 90% intervals (issue 10): validations",
            f"{full_cf[0]['validations']}",
            "report",
            f"{full_cf[0]['validations'] - validations} of them the intervals'",
        )
    )
    share = 1.0 - c_new.median / c_full.median
    rows.append(
        (
            "  with the 90% intervals: CPU, s (median, min)",
            f"{c_full.median:.4f}",
            "report",
            f"min {c_full.min:.4f}; intervals about {share:.0%} of it",
        )
    )
    if c_old is not None:
        rows.append(
            (
                f"  with the 90% intervals: speed-up vs {PRE_LAYOUT}",
                f"{c_old.median / c_full.median:.0f}x",
                "report",
                "the old path computed no intervals",
            )
        )
    return rows


def _max_alpha_difference(new: list, old: list) -> float:
    """The largest difference of the first-position rate and of the mean rate (rows
    [tok/s, k, first rate, mean rate]) where both searches reach the target; the seed's
    first rate is capped at 1 wherever its target is reachable, so the mean rate is the
    figure that moves. A root one search reaches and the other does not is infinite."""
    diffs = []
    for a, b in zip(new, old, strict=True):
        for x, y in zip(a[2:], b[2:], strict=True):
            if (x is None) != (y is None):
                diffs.append(float("inf"))
            elif x is not None:
                diffs.append(abs(x - y))
    return max(diffs) if diffs else 0.0


def _ok(flag: bool) -> str:
    return "met" if flag else "MISSED"
