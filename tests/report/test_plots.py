"""Figures: valid PNG/SVG files of sensible size, from builders and from the CLI."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.figure import Figure

from sim.cli import main
from sim.cli.plot import save_figures
from sim.report import figures
from sim.report.run_plots import request_distribution
from sim.report.search_plots import required_alpha_vs_target
from sim.report.sweep_plots import heatmap
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.studies.bisection import closed_form_stats
from sim.studies.search import search_acceptance
from sim.studies.sweep import run_sweep

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk; asserts the PNG signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def assert_good_png(path: Path) -> None:
    width, height = png_size(path)
    assert 600 <= width <= 3000 and 250 <= height <= 2500, (path, width, height)
    assert 10_000 < path.stat().st_size < 2_000_000, path


@pytest.fixture(scope="module")
def sweep_doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = Path(__file__).resolve().parents[2]
    seed = load_scenario(root / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")
    small = with_overrides(
        seed,
        {"simulation.replications": 2, "workload.requests": 8, "workload.output_tokens": 64},
    )
    out = tmp_path_factory.mktemp("sweep")
    run_sweep(
        small,
        [
            ("acceptance.alpha", (0.6, 0.8, 0.95)),
            ("speculation.num_steps", (1, 2, 4)),
            ("hardware.interconnect", ("pcie-gen4", "nvlink4")),
        ],
        out,
    )
    return json.loads((out / "sweep.json").read_text())


def test_every_builder_returns_a_titled_labelled_figure(sweep_doc: dict) -> None:
    figs = [
        *figures.sweep_figures(sweep_doc),
        ("dist", request_distribution(np.linspace(50, 90, 200), targets=[60, 80])),
    ]
    names = [n for n, _ in figs]
    assert "throughput" in names and "cycle-breakdown" in names
    assert any(n.startswith("heatmap") for n in names)
    for name, fig in figs:
        assert isinstance(fig, Figure)
        ax = fig.axes[0]
        assert fig.get_suptitle() or ax.get_title(), name
        assert ax.get_xlabel() and ax.get_ylabel(), name
        legends = [a.get_legend() for a in fig.axes] + list(fig.legends)
        assert any(lg is not None for lg in legends) or name.startswith("heatmap"), name


def test_saved_pngs_are_valid_and_sensible(sweep_doc: dict, tmp_path: Path) -> None:
    paths = save_figures(figures.sweep_figures(sweep_doc), tmp_path, "png")
    assert len(paths) >= 3
    for p in paths:
        assert_good_png(p)
    assert sorted(q.name for q in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_heatmap_draws_target_contours() -> None:
    rows = [
        {"a": a, "b": b, "tok_s_mean": 100 * a + 10 * b} for a in (0.5, 0.7, 0.9) for b in (1, 2, 3)
    ]
    fig = heatmap(rows, x="a", y="b", targets=[80.0])
    assert fig.axes[0].collections, "no contour drawn"
    fig_none = heatmap(rows, x="a", y="b", targets=[1000.0])
    assert "outside the range" in fig_none.get_suptitle()


def test_required_alpha_plot_from_search(tmp_path: Path, seed_path: Path) -> None:
    doc = search_acceptance(
        load_scenario(seed_path), [100, 150], range(2, 7), simulate=closed_form_stats
    ).to_dict()
    (path,) = save_figures(figures.search_figures(doc), tmp_path, "png")
    assert_good_png(path)


def test_cli_plot_on_a_sweep_directory(sweep_doc: dict, tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sweep.json").write_text(json.dumps(sweep_doc))
    result = CliRunner().invoke(main, ["plot", str(tmp_path / "s"), "--format", "svg"])
    assert result.exit_code == 0, result.output
    written = sorted((tmp_path / "s" / "plots").iterdir())
    assert written and all(p.suffix == ".svg" for p in written)
    for path in written:  # SVG on request: each file is a whole SVG document
        text = path.read_text()
        assert "<svg" in text[:2000] and text.rstrip().endswith("</svg>"), path


def test_cli_plot_rejects_what_it_cannot_plot(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}')
    result = CliRunner().invoke(main, ["plot", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "not a specsim document" in result.output
    (tmp_path / "h.json").write_text('{"kind": "hardware"}')
    result = CliRunner().invoke(main, ["plot", str(tmp_path / "h.json")])
    assert result.exit_code == 2 and "has no figures" in result.output
    result = CliRunner().invoke(main, ["plot", str(tmp_path / "missing.json")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_cli_run_plot_writes_distribution_and_cycle_breakdown(
    seed_path: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        main,
        ["run", str(seed_path), "--replications", "2", "--requests", "20", "--quiet",
         "--plot", str(tmp_path / "fig")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in ("distribution.png", "cycle-breakdown.png"):
        assert_good_png(tmp_path / "fig" / name)


def test_required_alpha_axes_show_every_answer(seed_path: Path) -> None:
    doc = search_acceptance(
        load_scenario(seed_path), [100, 150, 200], range(1, 17), simulate=closed_form_stats
    ).to_dict()
    fig = required_alpha_vs_target(doc)
    lo, hi = fig.axes[0].get_ylim()
    answers = [t["alpha"] for t in doc["targets"] if t["reachable"]]
    assert lo <= min(answers) and max(answers) <= hi
    labels = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    for t in doc["targets"]:  # each target's best k has a curve
        assert f"k = {t['best_num_steps']}" in labels


@pytest.mark.parametrize("kind", ["compare", "solve", "run"])
def test_cli_plot_on_every_json_document(kind: str, seed_path: Path, tmp_path: Path) -> None:
    small = ["--replications", "2", "--requests", "5"]
    args = {
        "compare": ["compare", str(seed_path), str(seed_path), *small],
        "solve": ["search", str(seed_path), "--solve", "timing.verify_ms", "--target", "100",
                  *small],
        "run": ["run", str(seed_path), "--quiet", *small],
    }[kind]  # fmt: skip
    made = CliRunner().invoke(main, [*args, "--json"])
    assert made.exit_code == 0, made.output
    (tmp_path / "doc.json").write_text(made.output)
    result = CliRunner().invoke(main, ["plot", str(tmp_path / "doc.json")])
    assert result.exit_code == 0, result.output
    pngs = sorted((tmp_path / "plots").glob("*.png"))
    assert pngs
    for p in pngs:
        assert_good_png(p)


def _bar_heights(fig: Figure) -> np.ndarray:
    return np.array([p.get_height() for p in fig.axes[0].patches])


def test_weighted_distribution_is_the_repeated_sample() -> None:
    """Values with counts (a streamed run's histogram) draw the same bars, mean and shares
    as the values repeated that many times."""
    values, counts = np.array([50.0, 55.0, 60.0, 70.0]), np.array([3, 1, 4, 2])
    weighted = request_distribution(values, weights=counts, targets=[58.0])
    repeated = request_distribution(np.repeat(values, counts), targets=[58.0])
    assert np.array_equal(_bar_heights(weighted), _bar_heights(repeated))
    texts = [[t.get_text() for t in f.axes[0].texts] for f in (weighted, repeated)]
    assert texts[0] == texts[1] and "60% reach it" in texts[0][0]
    labels = [[t.get_text() for t in f.legends[0].get_texts()] for f in (weighted, repeated)]
    assert labels[0] == labels[1] and "mean 58.5 tok/s" in labels[0]


@pytest.mark.parametrize("how", ["exact", "streamed"])
def test_cli_run_plot_draws_the_distribution_of_exact_and_streamed_runs(
    how: str, seed_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exact run has the law, a streamed run its log histogram, and no per-request
    array: the distribution figure was left out without a word."""
    args = ["run", str(seed_path), "--quiet", "--plot", str(tmp_path / "fig")]
    if how == "exact":
        args += ["--method", "exact"]
    else:
        monkeypatch.setattr("sim.simulation.simulate.STREAM_ABOVE", 10)
        args += ["--replications", "2", "--requests", "20"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    if how == "streamed":
        assert "streamed" in result.output  # the run was streamed
    for name in ("distribution.png", "cycle-breakdown.png"):
        assert_good_png(tmp_path / "fig" / name)


def test_a_root_outside_its_checks_interval_is_drawn_as_it_is(seed_path: Path) -> None:
    """An exact root may sit just outside the 95% interval of its one Monte Carlo check
    (a quantile target); the figure draws the interval and the point as they are."""
    doc = search_acceptance(
        load_scenario(seed_path), [150], range(6, 9), simulate=closed_form_stats
    ).to_dict()
    row = next(r for r in doc["targets"][0]["per_num_steps"] if r["reachable"])
    row["alpha_ci95"] = [row["alpha"] - 0.002, row["alpha"] - 0.0001]  # as `search` gave it
    fig = required_alpha_vs_target(doc)
    spans = [seg for c in fig.axes[0].collections for seg in c.get_segments()]
    assert any(seg[0][1] == row["alpha_ci95"][0] and seg[1][1] == row["alpha_ci95"][1]
               for seg in spans)  # fmt: skip
