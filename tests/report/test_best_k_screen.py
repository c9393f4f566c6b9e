"""The first screen of ``specsim best-k``: the selection, the engine forms and what the
check at another seed found in a sentence; the check's table under ``--verbose``, where a
load at which the table runs that k itself is marked as the same policy, not as a win."""

from __future__ import annotations

from typing import Any

from sim.report.best_k import render_best_k, render_best_k_screen
from sim.report.screen import fits
from tests.report.study_settings import SETTINGS

KS = [0, 1, 2]
TABLE = [[1, 3, 0], [4, 64, 2]]


def _ratio(mean: float, lo: float, hi: float) -> dict[str, Any]:
    return {"mean": mean, "ci95": [lo, hi]}


def _point(users: int, adv: dict[int, tuple[float, float, float]]) -> dict[str, Any]:
    return {
        "users": users,
        "objective": _ratio(50.0, 49.0, 51.0),
        "advantage_over": {str(k): _ratio(*v) for k, v in adv.items()},
        "significantly_worse_than": [k for k, v in adv.items() if v[2] < 0],
        "significantly_better_than": [k for k, v in adv.items() if v[1] > 0],
    }


def _doc() -> dict[str, Any]:
    points = [
        _point(1, {0: (0.0, 0.0, 0.0), 1: (30.0, 29.0, 31.0), 2: (20.0, 19.0, 21.0)}),
        _point(3, {0: (-0.2, -0.3, -0.1), 1: (10.0, 9.0, 11.0), 2: (3.0, 2.0, 4.0)}),
        _point(8, {0: (8.0, 7.0, 9.0), 1: (1.5, 1.4, 1.6), 2: (0.000145, 0.000136, 0.000154)}),
    ]
    selection = [
        {
            "users": u,
            "best_num_steps": best,
            "tied": [],
            "tied_within_inputs": [],
            "objective": {str(k): _ratio(v, v, v) for k, v in zip(KS, levels, strict=True)},
        }
        for u, best, levels in ((1, 0, (82.9, 51.8, 60.1)), (8, 2, (37.0, 44.1, 45.6)))
    ]
    note = "no flags express it: this table changes k between batch sizes"
    return {
        "scenario": "s",
        "objective_label": "per-user decode speed",
        "objective_unit": "tok/s",
        "num_steps": KS,
        **SETTINGS,
        "slo": {},
        "selection": selection,
        "vllm_table": TABLE,
        "sglang_threshold": None,
        "sglang_threshold_note": "plain decoding is best at batch size 1 (use the table)",
        "engine_configs": {
            "vllm": {
                "schema": "vLLM SpeculativeConfig",
                "speculative_config": {
                    "num_speculative_tokens": 2,
                    "num_speculative_tokens_per_batch_size": TABLE,
                },
            },
            "sglang": {"schema": "SGLang server arguments", "note": note},
            "trtllm": {"schema": "TensorRT-LLM DecodingBaseConfig", "note": note},
        },
        "check": {
            "seed": 2,
            "users": [1, 3, 8],
            "policies": {
                "table": {
                    "points": points,
                    "beats_every_fixed_k_within_ci": False,
                    "worst_shortfall": {"relative": 0.0035, "num_steps": 0, "users": 3},
                    "significantly_better_at": {},
                    "significantly_worse_at": {"0": [3], "1": [], "2": []},
                    "worse_where_the_table_runs_that_k": {"0": [3]},
                }
            },
        },
        "runs": 12,
        "assumptions": ["lengths: lognormal", "host work: 20 us"],
    }


