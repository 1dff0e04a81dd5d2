"""The fast reader: on every kind of environment it yields what importlib.metadata yields."""

from __future__ import annotations

import email
import importlib
import importlib.metadata
import os
import random
import re
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from attn.registry import _scan
from attn.registry._metadata import reference_scan
from attn.registry._scan import fast_scan, parse_headers
from attn.registry.controls import read_controls
from attn.registry.discovery import discover, looks_like_typo, scan_host

GROUPS = ("attn.backends", "attn.mla_prefill_backends")


def wants_groups(ep):
    return ep.group in GROUPS


def wants_host(ep):
    """What a host scan reads the metadata for: its groups and look-alikes of them."""
    return ep.group in GROUPS or any(looks_like_typo(ep.group, g) for g in GROUPS)


def wants_everything(ep):
    return True


def both(path=None, wants=wants_groups, also=("attn",)):
    importlib.invalidate_caches()
    return fast_scan(wants, also, path), reference_scan(wants, also, path)


def plugin(site, name, version="1.0", backends=None, **kwargs):
    return site.dist(
        name, version, entry_points={"attn.backends": backends or {"A": f"{name}.m:A"}}, **kwargs
    )


def env_duplicates(sites, tmp_path):
    first, second = sites.new("first"), sites.new("second")
    plugin(first, "twice", "2.0")
    plugin(second, "twice", "1.0")
    plugin(first, "Same_Site", "1.0", folder="same_site-1.0.dist-info")
    plugin(first, "same-site", "2.0", folder="Same.Site-2.0.dist-info")
    first.dist("plain-dup", "1.0", entry_points={"console_scripts": {"x": "x:main"}})
    second.dist("plain-dup", "2.0", entry_points={"console_scripts": {"x": "x:main"}})


