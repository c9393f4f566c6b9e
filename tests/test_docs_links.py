"""The documentation holds together: every relative link in README.md and docs/ names a file
that exists, and every study record under docs/studies/ opens with the line that says what it
holds and its outcome, and is listed on the current-state page it belongs to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
STUDIES = sorted((ROOT / "docs" / "studies").glob("*.md"))
#: The pages that list the study records, each with the records' first lines.
INDEXES = [ROOT / "docs" / "accuracy-under-load.md", ROOT / "docs" / "study-speed.md"]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def relative_links(path: Path) -> list[str]:
    """The link targets of a markdown file that are neither web addresses nor anchors."""
    return [t for t in LINK.findall(path.read_text()) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    missing = [t for t in relative_links(path) if not (path.parent / t).exists()]
    assert not missing, missing


def test_the_studies_exist() -> None:
    assert len(STUDIES) >= 2


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.name)
def test_a_study_opens_with_what_it_holds_and_its_outcome(path: Path) -> None:
    first, blank, title = path.read_text().splitlines()[:3]
    assert not first.startswith("#") and "Outcome:" in first, first
    assert blank == "" and title.startswith("# "), title


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.name)
def test_a_study_is_listed_on_its_page(path: Path) -> None:
    link = f"(studies/{path.name})"
    pages = [page.name for page in INDEXES if link in page.read_text()]
    assert pages, f"{path.name} is listed on none of {[p.name for p in INDEXES]}"
