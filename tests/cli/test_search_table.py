"""search's per-k table keeps its columns whatever its intervals hold."""

from __future__ import annotations

from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

LLAMA = str(ROOT / "scenarios" / "llama31-8b-1xh100-eagle3.toml")


def test_search_table_keeps_its_ceiling_column_past_an_unreachable_interval() -> None:
    """search's per-k table: '[unreachable, unreachable]' is wider than the interval
    column; the column widens (header too) so every ceiling ends in one column."""
    args = ["search", LLAMA, "--num-steps", "3:5", "--replications", "2", "--requests", "10"]
    args.append("--verbose")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("     k   first "))
    rows = lines[at + 1 : at + 4]
    assert "[unreachable, unreachable]" in rows[0]
    assert len({len(r) for r in rows}) == 1, rows  # the ceilings, right-aligned, end together
    assert lines[at].index("ceiling tok/s") > rows[0].index("[unreachable, unreachable]") + 26
