"""``make bench``: wall time of the heavy serving studies at their defaults, as ratios.

Each of ``crossover``, ``best-k`` and ``capacity`` runs as a whole process
(``specsim CMD SCENARIO --json -q``) on the shipped serving scenario, once at its default
workers (every processor this process may use) and once with ``--workers 1``, alternating;
printed: each wall time, the ratio default / one worker, and the study's wall time in units
of one ``specsim serve`` of the same scenario measured in the same run (the honest peer: a
study that costs N serves is N serves of simulation). Both runs' JSON must be identical
(same seed, any worker count). The issue's goal, each study under 15 s of wall time on 2
idle cores, is read off these rows on an idle machine; on a shared one only the ratios
hold. Last, ``specsim run`` on the shipped chain-mix scenario (its uncertainty study
integrates every draw of the mix: the issue's goal is under 6 s), in units of the same
serve. Not part of the test suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
MIX = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
#: ``tree-load`` and ``controllers`` refuse this scenario at their defaults (a chain without
#: acceptance.rank_profile, and without an [[acceptance.mix]] for controllers' phases): not
#: benched here until a shipped scenario runs them.
STUDIES = ("crossover", "best-k", "capacity")
SPECSIM = [sys.executable, "-m", "sim"]


def wall(args: list[str]) -> tuple[float, str]:
    """Wall seconds and standard output of one ``specsim`` process (the environment's
    ``SPECSIM_WORKERS`` removed so the default is the processors' count)."""
    env = {k: v for k, v in os.environ.items() if k != "SPECSIM_WORKERS"}
    t0 = time.perf_counter()
    out = subprocess.run(
        [*SPECSIM, *args], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    )
    return time.perf_counter() - t0, out.stdout


def main() -> None:
    serve_s, _ = wall(["serve", str(SCENARIO), "--json", "-q"])
    print(
        f"heavy studies at their defaults on {SCENARIO.name} (whole processes; one serve: "
        f"{serve_s:.1f} s wall):"
    )
    for study in STUDIES:
        args = [study, str(SCENARIO), "--json", "-q"]
        auto_s, auto_out = wall(args)
        one_s, one_out = wall([*args, "--workers", "1"])
        same = "identical" if auto_out == one_out else "OUTPUT DIFFERS"
        print(
            f"  {study:>11}: {auto_s:6.1f} s default workers, {one_s:6.1f} s one worker, "
            f"ratio {auto_s / one_s:.2f}; {auto_s / serve_s:.1f} serves; JSON {same}"
        )
    mix_s, _ = wall(["run", str(MIX), "--json"])
    print(f"  {'run (mix)':>11}: {mix_s:6.1f} s, {mix_s / serve_s:.1f} serves")


if __name__ == "__main__":
    main()
