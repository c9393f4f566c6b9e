"""``specsim compare``: side by side with ratios to the first scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.cli import main
from sim.report.compare import render_comparison
from sim.report.screen import fits
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.compare import compare_scenarios, unique_labels
from tests.conftest import seed_text_without_uncertainty
from tests.helpers import replay_once

SMALL = {"simulation.replications": 3, "workload.requests": 10, "workload.output_tokens": 128}


def test_ratios_to_the_first(seed_path: Path) -> None:
    base = with_overrides(load_scenario(seed_path), SMALL)
    graphed = with_overrides(base, {"timing.verify_ms": 15.0})
    doc = compare_scenarios([("ungraphed", bind(base)), ("graphed", bind(graphed))]).to_dict()
    a, b = doc["scenarios"]
    assert all(v == pytest.approx(1.0) for v in a["ratios"].values())
    assert b["ratios"]["tok_s_mean"] == pytest.approx(b["tok_s_mean"] / a["tok_s_mean"])
    assert b["ratios"]["tok_s_mean"] > 1.5  # half the verify pass: much faster
    assert b["ratios"]["baseline_tok_s"] == pytest.approx(1.0)
    assert b["cycle_ms"]["verify"] == pytest.approx(15.0)
    # the faster scenario needs a lower alpha for 150 tok/s at its best k
    assert b["targets"][0]["alpha_at_best"] < a["targets"][0]["alpha_at_best"]
    assert doc["targets"] == [150.0, 200.0]


def test_unique_labels() -> None:
    assert unique_labels(["a/x.toml", "b/x.toml", "y.toml"]) == ["x#1", "x#2", "y"]


def test_cli_compare_text_json_and_plot(
    seed_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sim.studies.compare as study

    # the text and plot, --verbose and --json: one comparison (each command binds anew)
    monkeypatch.setattr(study, "compare_scenarios", replay_once(study.compare_scenarios, (0,)))
    other = tmp_path / "nvlink.toml"
    other.write_text(
        seed_text_without_uncertainty().replace("verify_ms = 30.0", "verify_ms = 20.0")
    )
    args = ["compare", str(seed_path), str(other), "--replications", "2", "--requests", "5"]
    text = CliRunner().invoke(main, [*args, "--plot", str(tmp_path / "fig")])
    assert text.exit_code == 0, text.output
    assert "kimi-k25-8xpcie-eagle3" in text.output and "nvlink" in text.output
    assert "(x1." in text.output and "ratio to kimi-k25-8xpcie-eagle3" in text.output
    assert (tmp_path / "fig" / "compare-throughput.png").exists()
    # the first screen: the answer, what it rests on, how far it moves; the table verbose
    screen = "\n".join(ln for ln in text.output.splitlines() if not ln.startswith("wrote "))
    assert fits(screen, lines=25), screen
    for needed in ("90% ", "rests on:", "speedup", "first-position rate needed", "150 tok/s"):
        assert needed in text.output
    verbose = CliRunner().invoke(main, [*args, "--verbose"])
    assert "Monte Carlo 95% CI" in verbose.output and "Monte Carlo 95% CI" not in text.output
    doc = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert [c["label"] for c in doc["scenarios"]] == ["kimi-k25-8xpcie-eagle3", "nvlink"]


def test_cli_compare_bad_file_exits_2(seed_path: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["compare", str(seed_path), str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_a_later_scenarios_own_targets_are_named_when_not_shown(seed_path: Path) -> None:
    # every column answers the first scenario's targets; the second's own 400 tok/s used to
    # vanish without a word
    base = with_overrides(load_scenario(seed_path), SMALL)
    other = with_overrides(base, {"targets.tok_s": [150.0, 400.0]})
    doc = compare_scenarios([("seed", bind(base)), ("other", bind(other))]).to_dict()
    assert doc["targets"] == [150.0, 200.0]
    assert doc["targets_not_shown"] == [{"scenario": "other", "tok_s": [400.0]}]
    chosen = compare_scenarios(
        [("seed", bind(base)), ("other", bind(other))], targets=[100.0]
    ).to_dict()
    assert chosen["targets_not_shown"] == []  # --target chose them for every column
    assert "other's own 400 tok/s are not shown: give them with --target" in render_comparison(doc)


def test_a_closed_form_outside_its_interval_names_the_inputs_that_put_it_there(
    seed_path: Path,
) -> None:
    """The H200 scenario states launch_us and bandwidth_efficiency at the edge of their
    ranges, so its closed form sits above its own 90% interval: compare says why, as run
    does; the seed, inside its interval, gets no such line and no key."""
    h200 = seed_path.with_name("kimi-k25-8xh200-nvlink-eagle3.toml")
    entries = [(p.stem, bind(with_overrides(load_scenario(p), SMALL))) for p in (seed_path, h200)]
    doc = compare_scenarios(entries).to_dict()
    seed_col, h200_col = doc["scenarios"]
    assert "off_centre" not in seed_col
    lo, hi = h200_col["tok_s_interval90"]
    assert not lo <= h200_col["analytic_tok_s"] <= hi
    fields = {o["field"] for o in h200_col["off_centre"]}
    assert "hardware.bandwidth_efficiency" in fields
    text = render_comparison(doc)
    assert "kimi-k25-8xh200-nvlink-eagle3: closed form" in text
    assert "lies outside its 90% interval" in text
    assert text.count("lies outside") == 1
