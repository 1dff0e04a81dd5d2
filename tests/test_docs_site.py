"""The documentation site's configuration (mkdocs.yml) matches the pages in docs/."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The interpreter that runs the suite, read at collection (tests see another one).
_PYTHON = sys.executable
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


def _built_site(tmp_path: Path) -> Path:
    """The site as ``mkdocs build --strict`` writes it, or a skip when mkdocs is not installed."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("PYTHONPATH", None)
    # The suite runs on an interpreter that sees only attn and pytest: mkdocs
    # runs on the one that started the suite, with the docs extra if installed.
    python = _PYTHON
    probe = [python, "-c", "import mkdocs, material, mkdocstrings"]
    if subprocess.run(probe, env=env, capture_output=True, check=False).returncode != 0:
        pytest.skip("the docs extra is not installed: pip install 'attn[docs]'")
    site = tmp_path / "site"
    subprocess.run(
        [python, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    return site


HREF = re.compile(r"""(?:href|src)="(?P<target>[^"#?]*)[^"]*\"""")


def test_every_link_of_the_built_site_opens_a_file_from_file_urls(tmp_path):
    """From file://, every internal link and asset of every page names a file, not a folder."""
    site = _built_site(tmp_path)
    broken = []
    # 404.html is shown only by a web server, which resolves its absolute links.
    for page in (p for p in site.rglob("*.html") if p.name != "404.html"):
        html = page.read_text(encoding="utf-8")
        for match in HREF.finditer(html):
            target = unquote(match.group("target"))
            if not target or "://" in target or target.startswith(("mailto:", "data:", "//")):
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.is_file():
                broken.append(f"{page.relative_to(site)} -> {target}")
    assert broken == []


def test_search_works_offline(tmp_path):
    """The search index comes as a script, which the theme loads from file:// (no fetch)."""
    site = _built_site(tmp_path)
    index = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert index.startswith("var __index =")
    assert "getting-started.html" in index