def env_eggs(sites, tmp_path):
    site = sites.new()
    plugin(site, "egg-dir", folder="egg_dir.egg-info")
    plugin(site, "egg-versioned", folder="egg_versioned-1.0-py3.11.egg-info")
    (site.root / "egg_file.egg-info").write_text(
        "Metadata-Version: 1.1\nName: egg-file\nVersion: 0.1\n", encoding="utf-8"
    )
    pkg_info = site.dist("pkg-info-only", folder="pkg_info_only.egg-info", metadata=False)
    (pkg_info / "PKG-INFO").write_text(
        "Metadata-Version: 1.1\nName: pkg-info-only\nVersion: 3\nRequires-Dist: attn\n",
        encoding="utf-8",
    )
    (pkg_info / "entry_points.txt").write_text("[attn.backends]\nP = p:P\n", encoding="utf-8")
    egg = tmp_path / "eggy-1.0-py3.11.egg"
    info = egg / "EGG-INFO"
    info.mkdir(parents=True)
    (info / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: eggy\nVersion: 1.0\n", "utf-8")
    (info / "entry_points.txt").write_text("[attn.backends]\nE = eggy:E\n", encoding="utf-8")
    sys.path.insert(1, str(egg))
    zipped = tmp_path / "zipped-2.0-py3.11.egg"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("EGG-INFO/PKG-INFO", "Metadata-Version: 1.1\nName: zipped\nVersion: 2.0\n")
        archive.writestr("EGG-INFO/entry_points.txt", "[attn.backends]\nZ = zipped:Z\n")
    sys.path.insert(2, str(zipped))


def env_editable(sites, tmp_path):
    site = sites.new("site-packages")
    # setuptools: a dist-info in site-packages, a finder module and a .pth.
    setuptools_src = tmp_path / "setuptools-src"
    setuptools_src.mkdir()
    info = plugin(site, "st-editable", "0.1.dev0")
    (info / "direct_url.json").write_text(
        '{"url": "file:///src", "dir_info": {"editable": true}}', encoding="utf-8"
    )
    (site.root / "__editable__.st_editable-0.1.dev0.pth").write_text(
        "import __editable___st_editable_0_1_dev0_finder\n", encoding="utf-8"
    )
    # hatchling: a dist-info and a .pth naming the source folder, which is on sys.path.
    hatch_src = tmp_path / "hatch-src"
    hatch_src.mkdir()
    plugin(site, "hatch-editable", "0.2")
    (site.root / "_hatch_editable.pth").write_text(f"{hatch_src}\n", encoding="utf-8")
    sys.path.append(str(hatch_src))
    sys.path.append(str(setuptools_src))


def env_conflicts(sites, tmp_path):
    first, second = sites.new("first"), sites.new("second")
    plugin(first, "claim-b", backends={"FLASH_ATTN": "b:B"})
    plugin(first, "claim-a", backends={"FLASH_ATTN": "a:A"})
    plugin(second, "claim-c", backends={"FLASH_ATTN": "c:C", "NEW": "c:New"})


def env_odd_names(sites, tmp_path):
    site = sites.new()
    plugin(site, "Odd.Name_x", folder="Odd.Name_x-1.0.DIST-INFO")
    plugin(site, "no-version", folder="no_version.dist-info")
    plugin(site, "UPPER", folder="UPPER-3.dist-info")
    plugin(site, "dots.in.name", folder="dots.in.name-1.dist-info")
    plugin(site, "bad name!", backends={"not valid": "x", "ok": "pkg.mod:Cls [extra]"})
    site.dist("typo", entry_points={"attn.backend": {"T": "t:T"}, "Attn_Backends": {"U": "u:U"}})
    (site.root / "not-metadata.txt").write_text("", encoding="utf-8")
    (site.root / "folder.dist-info.bak").mkdir()


def env_empty(sites, tmp_path):
    first, second = sites.new("first"), sites.new("second")
    plugin(first, "half", "2.0", metadata=False)
    plugin(second, "half", "1.0")
    first.dist("nothing", metadata=False)
    plugin(first, "nameless", metadata=False)
    (first.root / "nameless-1.0.dist-info" / "METADATA").write_text("Version: 1\n", "utf-8")
    plugin(first, "empty-text", metadata=False)
    (first.root / "empty_text-1.0.dist-info" / "METADATA").write_text("", encoding="utf-8")
    broken = plugin(first, "not-utf8", metadata=False)
    (broken / "METADATA").write_bytes(b"Name: not-utf8\nSummary: \xff\xfe\n")
    plugin(first, "metadata-dir", metadata=False)
    (first.root / "metadata_dir-1.0.dist-info" / "METADATA").mkdir()


def env_odd_metadata(sites, tmp_path):
    site = sites.new()
    texts = {
        "folded": "Name: folded\nVersion: 1\nRequires-Dist: attn\n  >=0.1\nSummary: a\n\tb\n",
        "crlf": "Name: crlf\r\nVersion: 2\r\nRequires-Dist: attn>=0.1\r\n",
        "envelope": "From someone\nName: envelope\nVersion: 1\nFrom here\n",
        "bom": "\ufeffName: bom\nVersion: 1\n",
        "twice": "Name: twice\nName: again\nversion: 1\nVERSION: 2\nrequires-dist: attn\n",
        "stops": "Name: stops\nnot a header\nVersion: 1\n",
        "spaced": "Name : spaced\nVersion:1\n",
        "body": "Name: body\nVersion: 1\n\nRequires-Dist: attn>=9\n",
        "colon": ": nameless\nName: colon\n",
        "continued": "  Name: continued\nName: second\nVersion:   3  \n",
        "no-newline": "Name: no-newline\nVersion: 4",
        "unicode": "Name: unicode\nVersion: 1\nSummary: caf\u00e9 \u2028 x\nRequires-Dist: attn\n",
    }
    for key, text in texts.items():
        info = plugin(site, key, metadata=False)
        (info / "METADATA").write_bytes(text.encode("utf-8"))


def env_odd_entry_points(sites, tmp_path):
    site = sites.new()
    texts = {
        "comments": "# top\n[attn.backends]\n# A = a:A\nB = b:B\n\n  C  =  c : C  \n",
        "no-section": "A = a:A\n[attn.backends]\nB = b:B\n",
        "no-equals": "[attn.backends]\nthis line has no equals sign\n",
        "empty-section": "[]\nA = a:A\n[attn.backends]\nB=b:B=c\n",
        "crlf-eps": "[attn.backends]\r\nA = a:A\r\n[attn.mla_prefill_backends]\r\nP = p:P\r\n",
        "brackets": "[[attn.backends]]\nA = a:A\n[ attn.backends ]\nB = b:B\n",
        "unicode-eps": "[attn.backends]\nA\u2028B = a:A\n",
        "blank": "",
    }
    for key, text in texts.items():
        site.dist(key, raw_entry_points=text)
    bad = site.dist("not-utf8-eps")
    (bad / "entry_points.txt").write_bytes(b"[attn.backends]\nA = \xff:A\n")
    folder = site.dist("eps-dir")
    (folder / "entry_points.txt").mkdir()


def env_relative_entries(sites, tmp_path):
    site = sites.new("rel")
    plugin(site, "relative")
    other = tmp_path / "cwd-site"
    other.mkdir()
    os.chdir(tmp_path)
    (other / "cwd_plugin-1.0.dist-info").mkdir()
    (other / "cwd_plugin-1.0.dist-info" / "METADATA").write_text(
        "Name: cwd-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (other / "cwd_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[attn.backends]\nCWD = cwd:P\n", encoding="utf-8"
    )
    plugin(sites.new("here"), "dotted-entry")
    sys.path[0:0] = ["", "cwd-site", "./cwd-site/", f"{site.root.name}", "missing-folder"]
    sys.path.append(str(tmp_path) + "//" + site.root.name + "/.")


def env_zip(sites, tmp_path):
    site = sites.new()
    plugin(site, "unzipped")
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipplug-1.0.dist-info/METADATA", "Name: zipplug\nVersion: 1.0\n")
        zipped.writestr("zipplug-1.0.dist-info/entry_points.txt", "[attn.backends]\nZ = z:Z\n")
        zipped.writestr("unzipped-9.dist-info/METADATA", "Name: unzipped\nVersion: 9\n")
    sys.path.insert(0, str(archive))
    not_a_zip = tmp_path / "not-a-zip.zip"
    not_a_zip.write_bytes(b"plain bytes")
    sys.path.insert(1, str(not_a_zip))


def env_symlinked(sites, tmp_path):
    first, second = sites.new("first"), sites.new("second")
    info = plugin(second, "linked")
    (first.root / info.name).symlink_to(info)
    loop = first.root / "loop-1.0.dist-info"
    loop.mkdir()
    (loop / "METADATA").symlink_to(loop / "METADATA")
    (loop / "entry_points.txt").write_text("[attn.backends]\nL = l:L\n", encoding="utf-8")


ENVIRONMENTS = [
    env_duplicates,
    env_eggs,
    env_editable,
    env_conflicts,
    env_odd_names,
    env_empty,
    env_odd_metadata,
    env_odd_entry_points,
    env_relative_entries,
    env_zip,
    env_symlinked,
]


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
@pytest.mark.parametrize("wants", [wants_groups, wants_everything], ids=["groups", "everything"])
def test_fast_reader_yields_the_reference_records(sites, tmp_path, monkeypatch, build, wants):
    """Every record (folder, order, entry points, metadata, problems) equals the reference's."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    fast, reference = both(wants=wants)
    assert [r.location for r in fast] == [r.location for r in reference]
    assert fast == reference


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_a_host_scan_keeps_exactly_the_records_the_pipeline_uses(
    sites, tmp_path, monkeypatch, build
):
    """``kept_only`` leaves out just the copies the cache leaves out, and discovery is unchanged."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    full = reference_scan(wants_host, ("attn",))
    kept = tuple(r for r in full if r.metadata is not None or r.entry_points_problem)
    assert len(kept) < len(full)  # the interpreter's own distributions are left out
    assert fast_scan(wants_host, ("attn",), kept_only=True) == kept
    assert reference_scan(wants_host, ("attn",), kept_only=True) == kept
    assert scan_host("attn", GROUPS) == kept
    for group in GROUPS:
        arguments = {"group": group, "host": "attn", "controls": read_controls("ATTN")}
        arguments["builtin_names"] = ("FLASH_ATTN",)
        arguments["sibling_groups"] = tuple(g for g in GROUPS if g != group)
        assert discover(records=kept, **arguments) == discover(records=full, **arguments)


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
@pytest.mark.parametrize("group", GROUPS)
def test_fast_reader_gives_the_reference_discovery(  # noqa: PLR0917 - fixtures and parameters
    sites, tmp_path, monkeypatch, run_discovery, build, group
):
    """The whole pipeline over either reader finds the same plugins, verdicts and findings."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    monkeypatch.setenv("ATTN_READER", "fast")
    fast = run_discovery(group=group)
    monkeypatch.setenv("ATTN_READER", "reference")
    reference = run_discovery(group=group)
    assert fast == reference


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_fast_reader_sees_the_entry_points_importlib_metadata_sees(
    sites, tmp_path, monkeypatch, run_discovery, build
):
    """Plugin rows are the entry points importlib.metadata gives, first usable copy winning.

    Entry points of a copy whose metadata cannot be read are listed too, as invalid.
    """
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    seen: set[str] = set()
    expected: set[tuple[str, str, str]] = set()
    for dist in importlib.metadata.distributions():
        try:  # attn takes the first usable copy; unreadable ones are skipped here too
            name = dist.metadata.get("Name")
            eps = dist.entry_points.select(group="attn.backends")
        except (TypeError, UnicodeDecodeError, AttributeError, OSError):
            continue
        key = re.sub(r"[-_.]+", "-", (name or "").lower())
        if not name or key in seen:
            continue
        seen.add(key)
        expected.update((name, ep.name, ep.value) for ep in eps)
    found = run_discovery()
    unreadable = "the distribution's metadata cannot be read"
    readable = [p for p in found.plugins if not (p.reason or "").startswith(unreadable)]
    assert {(p.distribution, p.name, p.value) for p in readable} == expected
    # The copies nobody can read are listed, never dropped without a word.
    assert all(p.status == "invalid" for p in found.plugins if p not in readable)


def test_fast_reader_yields_the_reference_records_of_this_environment():
    """On the real environment of the test run, with every metadata file read, both agree."""
    fast, reference = both(wants=wants_everything)
    assert len(fast) > 5
    assert fast == reference


def test_fast_reader_of_a_missing_or_unreadable_entry_finds_nothing(tmp_path):
    """Missing folders and folders that cannot be listed hold nothing, as for the stdlib."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x-1.dist-info").mkdir()
    locked.chmod(0)
    try:
        fast, reference = both(path=[str(tmp_path / "missing"), str(locked)])
    finally:
        locked.chmod(0o700)
    assert fast == reference
    if os.geteuid() != 0:
        assert fast == ()


