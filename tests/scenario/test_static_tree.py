"""``[speculation.tree]``: a static tree given as paths, as vLLM's string, as a preset or
as a Sequoia growmap, validated with one line naming the field, bound to its cost."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.binding.bound import bind
from sim.cli import main
from sim.model.tree.inputs import EAGLE1_DEFAULT, tree_from_paths
from sim.scenario.load import load_scenario

DATA = Path(__file__).resolve().parents[1] / "data" / "trees"
EAGLE1 = DATA / "eagle1.toml"


def with_tree(tmp_path: Path, tree_lines: str, num_steps: int = 5, extra: str = "") -> Path:
    """The EAGLE-1 test scenario with its tree given by ``tree_lines`` instead."""
    text = EAGLE1.read_text().replace(
        'num_steps = 5\ntree.preset = "eagle1-default"', f"num_steps = {num_steps}\n{tree_lines}"
    )
    path = tmp_path / "tree.toml"
    path.write_text(text.replace("[acceptance]", f"{extra}[acceptance]"))
    return path


def test_preset_paths_and_vllm_string_give_the_same_tree(tmp_path):
    preset = load_scenario(EAGLE1).speculation.static_tree
    paths = ", ".join(str(list(p)) for p in EAGLE1_DEFAULT)
    listed = load_scenario(with_tree(tmp_path, f"tree.paths = [{paths}]")).speculation
    vllm_text = str(list(EAGLE1_DEFAULT))
    vllm = load_scenario(with_tree(tmp_path, f'tree.vllm = "{vllm_text}"')).speculation
    assert preset == listed.static_tree == vllm.static_tree == tree_from_paths(EAGLE1_DEFAULT)


def test_growmap_is_read_relative_to_the_scenario(tmp_path):
    shutil.copy(DATA / "growmap-5.json", tmp_path / "g.json")
    sp = load_scenario(with_tree(tmp_path, 'tree.growmap = "g.json"', num_steps=3)).speculation
    assert sp.tree is not None and sp.tree.source == "Sequoia growmap g.json"
    assert sp.static_tree.rank_paths()[1:] == ((0,), (1,), (0, 0), (1, 0), (0, 0, 0))


def test_the_tree_sets_the_verify_width_and_the_ranks():
    sp = load_scenario(EAGLE1).speculation
    assert (sp.is_tree, sp.draft_tokens, sp.rank_width, sp.topk) == (True, 26, 4, 1)


def test_the_cycle_verifies_every_node_and_drafts_level_by_level():
    bound = bind(load_scenario(EAGLE1))
    passes, cycle = bound.passes, bound.cycle
    # vLLM's propose_tree: one drafter pass per level below the first, over the nodes
    # drafted so far (4, 12, 20, 23 of EAGLE-1's tree), the verify over all 26 nodes
    table = bound.hardware.draft_step_table_ms(23)
    assert cycle.draft_ms == pytest.approx(sum(table[m - 1] for m in (4, 12, 20, 23)), rel=1e-12)
    assert cycle.verify_ms == pytest.approx(passes.verify_over_ms(26), rel=1e-12)
    assert bound.acceptance.tree == tree_from_paths(EAGLE1_DEFAULT)


def test_topk_set_on_the_command_line_drops_the_tree():
    # a study's chain of the tree's top-1 rates: --set speculation.topk=1 replaces the tree
    sc = load_scenario(EAGLE1, ["speculation.topk=1"])
    assert sc.speculation.tree is None and not sc.speculation.is_tree


def test_another_form_set_on_the_command_line_replaces_the_files():
    sc = load_scenario(EAGLE1, ["speculation.tree.paths=[[0],[0,0]]", "speculation.num_steps=2"])
    assert sc.speculation.tree is not None and sc.speculation.tree.preset is None
    assert sc.speculation.draft_tokens == 3


@pytest.mark.parametrize(
    ("tree_lines", "num_steps", "field", "words"),
    [
        ('tree.preset = "eagle1-default"', 3, "speculation.num_steps", "tree is 5 deep"),
        ("tree.paths = [[0], [1, 0]]", 2, "speculation.tree.paths", "without its parent [1]"),
        ('tree.vllm = "[(0,), (0 0)]"', 2, "speculation.tree.vllm", "not a Python list"),
        ('tree.preset = "eagle9"', 5, "speculation.tree.preset", "known: eagle1-default"),
        ('tree.growmap = "missing.json"', 5, "speculation.tree.growmap", "missing.json"),
        ("tree.paths = [[0]]\ntopk = 2\nnum_draft_tokens = 3", 1, "speculation.topk", "static"),
        ('tree.paths = [[0]]\ntree.preset = "eagle1-default"', 1, "speculation.tree", "one of"),
    ],
)
def test_bad_trees_give_one_line_naming_the_field(tmp_path, tree_lines, num_steps, field, words):
    path = with_tree(tmp_path, tree_lines, num_steps)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert f"{path}: {field}: " in lines[0] and words in lines[0], lines[0]


def test_a_tree_wider_than_the_rank_rates_is_refused(tmp_path):
    path = with_tree(tmp_path, 'tree.preset = "eagle1-default"')
    text = path.read_text().replace(
        'alpha = 0.8\nshape = "flat"\nrank_profile = "sequoia-jf68m-llama2-7b"',
        "rank_rates = [0.8, 0.1]",
    )
    path.write_text(text)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    assert "acceptance.rank_rates: gives 2 ranks but speculation.tree uses ranks up to 4" in (
        result.output
    )


BY_DEPTH = DATA / "by-depth.toml"


def test_rank_rates_by_depth_give_each_depth_its_own_ranks():
    # q(depth 1) = [0.7, 0.15], q(2) = [0.6, 0.2], q(3) = [0.5, 0.1] on the vLLM tree
    # (0) (1) (0,0) (0,1) (1,0) (0,0,0): S_1 = 0.7 + 0.15; S_2 = 0.7 (0.6 + 0.2) + 0.15 0.6;
    # S_3 = 0.7 0.6 0.5
    acc = bind(load_scenario(BY_DEPTH)).acceptance
    s1, s2, s3 = 0.85, 0.7 * 0.8 + 0.15 * 0.6, 0.7 * 0.6 * 0.5
    assert acc.mean_accept_length() == pytest.approx(1 + s1 + s2 + s3, abs=1e-12)
    assert acc.request_pmf() == pytest.approx([1 - s1, s1 - s2, s2 - s3, s3], abs=1e-12)


def test_the_last_depths_rank_rates_repeat_below_the_list(tmp_path):
    path = tmp_path / "short.toml"
    path.write_text(
        BY_DEPTH.read_text().replace(
            "rank_rates_by_depth = [[0.7, 0.15], [0.6, 0.2], [0.5, 0.1]]",
            "rank_rates_by_depth = [[0.7, 0.15], [0.6, 0.2]]",
        )
    )
    acc = bind(load_scenario(path)).acceptance
    s3 = 0.7 * 0.6 * 0.6
    assert acc.expected_survival()[3] == pytest.approx(s3, abs=1e-12)


def test_rank_rates_by_depth_rows_must_agree_in_width(tmp_path):
    path = tmp_path / "ragged.toml"
    path.write_text(BY_DEPTH.read_text().replace("[0.6, 0.2], [0.5, 0.1]]", "[0.6, 0.2], [0.5]]"))
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    assert "acceptance.rank_rates_by_depth: depth 3 gives 1 ranks, depth 1 gives 2" in (
        result.output
    )
