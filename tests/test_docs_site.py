"""The documentation site's configuration (mkdocs.yml) matches the pages in docs/."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from urllib.parse import unquote

import pytest

import attn
from attn import AttentionBackend, AttentionBackendEnum, MLAPrefillBackend, MLAPrefillBackendEnum
from attn.registry import Backend
from attn.registry.controls import READER_VARIABLE, Controls
from attn.registry.selection import _words

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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The built site, once for the module's tests."""
    return _built_site(tmp_path_factory.mktemp("built"))


HREF = re.compile(r"""(?:href|src)="(?P<target>[^"#?]*)[^"]*\"""")


def test_every_link_of_the_built_site_opens_a_file_from_file_urls(site):
    """From file://, every internal link and asset of every page names a file, not a folder."""
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


def test_search_works_offline(site):
    """The search index comes as a script, which the theme loads from file:// (no fetch)."""
    index = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert index.startswith("var __index =")
    assert "getting-started.html" in index


def controls_the_code_reads() -> set[str]:
    """Every ``ATTN_*`` variable attn reads: discovery's controls, the reader, the selections."""
    controls = Controls("ATTN")
    names = {getattr(controls, name) for name in dir(Controls) if name.endswith("_variable")}
    names.add(READER_VARIABLE.format(prefix="ATTN"))
    names.update(_words(registry)[0] for registry in (AttentionBackendEnum, MLAPrefillBackendEnum))
    return names


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_controls_table_names_every_control_the_code_reads(page):
    """The controls tables of the README and of Getting started miss no variable, invent none."""
    text = (ROOT / page).read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(ATTN_\w+)=", text, re.MULTILINE))
    assert listed == controls_the_code_reads()


def _public(cls: type) -> list[str]:
    return sorted(name for name in dir(cls) if not name.startswith("_"))


def test_the_api_reference_has_every_member_of_the_backend_base_classes(site):
    """AttentionBackend, MLAPrefillBackend and Backend: an entry for each public member."""
    ids = set(re.findall(r'id="(attn\.[\w.]+)"', (site / "api.html").read_text(encoding="utf-8")))
    documented = {
        "attn.backends.AttentionBackend": AttentionBackend,
        "attn.backends.MLAPrefillBackend": MLAPrefillBackend,
        "attn.registry.loading.Backend": Backend,
    }
    missing = [f"{where}.{name}" for where, cls in documented.items() for name in _public(cls)]
    assert [entry for entry in missing if entry not in ids] == []
    assert "attn.backends.AttentionBackend.get_impl_cls" in ids


def test_the_api_reference_names_nothing_private(site):
    """No private base class, module or helper shows in the API reference (dunders may)."""
    html = (site / "api.html").read_text(encoding="utf-8")
    ids = re.findall(r'id="(attn\.[\w.]+)"', html)
    private = [i for i in ids if any(re.fullmatch(r"_(?!_)\w*", part) for part in i.split("."))]
    assert private == []
    assert "_HostBackend" not in html
    assert "attn.backends._base" not in html


SPHINX_MARKUP = re.compile(r":(?:class|attr|meth|func|data|mod|exc|obj):|::|_HostBackend")


def test_the_api_reference_shows_no_sphinx_markup(site):
    """The reference's prose has no raw role (`:class:` and friends), no literal `::`."""
    page = (site / "api.html").read_text(encoding="utf-8")
    article = page[page.index("<article") : page.index("</article>")]
    prose = re.sub(r"<(pre|code)\b.*?</\1>", "", article, flags=re.DOTALL)
    text = html.unescape(re.sub(r"<[^>]+>", "", prose))
    assert [text[max(0, m.start() - 40) : m.end() + 20] for m in SPHINX_MARKUP.finditer(text)] == []


def test_the_api_page_justifies_every_name_attn_exports():
    """docs/api.md's table has a row for each name of attn.__all__, and counts them right."""
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    table = page[page.index("| name | why") : page.index("\n\n", page.index("| name | why"))]
    listed = {
        name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])
    }
    assert listed == set(attn.__all__)
    assert f"holds {len(attn.__all__)} names" in page


NETWORK_ASSET = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)="(?:https?:)?//""")


def test_the_site_loads_nothing_from_the_network(site):
    """Every script, stylesheet and image of every page is a file of the site."""
    fetching = [p.name for p in site.rglob("*.html") if NETWORK_ASSET.search(p.read_text("utf-8"))]
    assert fetching == []


