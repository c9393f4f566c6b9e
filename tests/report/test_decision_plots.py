"""Figures of the serving decision documents: built from real (small) documents, dispatched
on ``kind``, saved as valid PNGs; colours shared across figures."""

from __future__ import annotations

import io

import pytest

from sim.documents import document
from sim.model.policy import FixedK, KTable
from sim.report.decision_plots import BASE_COLOR, k_color
from sim.report.figures import figures_for
from sim.simulation.serving import Poisson
from sim.simulation.serving.metrics import SloSpec
from sim.studies.serving.best_k import best_k
from sim.studies.serving.capacity import capacity
from sim.studies.serving.controllers import default_phases, replay
from sim.studies.serving.crossover import crossover, load_grid
from sim.studies.serving.evaluator import PointEvaluator
from tests.simulation.serving.helpers import plan
from tests.studies.serving.helpers import CodePlans
from tests.studies.serving.test_controllers_replay import MIX

PNG = b"\x89PNG\r\n\x1a\n"


def rendered(doc) -> dict[str, bytes]:
    out = {}
    for stem, fig in figures_for(doc):
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        out[stem] = buf.getvalue()
    return out


@pytest.fixture(scope="module")
def evaluator() -> PointEvaluator:
    builder = CodePlans(output=12, requests=6)
    return PointEvaluator(builder, replications=2, seed=1, slo=SloSpec(tpot_ms=12.0))


def test_crossover_and_best_k_figures(evaluator):
    doc = crossover(evaluator, load_grid("concurrency", [1, 4]), [3], refine=False)
    pngs = rendered(document("crossover", doc.to_dict()))
    assert set(pngs) == {"crossover-throughput", "crossover-gain", "latency-cdf"}
    assert all(v.startswith(PNG) and len(v) > 10_000 for v in pngs.values())
    doc = best_k(evaluator, [1, 4], [3], refine=False)
    assert set(rendered(document("best_k", doc.to_dict()))) == {"best-k-map", "best-k-check"}


def test_capacity_and_controllers_figures(evaluator):
    doc = capacity(evaluator, [3], hint_per_s=5.0, rtol=0.3)
    assert set(rendered(document("capacity", doc.to_dict()))) == {"slo-attainment"}
    p = plan(Poisson(1.0), acceptance=MIX, k=7, output=12, requests=6)
    phases = default_phases(p, one_user_req_s=1.0, requests=4)
    pols = {"table": KTable(((1, 64, 2),)), "k = 3": FixedK(3)}
    doc = replay(p, phases, pols, reference="table", replications=2, seed=1)
    assert set(rendered(document("controllers", doc.to_dict()))) == {"controllers-phases"}


def test_one_colour_per_k_everywhere():
    assert k_color(0) == BASE_COLOR
    assert len({k_color(k) for k in range(1, 9)}) == 8
    assert k_color(3) == k_color(3)


def _tick_texts(fig) -> list[str]:
    """Every drawn x tick label of ``fig``'s axes (after a draw)."""
    fig.canvas.draw()
    return [
        t.get_text()
        for ax in fig.axes
        for t in ax.xaxis.get_majorticklabels() + ax.xaxis.get_minorticklabels()
        if t.get_visible() and t.get_text()
    ]


def test_a_rate_axis_labels_its_ticks_as_numbers_not_tex(evaluator):
    """Figures draw text as written (plain_text), so a log axis's default TeX labels
    ('$\\mathdefault{2\\times10^{-1}}$') came out raw; they are plain numbers."""
    doc = capacity(evaluator, [3], hint_per_s=5.0, rtol=0.3)
    ((_, fig),) = figures_for(document("capacity", doc.to_dict()))
    texts = _tick_texts(fig)
    assert texts and not [t for t in texts if "$" in t or "mathdefault" in t]
    assert all(float(t.replace("\u2212", "-")) > 0 for t in texts)
