"""The documentation site's configuration (mkdocs.yml) matches the pages in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAV_ENTRY = re.compile(r"^\s+- [^:]+: (?P<page>\S+\.md)\s*$", re.MULTILINE)


def nav_pages() -> list[str]:
    """The Markdown files mkdocs.yml's nav lists, in order."""
    return NAV_ENTRY.findall((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_every_page_is_in_the_nav():
    """Each docs/*.md is reachable from the site's navigation, and each nav entry exists."""
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    missing = [p for p in pages if p not in nav_pages()]
    assert missing == [], f"add {', '.join(missing)} to the nav in mkdocs.yml"
    assert sorted(nav_pages()) == pages


def test_the_site_starts_with_the_newcomer_pages():
    """Home, then Getting started, then Writing a plugin, as a new reader goes."""
    assert nav_pages()[:3] == ["index.md", "getting-started.md", "plugin-authors.md"]


def test_the_home_page_lists_every_page_once():
    """docs/index.md's list of pages links each other page of the nav once, none twice."""
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^- \[[^]]+\]\((?P<page>[\w-]+\.md)\)", home, re.MULTILINE)
    listed += re.findall(r" and \[[^]]+\]\((?P<page>[\w-]+\.md)\)", home)
    assert sorted(listed) == sorted(p for p in nav_pages() if p != "index.md")
