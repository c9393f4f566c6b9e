"""Which document kinds have figures, said before a run: `search --topk --plot DIR` ran the
tree search and wrote nothing without a word, and `specsim plot` named five kinds where
eleven have figures."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sim.cli import main
from sim.documents import KINDS, PLOTTED
from sim.report.figures import BUILDERS
from tests.conftest import SEED


def test_the_plotted_kinds_are_the_figure_builders() -> None:
    assert set(PLOTTED) == set(BUILDERS) and set(PLOTTED) <= set(KINDS)


def test_a_tree_search_with_plot_is_refused_before_it_runs(tmp_path: Path) -> None:
    args = [
        "search", str(SEED), "--set", "acceptance.rank_profile=sequoia-jf68m-llama2-7b",
        "--topk", "2", "--num-steps", "2", "--draft-tokens", "4", "--target", "100",
        "--replications", "2", "--requests", "5", "--plot", str(tmp_path / "p"),
    ]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and res.output.startswith("specsim: error: --plot: a tree-search")
    assert res.output.count("\n") == 1 and not (tmp_path / "p").exists()


def test_plot_names_every_kind_it_draws(tmp_path: Path) -> None:
    (tmp_path / "h.json").write_text(json.dumps({"kind": "hardware"}))
    res = CliRunner().invoke(main, ["plot", str(tmp_path / "h.json")])
    assert res.exit_code == 2
    for kind in PLOTTED:
        assert kind in res.output
