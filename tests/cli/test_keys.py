"""``specsim keys``: every key whose name carries a unit (units are in the names) prints
it, so the list says what a number is measured in."""

from __future__ import annotations

from click.testing import CliRunner

from sim.cli import main
from sim.scenario.keys import scenario_keys

UNITS = {k.key: k.unit for k in scenario_keys()}


def test_every_key_named_with_a_unit_has_it():
    named = [
        k
        for k in UNITS
        if k.rsplit(".", 1)[-1].endswith(("_tokens", "_per_token", "_per_s", "_ms", "_us"))
        or k.rsplit(".", 1)[-1] in ("ms", "tokens", "batch", "token_budget")
        or k.endswith("_us_per_request")
    ]
    assert [k for k in named if not UNITS[k]] == []


def test_the_serving_and_model_units():
    assert UNITS["serving.rate_per_s"] == "requests/s"
    assert UNITS["serving.concurrency"] == "users"
    assert UNITS["serving.host_us_per_request"] == "us per running request"
    assert UNITS["serving.kv_capacity_tokens"] == UNITS["workload.input_tokens"] == "tokens"
    assert UNITS["model.kv_bytes_per_token"] == "bytes per token"
    assert UNITS["timing.draft_extend_ms_per_token"] == "ms per token"
    assert UNITS["timing.points[].ms"] == UNITS["timing.decode_ms"] == "ms"
    assert UNITS["timing.points[].batch"] == "requests"


def test_keys_prints_the_unit():
    out = CliRunner().invoke(main, ["keys", "serving"]).output
    (line,) = [ln for ln in out.splitlines() if ln.startswith("serving.rate_per_s ")]
    assert "float [requests/s];" in line


def test_a_bound_of_one_entry_is_singular():
    out = CliRunner().invoke(main, ["keys", "--all"]).output
    assert "(at least 1 entry" in out and "(at least 1 character)" in out
    assert "1 entries" not in out and "1 characters" not in out
    assert "at least 1 entry, at most 64 entries" in out


def test_the_first_screen_lists_the_sections_with_their_counts():
    out = CliRunner().invoke(main, ["keys"]).output
    lines = out.splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 100
    assert lines[0] == f"A scenario file has 12 sections and {len(UNITS)} keys:"
    serving = sum(1 for k in UNITS if k.startswith("serving."))
    assert any(ln.split()[:2] == ["serving", str(serving)] for ln in lines)


def test_a_section_or_a_dotted_prefix_lists_only_its_keys():
    out = CliRunner().invoke(main, ["keys", "serving.kv", "top"]).output
    assert [ln.split()[0] for ln in out.splitlines()] == [
        "serving.kv_capacity_tokens",
        "serving.kv_reserve_gib",
        "serving.kv_block_tokens",
        "name",
        "description",
    ]


def test_where_values_came_from_is_not_a_key():
    assert "origins" not in UNITS  # Scenario.origins: state of a loaded scenario, not a key
    assert "origins" not in CliRunner().invoke(main, ["keys", "--all"]).output


def test_an_unknown_section_is_one_line_and_status_2():
    result = CliRunner().invoke(main, ["keys", "servng"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "'servng'" in result.output
    assert "sections: top, model, server" in result.output
