"""Every command's default text is a first screen: at most 25 lines of at most 100
characters on every shipped scenario (the answer, what it rests on and how far it can move;
the details are under --verbose and in --json).

The batch-1 commands run here at their defaults (``run`` with a smaller sample: the screen's
lines do not depend on its size); the serving studies, minutes each at their defaults, are
marked slow (``make test-slow``) and run at their default grids with fewer replications.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from sim.report.screen import WIDTH, fits
from tests.conftest import ROOT, SEED
from tests.helpers import replay_once

#: Lines of a first screen.
LINES = 25

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))
SERVING = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml"
MIX = ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-mix.toml"
QUICK = ROOT / "tests" / "data" / "quickstart"
SMALL = ("--replications", "2", "--requests", "20", "-q")


def screen(*args: str | Path, cwd: Path | None = None) -> str:
    """The default text of ``specsim ARGS``, checked to fit the screen."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    rows = result.output.splitlines()
    widest = max(rows, key=len, default="")
    assert fits(result.output, lines=LINES, width=WIDTH), (len(rows), len(widest), result.output)
    return result.output


#: The shipped scenarios but the mix, whose 90% intervals re-build its rates in every draw
#: (its run, hardware and levers took 245 s in the suite at load 12-16: the slow set).
BATCH_1 = [p for p in SCENARIOS if p != MIX]


@pytest.mark.parametrize("scenario", BATCH_1, ids=lambda p: p.stem)
def test_run_and_hardware_fit_a_screen_on_every_shipped_scenario(scenario: Path) -> None:
    screen("run", scenario, *SMALL)
    screen("hardware", scenario)
    screen("compare", "--levers", scenario)


@pytest.mark.parametrize(
    "args",
    [
        ("search", SEED),
        ("search", SEED, "--num-steps", "8:14", "--target", "150"),
        ("search", SEED, "--solve", "timing.verify_ms"),
        ("search", SEED, "--set", "acceptance.rank_profile=sequoia-jf68m-llama2-7b", "--topk",
         "1,2,4", "--num-steps", "3:5"),
        ("run", SEED, "--method", "exact"),
        ("compare", *BATCH_1),
        ("convert", "--cumulative", "0.7296,0.5208,0.3545"),
        ("allreduce", "--interconnect", "pcie-gen4", "--gpus", "8", "--bytes", "43008"),
        ("calibrate", "--vllm-bench", QUICK / "bench_eagle3.json"),
    ],
    ids=lambda a: " ".join(str(x) for x in a[:1] + a[2:4]),
)  # fmt: skip
def test_batch_1_commands_fit_a_screen(args: tuple[str | Path, ...]) -> None:
    screen(*args)


#: A description like the one ``init`` writes (model, GPUs, engine, drafter, calibration):
#: with the seed's name the title takes three lines, four with the longer one.
LONG_TITLES = [
    "moonshotai/Kimi-K2.5 on 8x RTX-PRO-6000, sglang 0.5, eagle3 k=2 (specsim init), "
    "calibrated to 2 sources, " + " ".join(["xxxxxxxxx"] * n)
    for n in (6, 16)
]


@pytest.mark.parametrize("description", LONG_TITLES, ids=("3-line title", "4-line title"))
def test_run_with_two_targets_fits_a_screen_and_verbose_names_them(
    tmp_path: Path, description: str
) -> None:
    """Two --target's and a long title: the targets are the answer's own lines (the
    overrides line names them under --verbose only), and a screen over 25 lines loses its
    blank lines first."""
    text = SEED.read_text()
    start = text.index("\ndescription = ")
    end = text.index("\n", start + 1)
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'{text[:start]}\ndescription = "{description}"{text[end:]}')
    args = ("run", scenario, "--target", "150", "--target", "200", *SMALL)
    out = screen(*args)
    assert "overrides:" not in out and "150 tok/s:" in out and "200 tok/s:" in out
    verbose = CliRunner().invoke(main, [str(a) for a in (*args, "--verbose")])
    assert "overrides: targets.tok_s = [150, 200] (--target)" in verbose.output


def test_validate_fits_a_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the paths as a user types them, from the repository
    screen("validate", *(p.relative_to(ROOT) for p in SCENARIOS))


def test_calibrate_and_init_fit_a_screen_and_verbose_has_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fit's first screen: each kept value's reason in its first clause, the residuals
    in one line, the notes by their leads; --verbose has every row, reason and note (init
    fitted once for both renderings)."""
    import sim.calibration.run as calibration_run

    monkeypatch.setattr(calibration_run, "run_init", replay_once(calibration_run.run_init))
    out = tmp_path / "s.toml"
    calibrate = (
        "calibrate", "--scenario", SEED, "--baseline-tok-s", "82.5", "--point", "2:2.0:60",
        "--out", out,
    )  # fmt: skip
    text = screen(*calibrate)
    assert "residuals (model - measured) on 3 figures" in text
    init = (
        "init", "--config", QUICK / "config.json", "--gpu", "H100", "--gpus", "4", "--engine",
        "vllm", "--drafter", "eagle3", "--num-steps", "3", "--vllm-bench",
        QUICK / "bench_baseline.json", "--vllm-bench", QUICK / "bench_eagle3.json", "--out", out,
    )  # fmt: skip
    text = screen(*init)
    assert "bench_baseline.json]" in text and str(QUICK) not in text
    verbose = CliRunner().invoke(main, [str(a) for a in init] + ["--verbose"]).output
    assert str(QUICK / "bench_eagle3.json") in verbose
    assert "its middle, as a normal with that 90% interval" in verbose


@pytest.mark.slow  # the serving studies at their default grids: minutes each
@pytest.mark.parametrize(
    "args",
    [
        ("run", MIX, *SMALL),
        ("hardware", MIX),
        ("compare", "--levers", MIX),
        ("serve", SERVING, *SMALL),
        ("crossover", SERVING, *SMALL),
        ("best-k", SERVING, *SMALL),
        ("capacity", SERVING, *SMALL),
        ("tree-load", SERVING, *SMALL),
        ("controllers", MIX, *SMALL),
    ],
    ids=lambda a: str(a[0]),
)
def test_the_serving_studies_fit_a_screen(args: tuple[str | Path, ...]) -> None:
    screen(*args)
