"""Case 47 replayed (not scored): each group's own 64 answers in the order sent, on case
47's calibrated server."""

from __future__ import annotations

import pytest

from sim.validation import serving_data as pub
from sim.validation.h100nvl_qwen36_cases import MTP5
from sim.validation.h100nvl_qwen36_replay import replayed_job
from sim.validation.hybrid_mtp_serving_cases import PLAIN


@pytest.mark.parametrize("route", [PLAIN, MTP5])
@pytest.mark.parametrize("users", [1, 4, 8])
def test_each_group_s_answers_sum_to_its_completion_tokens(route, users):
    answers = pub.DAVIDSHARE_QWEN36_ANSWERS[route][users]
    assert len(answers) == pub.DAVIDSHARE_QWEN36_REQUESTS == 64
    assert sum(answers) == pub.DAVIDSHARE_QWEN36_TOKENS[route][users]
    # the manifest's 32 code tasks come first, within their 4,096-token budget
    assert max(answers[:32]) <= 4096 and max(answers) <= max(pub.DAVIDSHARE_QWEN36_MAX_TOKENS)


def test_the_long_answers_of_the_c8_mtp_group_are_where_the_source_has_them():
    """MATH-500/9 and /18, the 42nd and 51st tasks sent (the case 47 notes)."""
    answers = pub.DAVIDSHARE_QWEN36_ANSWERS[MTP5][8]
    assert (answers[41], answers[50]) == (7018, 7867)


def test_a_replayed_plain_job_draws_nothing():
    """Plain decoding of given lengths: every replication the same job, the ± 0."""
    mean, sd = replayed_job(PLAIN, 8)
    assert sd == 0.0 and mean > 0