def test_fast_reader_never_imports_importlib_metadata_for_plain_folders(tmp_path):
    """Plain folders are read without importlib.metadata, email or pathlib."""
    site = tmp_path / "site"
    (site / "p-1.dist-info").mkdir(parents=True)
    (site / "p-1.dist-info" / "METADATA").write_text("Name: p\nVersion: 1\n", encoding="utf-8")
    (site / "p-1.dist-info" / "entry_points.txt").write_text("[attn.backends]\nA = a:A\n", "utf-8")
    code = (
        "import sys; from attn.registry._scan import fast_scan\n"
        f"records = fast_scan(lambda ep: True, (), [{str(site)!r}])\n"
        "assert records[0].version == '1', records\n"
        "print(sorted(m for m in ('importlib.metadata', 'email', 'pathlib', 'zipfile')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert done.stdout.strip() == "[]"


class DistributionsFinder:
    """A meta-path finder that provides a distribution of its own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_spec(self, *_args):
        return None

    def find_distributions(self, _context=None):
        return [importlib.metadata.PathDistribution(self.folder)]


def test_fast_reader_defers_to_finders_that_provide_distributions(site, tmp_path, monkeypatch):
    """With a meta-path finder that provides distributions, the scan is the reference's."""
    plugin(site, "on-disk")
    extra = tmp_path / "finder" / "from_finder-1.0.dist-info"
    extra.mkdir(parents=True)
    (extra / "METADATA").write_text("Name: from-finder\nVersion: 1.0\n", encoding="utf-8")
    (extra / "entry_points.txt").write_text("[attn.backends]\nF = f:F\n", encoding="utf-8")
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, DistributionsFinder(extra)])
    assert not _scan.standard_finders()
    fast, reference = both()
    assert "from-finder" in {r.name for r in fast}
    assert fast == reference


