"""The numeric fields of serving documents: how they are found and how plot uses them."""

from __future__ import annotations

import pytest

from sim.errors import SpecsimError
from sim.report.numeric_fields import check_numbers, numeric_fields, numeric_paths


def test_a_field_is_numeric_only_where_no_sample_holds_anything_else():
    numbers, others = numeric_paths({"a": [1, 2.5], "b": {"c": None, "d": 3}, "e": "x"})
    assert numbers == {"a[]", "b.d"}
    assert others == {"b.c", "e"}


def test_every_serving_kind_has_its_numeric_fields():
    fields = numeric_fields()
    for kind in ("serve", "crossover", "best_k", "capacity", "controllers", "tree-load"):
        assert fields[kind], kind
    assert "speculative.ttft_ms.mean" in fields["serve"]


@pytest.mark.parametrize(("value", "got"), [("x", "'x'"), (None, "null"), (True, "True")])
def test_a_numeric_field_holding_something_else_is_named(value, got):
    doc = {"speculative": {"ttft_ms": {"mean": 1.0, "ci95": [1.0, value]}}}
    with pytest.raises(SpecsimError, match=f"expected a number, got {got}") as info:
        check_numbers(doc, "serve", "doc.json")
    assert info.value.field == "speculative.ttft_ms.ci95[1]"


def test_kinds_without_a_list_are_not_checked_here():
    check_numbers({"cycle_ms": {"draft": "x"}}, "run", "doc.json")


@pytest.mark.parametrize("kind", ["serve", "crossover", "best_k", "capacity"])
def test_an_slo_not_set_is_null_and_plotted_but_text_there_is_refused(kind):
    check_numbers({"slo": {"ttft_ms": None, "tpot_ms": None}}, kind, "doc.json")
    with pytest.raises(SpecsimError, match="expected a number, got 'fast'") as info:
        check_numbers({"slo": {"ttft_ms": "fast"}}, kind, "doc.json")
    assert info.value.field == "slo.ttft_ms"


def test_plot_draws_a_serve_document_of_a_scenario_without_an_slo(tmp_path):
    from click.testing import CliRunner

    from sim.cli import main
    from tests.conftest import ROOT

    scenario = ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
    doc = tmp_path / "serve.json"
    runner = CliRunner()
    # the null SLO is what is checked: two replications and no interval draws (the serve
    # figures draw no interval) make the same document kind in a third of the time
    small = ["--requests", "12", "--replications", "2", "--draws", "0"]
    served = runner.invoke(main, ["serve", str(scenario), *small, "--json"])
    assert served.exit_code == 0, served.output
    doc.write_text(served.output)
    plotted = runner.invoke(main, ["plot", str(doc), "--out", str(tmp_path / "figs")])
    assert plotted.exit_code == 0, plotted.output
    assert (tmp_path / "figs" / "serve-latency.png").is_file()
