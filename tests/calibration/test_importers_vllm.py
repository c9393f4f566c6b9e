"""vLLM speculative-decoding counters from scrapes written as prometheus_client prints them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.calibration.importers.vllm_metrics import parse_vllm_metrics, read_vllm_metrics
from sim.calibration.measurements import cumulative_checks
from sim.errors import SpecsimError

DATA = Path(__file__).parents[1] / "data"


def test_one_scrape_sums_engines_and_gives_every_rate() -> None:
    c = read_vllm_metrics(DATA / "vllm_metrics_after.txt")
    # engine 0 + engine 1 (data parallel): 1000 + 600 drafts, ...
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (1600, 4800, 2560)
    assert c.label_sets == 2
    assert c.accepted_per_position == (1168, 832, 560)
    assert c.num_spec_tokens == 3
    assert c.cumulative == pytest.approx((0.73, 0.52, 0.35))
    assert c.conditional == pytest.approx((0.73, 0.52 / 0.73, 0.35 / 0.52))
    assert c.draft_acceptance_rate == pytest.approx(2560 / 4800)
    assert c.accept_length == pytest.approx(2.6)
    # AL = 1 + sum of cumulative rates (docs/reference.md §Acceptance)
    assert c.accept_length == pytest.approx(1 + sum(c.cumulative))


def test_difference_of_two_scrapes() -> None:
    c = read_vllm_metrics(DATA / "vllm_metrics_after.txt", DATA / "vllm_metrics_before.txt")
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (1300, 3900, 2140)
    assert c.accepted_per_position == (962, 698, 480)
    assert c.accept_length == pytest.approx(1 + 2140 / 1300)


def test_counter_reset_between_scrapes_is_an_error() -> None:
    with pytest.raises(SpecsimError, match="went down"):
        read_vllm_metrics(DATA / "vllm_metrics_before.txt", DATA / "vllm_metrics_after.txt")


BASE = """# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{model_name="m",engine="0"} 100
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{model_name="m",engine="0"} 400
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{model_name="m",engine="0"} 150
"""


def test_missing_positions_stay_missing() -> None:
    per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    text = BASE + (
        f'{per_pos}{{position="0",model_name="m",engine="0"}} 80\n'
        f'{per_pos}{{engine="0",model_name="m",position="3"}} 10\n'
    )
    c = parse_vllm_metrics(text)
    assert c.accepted_per_position == (80, None, None, 10)
    assert c.cumulative == (0.8, None, None, 0.1)
    assert c.conditional == (pytest.approx(0.8), None, None, None)


def test_without_per_position_counters_only_totals() -> None:
    c = parse_vllm_metrics(BASE)
    assert c.accepted_per_position == ()
    assert c.accept_length == pytest.approx(2.5) and c.num_spec_tokens == 4


def test_no_spec_decode_counters_says_what_was_expected() -> None:
    with pytest.raises(SpecsimError) as err:
        parse_vllm_metrics(
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n",
            source="scrape.txt",
        )
    msg = str(err.value)
    assert msg.startswith("scrape.txt: no vllm:spec_decode_num_drafts counter")
    assert "vllm:spec_decode_num_drafts_total{" in msg


def test_nan_counter_is_an_error_with_line() -> None:
    text = BASE.replace("} 150", "} NaN")
    with pytest.raises(SpecsimError, match="line 6"):
        parse_vllm_metrics(text)


def test_per_position_counters_from_other_engines_are_refused() -> None:
    per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    text = BASE + f'{per_pos}{{engine="1",model_name="m",position="0"}} 80\n'
    with pytest.raises(SpecsimError, match=r'covers label sets .*engine="1".* but'):
        parse_vllm_metrics(text)


def test_per_position_sum_matches_accepted_in_a_consistent_scrape() -> None:
    c = read_vllm_metrics(DATA / "vllm_metrics_after.txt")
    assert cumulative_checks(c.cumulative, c.accept_length) == []
    lopsided = parse_vllm_metrics(
        BASE + 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",'
        'position="0"} 100\n'
    )
    (note,) = cumulative_checks(lopsided.cumulative, lopsided.accept_length)
    assert f"{100 * (100 / 150 - 1):+.1f}% of the accepted tokens" in note
