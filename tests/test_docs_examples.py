"""Every example in README.md and docs/*.md runs as shown.

A fenced ``text`` or ``sh`` block holds examples: a line ``$ specsim ARGS`` (continued by
lines ending in a backslash) is a command, and the lines after it, up to the next ``$``
line or the end of the block, are its output as shown. The command runs through click's
CliRunner in a scratch directory that sees the repository's scenarios; the shown output
must match the real one line by line, where a line ``...`` stands for any number of lines
(none included). Trailing spaces are ignored. A block preceded by the line
``<!-- slow -->`` is marked slow (``make test-slow``). A ``python`` block is executed from
the repository root; when the next block is a ``text`` block without commands, that is its
printed output, compared the same way. docs/validation.md is generated and holds no
examples; docs/reference.md quotes other programs' output.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import main
from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = {"validation.md", "reference.md"}
FENCE = re.compile(r"^```(\w*)\s*$")
ELLIPSIS = "..."


@dataclass(frozen=True, slots=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: tuple[str, ...]
    slow: bool


@dataclass(frozen=True, slots=True)
class Example:
    where: str
    argv: tuple[str, ...]
    shown: tuple[str, ...]
    slow: bool


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one markdown file, in order."""
    out: list[Block] = []
    text = path.read_text().splitlines()
    i = 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(text) and not text[j].startswith("```"):
            j += 1
        before = text[start - 1].strip() if start > 0 else ""
        out.append(
            Block(path, start + 1, lang, tuple(text[start + 1 : j]), before == "<!-- slow -->")
        )
        i = j + 1
    return out


def examples(block: Block) -> list[Example]:
    """The ``$ specsim`` commands of a block with the output shown under each."""
    found: list[Example] = []
    lines = list(block.lines)
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ specsim "):
            i += 1
            continue
        where = f"{block.path.name}:{block.line + 1 + i}"
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        shown: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        argv = tuple(shlex.split(command))[1:]
        found.append(Example(where, argv, tuple(shown), block.slow))
    return found


def all_examples() -> list[Example]:
    return [
        ex
        for path in DOCS
        if path.name not in SKIP
        for block in blocks(path)
        if block.lang in ("text", "sh")
        for ex in examples(block)
    ]


def python_blocks() -> list[object]:
    """(where, code, shown output or None) of every ``python`` block, as a test's
    parameters (marked slow where the block is)."""
    out: list[object] = []
    for path in DOCS:
        if path.name in SKIP:
            continue
        bs = blocks(path)
        for n, b in enumerate(bs):
            if b.lang != "python":
                continue
            nxt = bs[n + 1] if n + 1 < len(bs) else None
            shown = (
                nxt.lines
                if nxt is not None
                and nxt.lang == "text"
                and not any(x.startswith("$ ") for x in nxt.lines)
                else None
            )
            where = f"{path.name}:{b.line}"
            marks = [pytest.mark.slow] if b.slow else []
            out.append(pytest.param(where, "\n".join(b.lines), shown, id=where, marks=marks))
    return out


def matches(shown: tuple[str, ...], actual: list[str]) -> bool:
    """Whether ``actual`` matches ``shown`` line by line, ``...`` lines standing for any
    run of lines (trailing spaces ignored)."""
    pattern = [s.rstrip() for s in shown]
    lines = [a.rstrip() for a in actual]
    while pattern and pattern[-1] == "":
        pattern.pop()
    while lines and lines[-1] == "":
        lines.pop()
    memo: dict[tuple[int, int], bool] = {}

    def go(p: int, a: int) -> bool:
        key = (p, a)
        if key not in memo:
            if p == len(pattern):
                ok = a == len(lines)
            elif pattern[p] == ELLIPSIS:
                ok = any(go(p + 1, b) for b in range(a, len(lines) + 1))
            else:
                ok = a < len(lines) and pattern[p] == lines[a] and go(p + 1, a + 1)
            memo[key] = ok
        return memo[key]

    return go(0, 0)


def _param(ex: Example) -> object:
    marks = [pytest.mark.slow] if ex.slow else []
    return pytest.param(ex, id=ex.where, marks=marks)


EXAMPLES = all_examples()


def test_the_readme_and_docs_hold_examples() -> None:
    assert any(ex.where.startswith("README.md") for ex in EXAMPLES)
    assert any(ex.where.startswith("commands.md") for ex in EXAMPLES)
    assert python_blocks()


@pytest.mark.parametrize("ex", [_param(ex) for ex in EXAMPLES])
def test_example_runs_as_shown(
    ex: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, list(ex.argv))
    actual = result.output.splitlines()
    assert matches(ex.shown, actual), (
        f"{ex.where}: specsim {shlex.join(ex.argv)}\n--- shown\n"
        + "\n".join(ex.shown)
        + "\n--- actual\n"
        + result.output
    )


@pytest.mark.parametrize("where, code, shown", python_blocks())
def test_python_example_runs(
    where: str, code: str, shown: tuple[str, ...] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {"__name__": "__example__"})
    if shown is not None:
        assert matches(shown, out.getvalue().splitlines()), f"{where}\n{out.getvalue()}"


@pytest.mark.parametrize(
    "shown, actual, ok",
    [
        (("a", "...", "d"), ["a", "b", "c", "d"], True),
        (("a", "...", "d"), ["a", "d"], True),
        (("a", "..."), ["a", "b"], True),
        (("a", "c"), ["a", "b", "c"], False),
        (("a",), ["a", "b"], False),
        (("a  ",), ["a"], True),
    ],
)
def test_ellipsis_matching(shown: tuple[str, ...], actual: list[str], ok: bool) -> None:
    assert matches(shown, actual) is ok
