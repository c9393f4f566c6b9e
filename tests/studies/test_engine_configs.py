"""A per-batch-size k table as each engine accepts it (field names as each engine's schema
spells them at the version named in sim/studies/engine_configs.py)."""

from __future__ import annotations

from sim.studies.engine_configs import engine_configs, sglang_config, trtllm_config, vllm_config


def test_vllm_table_is_inclusive_ranges_under_speculative_config() -> None:
    out = vllm_config([(1, 4, 4), (5, 16, 2), (17, 64, 0)], "eagle3")
    assert out["speculative_config"] == {
        "method": "eagle3",
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": [[1, 4, 4], [5, 16, 2], [17, 64, 0]],
    }
    assert "vllm/config/speculative.py" in out["schema"]
    assert "method" not in vllm_config([(1, 8, 3)], "generic")["speculative_config"]


def test_sglang_takes_one_k_and_a_threshold() -> None:
    flags = sglang_config([(1, 8, 3), (9, 64, 0)], "eagle3")["flags"]
    assert flags == [
        "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
        "--speculative-batch-size-threshold", "8",
    ]  # fmt: skip
    assert "--speculative-batch-size-threshold" not in sglang_config([(1, 64, 2)], "mtp")["flags"]
    assert sglang_config([(1, 64, 2)], "mtp")["flags"][1] == "EAGLE"
    assert "no flags express it" in sglang_config([(1, 4, 4), (5, 64, 2)], "eagle3")["note"]


def test_trtllm_schedule_starts_at_max_draft_len() -> None:
    out = trtllm_config([(1, 4, 4), (5, 16, 2), (17, 64, 0)], "eagle3")
    assert out["speculative_config"] == {
        "max_draft_len": 4,
        "draft_len_schedule": {"1": 4, "5": 2, "17": 0},
    }
    assert "1.2.1" in out["schema"]
    # a batch-1 length below a later one cannot be written
    assert "not its longest" in trtllm_config([(1, 2, 2), (3, 8, 3)], "eagle3")["note"]


def test_a_tree_row_is_named_not_written() -> None:
    configs = engine_configs([(1, 4, (4, 2, 8)), (5, 64, 2)], "eagle3")
    assert all("note" in c for c in configs.values())