def test_the_check_is_a_sentence_on_the_first_screen():
    """The check's table wrapped over two or three lines a row; the screen says what it
    found: no fixed k better except where the table runs that k itself."""
    text = render_best_k_screen(_doc())
    assert "vs k=" not in text and fits(text)
    assert (
        "  table: no fixed k significantly better except where it runs that k itself: k=0 at 3 "
        "users"
    ) in text
    assert "  vLLM: --speculative-config '" in text
    assert "  SGLang, TensorRT-LLM: cannot express this table" in text
    assert "no flags express it" in render_best_k(_doc())  # why: --verbose
    lines = text.splitlines()
    assert "; 12 policy runs; rests on 2 assumptions (lengths, host" in lines[-2]
    assert lines[-1] == "  work); --verbose lists them"
    assert len(lines) == 20 and fits(text, lines=25)


def test_the_selection_is_the_answer_a_column_per_load():
    """The selection comes first, a column per load and a row per k, best marked."""
    lines = render_best_k_screen(_doc()).splitlines()
    assert lines[2].split() == ["users", "1", "8"]
    assert lines[3].split() == ["k=0", "82.90*", "37.00"]
    assert lines[5].split() == ["k=2", "60.10", "45.60*"]


def test_a_fixed_k_the_table_runs_itself_is_the_same_policy_not_a_win():
    """At 8 users the table runs k=2: its 0.000145 tok/s over fixed k=2 was marked '+
    significantly better', a cost of its server read as a decision. It is marked '='."""
    rows = {ln.split()[0]: ln for ln in render_best_k(_doc()).splitlines() if ln.startswith("    ")}
    assert rows["8"].endswith("0.000145 [0.000136, 0.000154]=")
    assert "1.50 [1.40, 1.60]+" in rows["8"]
    assert "-0.200 [-0.300, -0.100]=" in rows["3"]  # the table runs k=0 up to 3 users
    assert "0.00 [0.00, 0.00]=" in rows["1"]


def test_a_fixed_k_better_elsewhere_is_named_apart_from_the_tables_own():
    doc = _doc()
    table = doc["check"]["policies"]["table"]
    table["significantly_worse_at"]["1"] = [8]
    text = render_best_k_screen(doc)
    assert (
        "  table: some fixed k is significantly better at: k=1 at 8 users (and where it runs"
        in (text)
    )


def test_a_calibrated_scenarios_screen_keeps_its_answer_and_assumptions_in_25_lines():
    """Eight loads, eight k, the conditioning line and the loads beyond the measured batch
    took 26-27 lines: the blank lines go first, then the check's sentence behind a pointer;
    the selection, the engine forms and the assumptions stay."""
    doc = _doc()
    ks = [0, 1, 2, 3, 4, 5, 6, 7]
    users = [1, 2, 4, 8, 16, 32, 64, 128]
    doc["num_steps"] = ks
    doc["selection"] = [
        {
            "users": u,
            "best_num_steps": 2,
            "tied": [],
            "tied_within_inputs": [],
            "objective": {str(k): _ratio(50.0 + k, 50.0 + k, 50.0 + k) for k in ks},
        }
        for u in users
    ]
    doc["conditioned_on"] = {"figures": 6, "loads": [1, 32], "metric": "tpot_ms",
                             "refitted": ["serving.kernel_slope"]}  # fmt: skip
    doc["beyond_measured"] = {"load_kind": "concurrency", "loads": [64, 128], "note": "beyond",
                              "highest_measured_batch": 32}  # fmt: skip
    doc["assumptions"] = [f"topic {i}: why" for i in range(8)]
    text = render_best_k_screen(doc)
    lines = text.splitlines()
    assert fits(text, lines=25), (len(lines), text)
    assert lines[2].split() == ["users", *(str(u) for u in users)]
    assert [ln.split()[0] for ln in lines[3 : 3 + len(ks)]] == [f"k={k}" for k in ks]
    assert "  vLLM: --speculative-config '" in text
    assert any(ln.startswith("intervals conditioned on 6 calibration figures") for ln in lines)
    assert any(ln.startswith("* 64, 128 users: beyond the highest measured batch") for ln in lines)
    assert "rests on 8 assumptions" in text
