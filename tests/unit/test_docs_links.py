"""The README and docs/ hold together: every relative link of README.md and docs/*.md names a file of the repository
(and, with a `#fragment`, a heading of that file, as GitHub makes its anchors), the README stays short enough to read
in one sitting, every docs page is listed in the README's table of docs, and docs/api.md's v0 table is the one the
v0 routes are built from."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from oltsim.api.v0.mapping import markdown_table

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file: lower case, punctuation but `-` and `_` dropped,
    spaces turned into `-`; a repeated heading gets `-1`, `-2`, ..."""
    found: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps only its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = found.get(slug, 0)
        out.add(slug if count == 0 else f"{slug}-{count}")
        found[slug] = count + 1
    return out


def links(page: Path) -> list[str]:
    """The relative link targets of a page, outside fenced blocks and inline code."""
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text()))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_names_an_existing_file_and_heading(page):
    """Each relative link of the page names a file that exists, and its #fragment a heading of that file."""
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, broken


def test_the_readme_is_at_most_200_lines_and_lists_every_docs_page():
    """The README is read in one sitting (at most 200 lines) and its table of docs names every page of docs/."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    listed = {target.partition("#")[0] for target in links(REPO / "README.md")}
    missing = [f"docs/{p.name}" for p in sorted((REPO / "docs").glob("*.md")) if f"docs/{p.name}" not in listed]
    assert not missing, missing


def test_the_v0_table_of_the_api_page_is_the_one_the_routes_are_built_from():
    """docs/api.md's table of v0 calls and their v1 equivalents is `markdown_table()` of the v0 mapping, word for
    word, so the page cannot drift from the routes."""
    assert markdown_table().strip() in (REPO / "docs" / "api.md").read_text()
