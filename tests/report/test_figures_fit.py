"""Every figure kind, rendered: no text leaves the canvas, and the slide-reading rules
(lattice histograms, the operating point on search charts, one colour scale per sweep)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from sim.cli import main
from sim.report.figures import BUILDERS, figures_for
from sim.report.plots import request_distribution

ROOT = Path(__file__).resolve().parents[2]
SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")
SERVING = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
SMALL = ["--replications", "2", "--requests", "6"]


def _json(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("sweep")
    grid = ["--grid", "acceptance.alpha=0.6,0.8", "--grid", "speculation.num_steps=1,2",
            "--grid", "hardware.interconnect=pcie-gen4,nvlink4"]  # fmt: skip
    return {
        "run": _json("run", SEED, "--quiet", *SMALL),
        "search": _json("search", SEED, "--num-steps", "2:3", *SMALL),
        "solve": _json("search", SEED, "--solve", "timing.verify_ms", "--target", "100", *SMALL),
        "compare": _json("compare", SEED, SEED, *SMALL),
        "sweep": _json("sweep", SEED, *grid, "--out", str(out), "--quiet", *SMALL),
        "serve": _json(
            "serve",
            SERVING,
            "--concurrency",
            "2",
            "--requests",
            "6",
            "--replications",
            "1",
            "--quiet",
        ),
        "tree-load": _json(
            "tree-load",
            LLAMA,
            "--concurrency",
            "1,4",
            "--tree",
            "5/4/8",
            "--set",
            "workload.output_tokens=32",
            "--quiet",
            *SMALL,
        ),
        **decision_documents(),
    }


MIX = 'acceptance.mix=[{name="chat",weight=0.7,alpha=0.6},{name="code",weight=0.3,alpha=0.9}]'


def decision_documents() -> dict[str, dict]:
    """The serving decision documents (sim/report/decision_plots.py), small."""
    tiny = [*SMALL, "--quiet", "--set", "workload.output_tokens=32"]
    loads = ["--concurrency", "1,2", "--num-steps", "2"]
    phases = ["--phase", "4,1,chat=0.9,code=0.1", "--phase", "4,2,chat=0.1,code=0.9"]
    return {
        "crossover": _json("crossover", SERVING, *tiny, *loads, "--no-refine"),
        "best_k": _json("best-k", SERVING, *tiny, *loads, "--no-refine"),
        "capacity": _json(
            "capacity", SERVING, *tiny, "--num-steps", "2", "--tpot-slo-ms", "60", "--rtol", "0.3"
        ),
        "controllers": _json(
            "controllers", SERVING, *tiny, "--set", MIX, *phases, "--k-table", "[[1,8,2]]"
        ),
    }


def _outside(fig) -> list[str]:
    """Drawn text (titles, labels, tick labels, legends, notes) reaching past the canvas."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = canvas.get_width_height()
    bad = []
    drawn: list[Text] = [t for t in fig.texts]
    for legend in fig.legends:
        drawn += [*legend.get_texts(), legend.get_title()]
    for ax in fig.axes:
        drawn += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        drawn += [t for t in ax.texts]
        if ax.get_legend():
            drawn += [*ax.get_legend().get_texts(), ax.get_legend().get_title()]
        for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = min(lo, hi), max(lo, hi)
            for tick in axis.get_major_ticks():
                if lo - 1e-9 <= tick.get_loc() <= hi + 1e-9:  # ticks off the view are not drawn
                    drawn += [tick.label1, tick.label2]
    for text in drawn:
        if not text.get_visible() or not text.get_text().strip():
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            bad.append(text.get_text()[:60])
    return bad


def test_every_figure_kind_is_covered(documents) -> None:
    assert set(documents) == set(BUILDERS)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_no_text_leaves_the_canvas(documents, kind: str) -> None:
    figures = figures_for(documents[kind])
    assert figures, kind
    for stem, fig in figures:
        assert _outside(fig) == [], (kind, stem)


def test_a_long_title_is_wrapped_inside_the_canvas() -> None:
    fig = request_distribution(np.linspace(50, 70, 200), title="a very long title " * 12)
    assert _outside(fig) == []


def test_lattice_tok_s_gets_one_bar_per_value() -> None:
    """Requests of 64 tokens in 20-40 cycles of 33.3 ms take 21 values of tok/s."""
    rng = np.random.default_rng(1)
    cycles = rng.integers(20, 41, size=500)
    tok_s = 1000 * 64 / (cycles * 33.3)
    fig = request_distribution(tok_s)
    ax = fig.axes[0]
    assert len(ax.patches) == len(np.unique(cycles))
    assert any("21 distinct tok/s values" in lab for lab in ax.get_legend_handles_labels()[1])


def test_search_chart_marks_the_operating_point(documents) -> None:
    (_stem, fig), *_ = figures_for(documents["search"])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(lab.startswith("now: k = 2") for lab in labels), labels  # the seed's k


def test_heatmaps_of_one_sweep_share_a_colour_scale(documents) -> None:
    maps = [fig for stem, fig in figures_for(documents["sweep"]) if stem.startswith("heatmap")]
    assert len(maps) == 2
    limits = {fig.axes[0].images[0].get_clim() for fig in maps}
    assert len(limits) == 1