LINES = [
    "Name: n\n",
    "name: second\n",
    "Version: 1.0\n",
    "VERSION:2\n",
    "Requires-Dist: attn>=0.1\n",
    "Requires-Dist:attn ; python_version > '3'\n",
    "  continued\n",
    "\tcontinued with a tab\n",
    "From sender\n",
    "From: header\n",
    ": no name\n",
    "\n",
    " \n",
    "not a header\n",
    "Odd Name: space in name\n",
    "X-\u00e9: non-ascii name\n",
    "Summary: caf\u00e9\n",
    "Empty:\n",
    "Name:   padded   \n",
    "Key:value:with:colons\n",
]


def test_parse_headers_reads_fields_as_email_does():
    """On thousands of generated texts, header fields equal email's (compat32) parse."""
    rng = random.Random(20261201)  # noqa: S311 - reproducible, not secret
    for _ in range(3000):
        text = "".join(rng.choice(LINES) for _ in range(rng.randint(1, 8)))
        if rng.random() < 0.3:
            text = text.rstrip("\n")
        message = email.message_from_string(text)
        assert parse_headers(text) == list(message.items()), text


def reference_version(name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    except (UnicodeDecodeError, OSError) as exc:  # the fast reader hands these to the stdlib
        return type(exc)


def fast_version(name):
    try:
        return _scan.distribution_version(name)
    except (UnicodeDecodeError, OSError) as exc:
        return type(exc)


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_distribution_version_is_importlib_metadata_s(sites, tmp_path, monkeypatch, build):
    """The version read directly is importlib.metadata.version's, for every name installed."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    names = {r.name for r in reference_scan(wants_everything)} | {"attn", "not-installed"}
    for name in sorted(names):
        assert fast_version(name) == reference_version(name), name


_HEADER_RE = re.compile(r"(From |[\041-\071\073-\176]*:|[\t ])")


def test_header_lines_are_told_apart_as_email_tells_them():
    """The hand-written header rule equals email.feedparser's ``headerRE``."""
    rng = random.Random(5)  # noqa: S311 - reproducible, not secret
    alphabet = "Ab: \t-\x7f\x00\u00e9From"
    lines = ["", ":", "From ", "From", " x", "\tx", "Name: x", "Na me: x", "N\u00e9: x", "a\x7f:"]
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(5000)]
    for line in lines:
        assert _scan._header_line(line) == bool(_HEADER_RE.match(line)), repr(line)