def test_no_page_shows_an_escaped_pipe(site):
    """A `|` inside code in a table is written as is: the site's tables show no backslash."""
    shown = [p.name for p in site.glob("*.html") if "\\|" in p.read_text(encoding="utf-8")]
    assert shown == []


# -- the pages as a browser renders them (skipped without a headless browser) ----------


def _browser() -> str:
    """A headless browser's command, or a skip when none is installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found is not None:
            return found
    pytest.skip("no headless browser: install chromium to check the pages as rendered")


def _headless(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the browser headless, with a profile of its own, on a page of the built site."""
    command = [
        _browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


#: Loads each page in a frame 1280 pixels wide and reports, in #report, every
#: source code block whose lines are cut and every inline code broken inside a name.
_PROBE = """<!doctype html><html><body>
<iframe id="frame" style="width:1280px;height:1600px;border:0"></iframe>
<pre id="report">pending</pre>
<script>
var pages = PAGES, found = [], frame = document.getElementById("frame");
var SOURCE = ".language-python, .language-toml, .language-json, .language-console";
function splitName(code) {
  var text = code.firstChild, last = null;
  if (!text || text.nodeType !== 3 || code.getClientRects().length < 2) return false;
  var range = frame.contentDocument.createRange();
  for (var i = 0; i < text.data.length; i++) {
    range.setStart(text, i); range.setEnd(text, i + 1);
    var box = range.getBoundingClientRect();
    if (box.width === 0) continue;
    var between = /\\w/.test(text.data[i - 1]) && /\\w/.test(text.data[i]);
    if (last !== null && box.top > last.top + 2 && between) return true;
    last = box;
  }
  return false;
}
function check(page) {
  var doc = frame.contentDocument;
  doc.querySelectorAll("pre > code").forEach(function (code) {
    if (code.closest(SOURCE) && code.scrollWidth > code.clientWidth + 1)
      found.push(page + ": a line is cut: " + code.textContent.split("\\n")[0]);
  });
  doc.querySelectorAll(".md-content code").forEach(function (code) {
    if (!code.closest("pre") && splitName(code))
      found.push(page + ": code broken inside a name: " + code.textContent);
  });
}
function next(i) {
  if (i === pages.length) {
    document.getElementById("report").textContent = ["checked " + i].concat(found).join("\\n");
    return;
  }
  frame.onload = function () { check(pages[i]); next(i + 1); };
  frame.src = pages[i];
}
next(0);
</script></body></html>"""


def test_no_code_is_cut_or_split_inside_a_name_in_a_browser(site, tmp_path):
    """At 1280 pixels, source code wraps instead of being cut, and no name breaks mid-word."""
    pages = sorted(p.as_uri() for p in site.glob("*.html") if p.name != "404.html")
    probe = tmp_path / "probe.html"
    probe.write_text(_PROBE.replace("PAGES", json.dumps(pages)), encoding="utf-8")
    done = _headless(
        tmp_path,
        "--allow-file-access-from-files",
        "--virtual-time-budget=120000",
        "--window-size=1400,1700",
        "--dump-dom",
        probe.as_uri(),
    )
    report = re.search(r'<pre id="report">(.*?)</pre>', done.stdout, re.DOTALL)
    assert report is not None, done.stderr[-2000:]
    assert html.unescape(report.group(1)).splitlines() == [f"checked {len(pages)}"]


def test_a_page_renders_in_a_browser(site, tmp_path):
    """A screenshot of the plugin authors' page from file:// shows a page, not a blank."""
    shot = tmp_path / "plugin-authors.png"
    page = (site / "plugin-authors.html").as_uri()
    _headless(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 2000)
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        if data[at + 4 : at + 8] == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + length])
        at += 12 + length
    # A blank page's rows are one colour: a few distinct bytes; text has many.
    assert len(set(zlib.decompress(b"".join(chunks)))) > 64


def test_search_finds_pages_from_file_urls_in_a_browser(site, tmp_path):
    """Opened from file:// with no network, the search box answers a query."""
    page = (site / "index.html").as_uri() + "?q=decode"
    done = _headless(tmp_path, "--virtual-time-budget=20000", "--dump-dom", page)
    found = re.search(r'md-search-result__meta">(\d+) matching documents?<', done.stdout)
    assert found is not None, done.stderr[-2000:]
    assert int(found.group(1)) > 0
