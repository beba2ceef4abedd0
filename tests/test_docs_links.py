"""Every relative link of the README, docs/ and the CHANGELOG reaches a file, and every
``#anchor`` a heading (GitHub's ids) or an ``<a id>`` of that file: a renamed section
must not leave readers at the top of a long page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "benchmarks").rglob("*.md")),
]
#: ``[text](target "title")``; the text may hold brackets of its own (``[`[brain]`](…)``)
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def heading_id(text: str) -> str:
    """GitHub's id of a heading: its text (a link's text, no tags, no emphasis), lower
    case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # tags (an <a id> in the heading)
    text = re.sub(r"(?<!\w)[*_]+|[*_]+(?!\w)", "", text)  # emphasis, not snake_case
    text = re.sub(r"[^\w\- ]", "", text.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    for title in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M):
        base = heading_id(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m.group(1))]


def test_the_heading_ids_are_githubs() -> None:
    assert heading_id("The grid: three methods, two games, ten seeds") == (
        "the-grid-three-methods-two-games-ten-seeds"
    )
    assert heading_id("`kgagent view` and its token") == "kgagent-view-and-its-token"
    assert heading_id("The _real_ thing, **bold**") == "the-real-thing-bold"
    assert heading_id("See [the view](view.md) — `max_library` ≥ 2") == (
        "see-the-view--max_library--2"
    )
    assert heading_id('<a id="x"></a>Kùzu × LadybugDB') == "kùzu--ladybugdb"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_anchor(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such section")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_a_broken_anchor_is_found(tmp_path: Path) -> None:
    assert sum("#" in t for p in PAGES for t in links(p)) > 20  # the docs do link sections
    page = tmp_path / "a.md"
    page.write_text(
        "# Top\n\nSee [there](#top) and [gone](#nowhere).\n\n```\n# not a heading\n```\n"
    )
    assert links(page) == ["#top", "#nowhere"]
    assert anchors(page) == {"top"}
    page.write_text("[`[brain]`](config.md#brain 'its section') ![img](x.png)\n")
    assert links(page) == ["config.md#brain"]
