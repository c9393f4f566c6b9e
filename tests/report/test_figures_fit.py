"""Every figure kind, rendered: no text leaves the canvas, and the slide-reading rules
(lattice histograms, the operating point on search charts, one colour scale per sweep)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from sim.cli import main
from sim.report.figures import BUILDERS, figures_for
from sim.report.run_plots import request_distribution

ROOT = Path(__file__).resolve().parents[2]
SEED = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3.toml")
SERVING = str(ROOT / "scenarios" / "kimi-k25-8xpcie-eagle3-serving.toml")
LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")
SMALL = ["--replications", "2", "--requests", "6"]
#: Two draws of the serving intervals (eight by default): the figures draw the same bands
#: and notes from two as from eight, at a quarter of the draws' cost.
DRAWS = ["--draws", "2"]


def _json(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("sweep")
    grid = ["--grid", "acceptance.alpha=0.6,0.8", "--grid", "speculation.num_steps=1,2",
            "--grid", "hardware.interconnect=pcie-gen4,nvlink4",
            "--grid", "timing.verify_cuda_graph=false,true"]  # fmt: skip
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
            *DRAWS,
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
            *DRAWS,
        ),
        **decision_documents(),
    }


MIX = 'acceptance.mix=[{name="chat",weight=0.7,alpha=0.6},{name="code",weight=0.3,alpha=0.9}]'


def decision_documents() -> dict[str, dict]:
    """The serving decision documents (sim/report/decision_plots.py), small."""
    tiny = [*SMALL, *DRAWS, "--quiet", "--set", "workload.output_tokens=32"]
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


def _outside(fig, canvas: FigureCanvasAgg | None = None) -> list[str]:
    """Drawn text (titles, labels, tick labels, legends, notes) reaching past the canvas
    (``canvas``: the figure's, already drawn; None: drawn here)."""
    if canvas is None:
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


@pytest.fixture(scope="module")
def rendered(documents):
    """A kind's figures, each rendered once to a PNG: (stem, figure, its drawn canvas, the
    PNG's bytes), built on first use and shared by the canvas and PNG checks (a drawn
    figure's text boxes are read, not changed)."""
    done: dict[str, list[tuple[str, object, FigureCanvasAgg, bytes]]] = {}

    def of(kind: str) -> list[tuple[str, object, FigureCanvasAgg, bytes]]:
        if kind not in done:
            out = []
            for stem, fig in figures_for(documents[kind]):
                canvas = FigureCanvasAgg(fig)
                png = io.BytesIO()
                canvas.print_png(png)  # draws the canvas at the figure's own size and dpi
                out.append((stem, fig, canvas, png.getvalue()))
            done[kind] = out
        return done[kind]

    return of


def test_every_figure_kind_is_covered(documents) -> None:
    assert set(documents) == set(BUILDERS)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_no_text_leaves_the_canvas(rendered, kind: str) -> None:
    figures = rendered(kind)
    assert figures, kind
    for stem, fig, canvas, _png in figures:
        assert _outside(fig, canvas) == [], (kind, stem)


def test_a_title_past_the_canvas_is_caught() -> None:
    """``_outside`` checks the figure's title (a suptitle is one of ``fig.texts``) and each
    panel's: the canvas check of every kind covers its titles."""
    fig = request_distribution(np.linspace(50, 70, 200))
    fig.set_layout_engine("none")  # the titles stay where they are put
    fig.suptitle("moved right", x=1.2)
    fig.axes[0].set_title("moved up", y=3.0)
    assert {"moved right", "moved up"} <= set(_outside(fig))
    canvas = FigureCanvasAgg(fig)  # and on a canvas drawn by its PNG, as ``rendered`` draws
    canvas.print_png(io.BytesIO())
    assert {"moved right", "moved up"} <= set(_outside(fig, canvas))


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
    assert len(maps) == 4  # one per combination of the two fields not on its axes
    limits = {fig.axes[0].images[0].get_clim() for fig in maps}
    assert len(limits) == 1


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_every_figure_renders_to_a_png(rendered, kind: str) -> None:
    figures = rendered(kind)
    assert figures, kind
    for stem, _fig, _canvas, data in figures:
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), (kind, stem)
        assert len(data) > 5000, (kind, stem)  # a blank canvas of this size is about 3 kB


def _words(fig) -> list[str]:
    texts = [t.get_text() for t in fig.texts]
    for legend in fig.legends:
        texts += [t.get_text() for t in legend.get_texts()]
    for ax in fig.axes:
        texts += [ax.get_title(), *(t.get_text() for t in ax.get_yticklabels())]
        if ax.get_legend():
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    return texts


def test_sweep_figures_are_small_multiples_in_words(documents) -> None:
    """The README's sweep shape (k, alpha and two more fields): the throughput figure is a
    panel per combination of the other fields, one curve per k in each, and no label is
    a Python literal."""
    figures = dict(figures_for(documents["sweep"]))
    panels = [ax for ax in figures["throughput"].axes if ax.get_visible()]
    assert len(panels) == 4
    for ax in panels:
        curves = [ln.get_label() for ln in ax.get_lines() if ln.get_label().startswith("k = ")]
        assert curves == ["k = 1", "k = 2"]
    assert {ax.get_title() for ax in panels} >= {"interconnect nvlink4, verify graphed"}
    for stem, fig in figures.items():
        words = " ".join(_words(fig))
        assert "True" not in words and "False" not in words, stem
