"""The fast reader: on every kind of environment it yields what importlib.metadata yields."""

from __future__ import annotations

import email
import email.feedparser
import importlib
import importlib.metadata
import json
import os
import random
import subprocess
import sys
import zipfile

import pytest

from attn.registry import _metadata, _scan, controls
from attn.registry._metadata import (
    UNREADABLE_KEY,
    Problem,
    installed_version,
    scan,
)
from attn.registry._scan import parse_headers
from attn.registry.codes import Code
from attn.registry.controls import canonical_name, read_controls
from attn.registry.discovery import deduplicate, discover, looks_like_typo, scan_host

GROUP = "attn.backends"
GROUPS = (GROUP, "attn.mla_prefill_backends")


def wants_groups(ep):
    return ep.group in GROUPS


def wants_host(ep):
    """What a host scan reads the metadata for: its groups and look-alikes of them."""
    return ep.group in GROUPS or any(looks_like_typo(ep.group, g) for g in GROUPS)


def wants_everything(ep):
    return True


def fast_scan(wants, also=(), path=None, **kwargs):
    return scan(wants, also, path, using="fast", **kwargs)


def reference_scan(wants, also=(), path=None, **kwargs):
    return scan(wants, also, path, using="reference", **kwargs)


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
    # Legacy egg-info files, as Debian's python3-* packages install them.
    legacy = {
        "egg_file.egg-info": b"Metadata-Version: 1.1\nName: egg-file\nVersion: 0.1\n",
        "egg_file_requires-2.0.egg-info": b"Name: egg-file-requires\nVersion: 2.0\n"
        b"Requires-Dist: attn>=0.1\nRequires-Dist: numpy; extra == 'np'\n",
        "egg_file_empty-1.egg-info": b"",
        "egg_file_bytes-1.egg-info": b"Name: egg-file-bytes\nSummary: caf\xe9\n",
        "dist_file-1.dist-info": b"Name: dist-file\nVersion: 1\n",
    }
    for name, data in legacy.items():
        (site.root / name).write_bytes(data)
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


def env_develop(sites, tmp_path):
    """``setup.py develop``: an egg-link, easy-install.pth, and the project's egg-info folder."""
    site = sites.new("site-packages")
    project = tmp_path / "project"
    info = project / "Develop_Plugin.egg-info"
    info.mkdir(parents=True)
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: develop-plugin\nVersion: 0.3\n")
    (info / "requires.txt").write_text(
        "attn>=0.1\nnumpy\n\n[cuda]\nflash-attn>=2\n\n[:python_version < '3.12']\nold-lib\n"
    )
    (info / "entry_points.txt").write_text("[attn.backends]\nDEVELOP = develop_plugin:B\n")
    (site.root / "develop-plugin.egg-link").write_text(f"{project}\n.", encoding="utf-8")
    (site.root / "easy-install.pth").write_text(f"{project}\n", encoding="utf-8")
    # A folder a .pth file adds (site puts it on sys.path), holding a wheel install.
    added = tmp_path / "pth-added" / "pth_plugin-1.0.dist-info"
    added.mkdir(parents=True)
    (added / "METADATA").write_text("Name: pth-plugin\nVersion: 1.0\nRequires-Dist: attn\n")
    (added / "entry_points.txt").write_text("[attn.backends]\nPTH = pth_plugin:B\n")
    added = added.parent
    (site.root / "extra.pth").write_text(f"{added}\n", encoding="utf-8")
    sys.path[sys.path.index(str(site.root)) + 1 : 0] = [str(project), str(added)]


REQUIRES = {
    "plain": "attn>=0.1\nnumpy\n",
    "extras": "attn>=0.1\n\n[cuda]\nflash-attn\n[cuda,rocm]\nkernels\n",
    "markers": "base\n[:python_version < '3.12']\nold\n[gpu:sys_platform == 'linux']\ncuda-lib\n",
    "urls": "pkg @ https://example.invalid/pkg.whl\n[extra]\nother @ file:///x ; os_name == 'nt'\n",
    "odd_lines": "# comment\n  spaced  >= 1 \n[]\nempty-section\n\t\n[ x ]\nspaced-section\n",
    "empty": "",
    "crlf": "attn>=0.1\r\n[cuda]\r\nflash-attn\r\n",
    "unicode": "attn\u2028numpy\n[caf\u00e9]\nx\n",
}


def env_requires(sites, tmp_path):
    """Egg-info folders whose requirements are in requires.txt, in every shape it takes."""
    site = sites.new()
    for key, text in REQUIRES.items():
        info = site.dist(f"req-{key}", folder=f"req_{key}.egg-info", metadata=False)
        (info / "PKG-INFO").write_text(f"Name: req-{key}\nVersion: 1\n", encoding="utf-8")
        (info / "requires.txt").write_bytes(text.encode())
        (info / "entry_points.txt").write_text(f"[attn.backends]\nREQ = req_{key}:B\n")
    # A dist-info reads requires.txt too, when it has no Requires-Dist; never when it has.
    (plugin(site, "dist-requires", requires=()) / "requires.txt").write_text("attn>=9\n")
    (plugin(site, "dist-both") / "requires.txt").write_text("attn>=9\n")
    bad = site.dist("req-bytes", folder="req_bytes.egg-info", entry_points={GROUP: {"B": "b:B"}})
    (bad / "requires.txt").write_bytes(b"attn\xff\n")


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
        "cr": "Name: cr\rVersion: 5\rRequires-Dist: attn>=0.1\r",
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
        "tabbed": "Name:\ttabbed\nVersion:\t 1\nRequires-Dist:\tattn>=0.1\n",
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
        "cr-eps": "[attn.backends]\rA = a:A\r[attn.mla_prefill_backends]\rP = p:P\r",
        "brackets": "[[attn.backends]]\nA = a:A\n[ attn.backends ]\nB = b:B\n",
        "unicode-eps": "[attn.backends]\nA\u2028B = a:A\n",
        "blank": "",
        "bom-eps": "\ufeff[attn.backends]\nA = a:A\n[attn.backends]\nB = b:B\n",
        "bom-comment": "\ufeff# generated\n[attn.backends]\nA = a:A\n",
        "unclosed": "[attn.backends]\nA = a:A\n[attn.mla_prefill_backends\nB = b:B\n",
        "unopened": "attn.backends]\nA = a:A\n[attn.backends]\nB = b:B\n",
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
    # pathlib keeps a leading "//" (POSIX leaves its meaning to the system), not "///".
    rooted = sites.new("rooted")
    plugin(rooted, "rooted")
    sys.path += ["/" + str(rooted.root), "//" + str(rooted.root)]


def env_zip(sites, tmp_path):
    site = sites.new()
    plugin(site, "unzipped")
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipplug-1.0.dist-info/METADATA", "Name: zipplug\nVersion: 1.0\n")
        zipped.writestr("zipplug-1.0.dist-info/entry_points.txt", "[attn.backends]\nZ = z:Z\n")
        zipped.writestr("unzipped-9.dist-info/METADATA", "Name: unzipped\nVersion: 9\n")
    sys.path.insert(0, str(archive))
    wheel = tmp_path / "wheeled-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("wheeled-1.0.dist-info/METADATA", "Name: wheeled\nVersion: 1.0\n")
        zipped.writestr("wheeled-1.0.dist-info/entry_points.txt", "[attn.backends]\nW = w:W\n")
    sys.path.append(str(wheel))
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


def env_named_by_metadata(sites, tmp_path):
    """Copies importlib.metadata's entry_points() tells apart by Name, not by folder name.

    It goes by the folder's name only for an exact ``.dist-info``/``.egg-info`` suffix after a
    name (``PathDistribution._name_from_stem``); else by the Name field, so ``Foo-2.0.Egg-Info``
    named bar is a second copy of bar, and ``.dist-info`` and ``-1.0.dist-info`` are two.
    """
    first, second, third = sites.new("first"), sites.new("second"), sites.new("third")
    plugin(first, "bar", "1.0", backends={"B1": "bar.m:B1"})
    plugin(second, "bar", "2.0", folder="Foo-2.0.Egg-Info", backends={"B2": "bar.m:B2"})
    plugin(third, "emptyname", folder=".dist-info")
    plugin(third, "dashname", folder="-1.0.dist-info")
    plugin(third, "dotsname", folder="..dist-info")
    plugin(third, "dotdash", folder=".-x.dist-info")  # by its folder's name: '.'
    plugin(third, "other", folder="Baz-3.0.DIST-INFO")
    plugin(third, "bar", "4.0", folder="notbar-4.0.dist-info", backends={"B4": "bar.m:B4"})
    plugin(third, "aaa", "0.1", folder="Qux-0.1.Egg-Info", backends={"Q1": "aaa.m:Q1"})
    plugin(third, "qux", "0.2", backends={"Q2": "qux.m:Q2"})
    plugin(third, "aaa", "0.3", backends={"Q3": "aaa.m:Q3"})
    plugin(third, "nameless", folder="Nameless-1.Dist-Info", metadata=False)  # Python fails
    (third.root / "Nameless-1.Dist-Info" / "METADATA").write_text("Version: 1\n", "utf-8")
    egg = tmp_path / "eggname-1.0-py3.11.egg" / "EGG-INFO"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Name: bar\nVersion: 5.0\nRequires-Dist: attn\n", "utf-8")
    (egg / "entry_points.txt").write_text("[attn.backends]\nB5 = bar.m:B5\n", encoding="utf-8")
    zipped = tmp_path / "named.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("zipname-1.0.dist-info/METADATA", "Name: bar\nVersion: 6.0\n")
        archive.writestr("zipname-1.0.dist-info/entry_points.txt", "[attn.backends]\nB6 = b:B6\n")
    sys.path += [str(egg.parent), str(zipped)]


ENVIRONMENTS = [
    env_duplicates,
    env_eggs,
    env_develop,
    env_requires,
    env_editable,
    env_conflicts,
    env_odd_names,
    env_empty,
    env_odd_metadata,
    env_odd_entry_points,
    env_relative_entries,
    env_zip,
    env_symlinked,
    env_named_by_metadata,
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
    assert scan_host("attn", GROUPS, read_controls("ATTN").reader) == kept
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
            dist.requires  # noqa: B018 - read as attn reads it
            key = name and dist._normalized_name  # entry_points() tells copies apart by it
        except (TypeError, UnicodeDecodeError, AttributeError, OSError):
            continue
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
    """Plain folders of every shape are read without importlib.metadata, email, zipfile, pathlib."""
    site, project = tmp_path / "site", tmp_path / "project"
    files = {
        site / "p-1.dist-info" / "METADATA": "Name: p\nVersion: 1\n",
        site / "p-1.dist-info" / "entry_points.txt": "[attn.backends]\nA = a:A\n",
        site / "legacy-2.egg-info": "Name: legacy\nVersion: 2\n",
        site / "develop.egg-link": f"{project}\n.",
        project / "develop.egg-info" / "PKG-INFO": "Name: develop\nVersion: 3\n",
        project / "develop.egg-info" / "requires.txt": "attn\n[cuda]\nkernels\n",
        project / "develop.egg-info" / "entry_points.txt": "[attn.backends]\nD = d:D\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    code = (
        "import sys; from attn.registry import _metadata\n"
        f"path = [{str(site)!r}, {str(project)!r}]\n"
        "records = {r.key: r for r in _metadata.scan(lambda ep: True, ('legacy',), path)}\n"
        "assert {k: r.version for k, r in records.items()} == {'p': '1', 'legacy': '2',"
        " 'develop': '3'}, records\n"
        "assert records['develop'].metadata.requires == ('attn', 'kernels; extra == \"cuda\"')\n"
        f"sys.path[:0] = [{str(site)!r}, {str(project)!r}]\n"
        "assert _metadata.installed_version('develop') == '3'\n"
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


class Finder:
    """A meta-path finder whose ``find_distributions`` returns what *provide* returns."""

    def __init__(self, provide) -> None:
        self.provide = provide

    def find_spec(self, *_args):
        return None

    def find_distributions(self, _context=None):
        return self.provide()


def raising(error: BaseException):
    def provide():
        raise error

    return provide


def test_fast_reader_defers_to_finders_that_provide_distributions(site, tmp_path, monkeypatch):
    """With a meta-path finder that provides distributions, the scan is the reference's."""
    plugin(site, "on-disk")
    extra = tmp_path / "finder" / "from_finder-1.0.dist-info"
    extra.mkdir(parents=True)
    (extra / "METADATA").write_text("Name: from-finder\nVersion: 1.0\n", encoding="utf-8")
    (extra / "entry_points.txt").write_text("[attn.backends]\nF = f:F\n", encoding="utf-8")
    provide = [importlib.metadata.PathDistribution(extra)].copy
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder(provide)])
    assert not controls.standard_finders()
    fast, reference = both()
    assert "from-finder" in {r.name for r in fast}
    assert fast == reference


def test_the_backport_s_finder_reads_every_copy_and_leaves_the_cache_on(site, with_backport):
    """importlib_metadata, once imported, reads all metadata by rules of its own release.

    So attn reads through it (its answers are importlib.metadata's now), and the cache stays
    on: it reads the same folders, which stat checks.
    """
    plugin(site, "on-disk", backends={"A": "on_disk.m:A"})  # releases before 10 check values
    assert not controls.standard_finders()
    assert controls.standard_finders(backport=True)
    fast, reference = both()
    assert fast == reference
    assert ("on-disk", "A") in {(r.key, ep.name) for r in fast for ep in r.entry_points}
    sys.meta_path.append(Finder(list))  # another finder still turns the cache off
    assert not controls.standard_finders(backport=True)


class InMemory(importlib.metadata.Distribution):
    """A distribution without a folder, as a finder serving a zipapp or a frozen app has."""

    def __init__(self, name: str, entry_point: str) -> None:
        self.texts = {
            "METADATA": f"Name: {name}\nVersion: 1.0\nRequires-Dist: attn>=0.1\n",
            "entry_points.txt": f"[attn.backends]\n{entry_point}\n",
        }

    def read_text(self, filename):
        return self.texts.get(filename)

    def locate_file(self, path):
        raise NotImplementedError


def test_distributions_in_memory_are_keyed_by_their_names(site, monkeypatch):
    """Two distributions a finder serves from memory are two, as importlib.metadata counts them."""
    plugin(site, "on-disk")
    memory = [InMemory("Mem_One", "MEM_ONE = mem_one:A"), InMemory("mem.two", "MEM_TWO = m:B")]
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder(memory.copy)])
    stdlib = importlib.metadata.entry_points(group="attn.backends")
    assert {"MEM_ONE", "MEM_TWO"} <= set(stdlib.names)
    kept, _ = deduplicate(scan(wants_groups), (), GROUPS)
    found = {(r.key, ep.name) for r in kept for ep in r.entry_points}
    assert {("mem-one", "MEM_ONE"), ("mem-two", "MEM_TWO")} <= found


@pytest.mark.parametrize("place", ["after", "before"])
def test_a_second_finder_s_copy_ranks_as_importlib_metadata_ranks_it(sites, monkeypatch, place):
    """importlib.metadata asks each finder over the whole path in turn, so a finder after the
    path finder loses to a copy on disk, wherever on sys.path, and one before it wins."""
    sites.new("empty")
    plugin(sites.new(), "dupe", "1.0", backends={"DUPE": "dupe:Disk"})
    memory = InMemory("dupe", "DUPE = dupe:Memory")
    memory.texts["METADATA"] = memory.texts["METADATA"].replace("1.0", "9.0")
    finder = Finder([memory].copy)  # the same copy for every entry
    finders = [*sys.meta_path, finder] if place == "after" else [finder, *sys.meta_path]
    monkeypatch.setattr(sys, "meta_path", finders)
    importlib.invalidate_caches()
    (python_uses,) = importlib.metadata.entry_points(group="attn.backends", name="DUPE")
    assert python_uses.value == ("dupe:Disk" if place == "after" else "dupe:Memory")
    records = scan(wants_groups)
    assert records[0].key == "dupe"  # the finder serves it for the first entry of sys.path too
    kept, findings = deduplicate(records, (), GROUPS)
    (used,) = [ep for r in kept for ep in r.entry_points if ep.name == "DUPE"]
    assert used.value == python_uses.value
    (finding,) = [f for f in findings if f.kind is Code.DUPLICATE_METADATA]
    assert f"at <InMemory> ({'ignored' if place == 'after' else 'used'})" in finding.message
    assert installed_version("dupe") == importlib.metadata.version("dupe")  # the version check's


def test_a_named_pipe_on_sys_path_is_nothing_and_never_opened(tmp_path):
    """As for imports: reading a pipe as a zip file would wait for a writer forever."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    assert _scan.fast_entry(0, str(pipe)) == []


class Mute(Exception):  # noqa: N818 - named as plugin code might name it
    def __str__(self):
        raise ValueError


class Abort(BaseException):
    pass


@pytest.mark.parametrize(
    ("error", "detail"),
    [
        (RuntimeError("the finder is broken"), "RuntimeError: the finder is broken"),
        (SystemExit(3), "SystemExit: its code tried to exit the process (exit code 3)"),
        (Abort("stop"), "Abort: stop"),
        (Mute(), "Mute (its message cannot be shown: str() raised ValueError)"),
    ],
)
def test_a_finder_that_raises_is_reported_once(site, monkeypatch, error, detail):
    """Whatever a meta-path finder raises is contained: one FINDER_FAILED record, the rest read."""
    plugin(site, "on-disk")
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder(raising(error))])
    records = scan(wants_groups)
    problems = [r.entry_points_problem for r in records if r.key == UNREADABLE_KEY]
    finder = f"{__name__}.Finder"
    assert problems == [Problem(Code.FINDER_FAILED, detail=detail, finder=finder)]
    assert str(problems[0]) == (
        f"the meta-path finder {finder} raised {detail} in find_distributions()"
    )
    assert "on-disk" in {r.key for r in records}


def test_a_finder_that_is_a_class_is_named_as_itself(site, monkeypatch):
    """A class on sys.meta_path (as PathFinder is) is named by its own name, not builtins.type."""

    class ClassFinder:
        @classmethod
        def find_distributions(cls, context=None):  # noqa: ARG003 - as importlib calls it
            raise RuntimeError("broken")

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, ClassFinder])
    problems = [r.entry_points_problem for r in scan(wants_groups) if r.key == UNREADABLE_KEY]
    assert [p.finder for p in problems] == [f"{__name__}.{ClassFinder.__qualname__}"]


def test_a_finder_lets_keyboard_interrupt_through(site, monkeypatch):
    """Ctrl-C in a meta-path finder stops the scan, as the user asked."""
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder(raising(KeyboardInterrupt()))])
    with pytest.raises(KeyboardInterrupt):
        scan(wants_groups)


class Hostile(importlib.metadata.Distribution):
    """A custom finder's distribution (no folder, no entry points) whose metadata raises."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def read_text(self, filename):
        if filename == "entry_points.txt":
            return ""
        raise self.error

    def locate_file(self, path):
        return path


def test_a_finders_distribution_whose_metadata_raises_is_a_read_error(site, monkeypatch):
    """Its records name the distribution's class as its location and say what was raised."""
    plugin(site, "on-disk")
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder([Hostile(OSError("gone"))].copy)])
    records = scan(wants_groups)
    hostile = [r for r in records if r.location == "<Hostile>"]
    assert hostile
    assert {(r.metadata.problem.code, r.metadata.problem.detail) for r in hostile} == {
        (Code.READ_ERROR, "OSError: gone")
    }
    assert "on-disk" in {r.key for r in records}


def test_ctrl_c_while_reading_a_finders_distribution_stops_the_scan(site, monkeypatch):
    """A KeyboardInterrupt raised reading metadata is the user's, never a read error."""
    monkeypatch.setattr(
        sys, "meta_path", [*sys.meta_path, Finder([Hostile(KeyboardInterrupt())].copy)]
    )
    with pytest.raises(KeyboardInterrupt):
        scan(wants_groups)


class HostileEntryPoints(Hostile):
    """A custom finder's distribution whose entry points cannot be read."""

    def read_text(self, filename):
        if filename == "entry_points.txt":
            raise self.error
        return "Name: hostile-eps\nVersion: 1.0\n" if filename == "METADATA" else None


def test_a_finders_distribution_whose_entry_points_raise(site, monkeypatch):
    """Reading its entry points fails: a read error at its location; Ctrl-C stops the scan."""
    found = [HostileEntryPoints(OSError("gone"))]
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder(found.copy)])
    records = [r for r in scan(wants_groups) if r.location == "<HostileEntryPoints>"]
    assert records  # one per sys.path entry: the finder ignores the path it is asked about
    assert {(r.entry_points_problem.code, r.entry_points_problem.detail) for r in records} == {
        (Code.READ_ERROR, "OSError: gone")
    }
    found[0] = HostileEntryPoints(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        scan(wants_groups)


@pytest.mark.parametrize("using", ["fast", "reference"])
def test_entries_that_are_not_strings_are_skipped(site, monkeypatch, using):
    """None, bytes and int entries are skipped, as the import system skips them: no TypeError."""
    plugin(site, "plug")
    expected = scan(wants_groups, ("attn",), using=using)
    monkeypatch.setattr(sys, "path", [None, b"/", 3, *sys.path])
    shifted = tuple(r._replace(path_index=r.path_index + 3) for r in expected)
    assert scan(wants_groups, ("attn",), using=using) == shifted
    monkeypatch.setenv("ATTN_READER", using)
    assert installed_version("plug") == "1.0"


def test_a_lookup_with_entries_that_are_not_strings_on_sys_path(site, monkeypatch):
    """A registry discovers its plugins with such entries on sys.path."""
    import attn  # noqa: PLC0415

    plugin(site, "plug", backends={"PLUG": "plug.m:B"})
    monkeypatch.setattr(sys, "path", [None, *sys.path, b"/"])
    assert attn.AttentionBackendEnum["PLUG"].get_path() == "plug.m.B"


def importlib_view(entry):
    """What importlib.metadata reads from one sys.path entry, copy by copy (None: cannot)."""
    view = []
    for dist in importlib.metadata.distributions(path=[entry]):
        try:
            meta = dist.metadata
            fields = (meta.get("Name"), meta.get("Version"), tuple(dist.requires or ()))
            eps = tuple((ep.group, ep.name, ep.value) for ep in dist.entry_points)
        except (TypeError, UnicodeDecodeError, OSError):
            fields = eps = None
        view.append((str(dist._path), fields, eps))
    return view


def attn_view(records, entry):
    view = []
    for r in records:
        if r.path_entry != entry or r.key == UNREADABLE_KEY:
            continue
        meta = r.metadata
        if meta is None or meta.problem is not None or r.entry_points_problem is not None:
            view.append((r.location, None, None))
        else:
            eps = tuple((ep.group, ep.name, ep.value) for ep in r.entry_points)
            view.append((r.location, (meta.name, meta.version, meta.requires), eps))
    return view


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_fast_reader_reads_each_copy_as_importlib_metadata_distributions(
    sites, tmp_path, monkeypatch, build
):
    """Copy by copy, entry by entry: the same folders, names, versions, requirements, entry points.

    Copies attn reports a problem for are those importlib.metadata fails on, or reads in part.
    """
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    records = fast_scan(wants_everything)
    for entry in dict.fromkeys(sys.path):
        expected = importlib_view(entry)
        found = attn_view(records, entry)
        assert [e[0] for e in found] == [e[0] for e in expected], entry
        for (location, fields, eps), (_, want_fields, want_eps) in zip(
            found, expected, strict=True
        ):
            if want_fields is None:  # importlib.metadata fails on it: attn says why
                assert fields is None, location
            elif fields is not None:
                assert (fields, eps) == (want_fields, want_eps), location


@pytest.mark.parametrize("key", list(REQUIRES))
def test_requires_txt_is_converted_as_importlib_metadata_converts_it(site, key):
    """An egg-info's requires.txt gives the requirements Distribution.requires gives."""
    info = site.dist(f"req-{key}", folder=f"req_{key}.egg-info", metadata=False)
    (info / "PKG-INFO").write_text(f"Name: req-{key}\nVersion: 1\n", encoding="utf-8")
    (info / "requires.txt").write_bytes(REQUIRES[key].encode())
    expected = tuple(importlib.metadata.PathDistribution(info).requires or ())
    also = (canonical_name(f"req-{key}"),)
    for using in ("fast", "reference"):
        (record,) = scan(wants_groups, also, [str(site.root)], using=using)
        assert record.metadata.requires == expected, using


def test_legacy_egg_info_files_are_read_as_importlib_metadata_reads_them(site):
    """A pkg-1.0.egg-info file: its Name, Version and Requires-Dist, and no entry points."""
    (site.root / "legacy-1.0.egg-info").write_text(
        "Metadata-Version: 1.1\nName: Legacy\nVersion: 1.0\nRequires-Dist: attn>=0.1\n",
        encoding="utf-8",
    )
    (dist,) = importlib.metadata.distributions(path=[str(site.root)])
    for using in ("fast", "reference"):
        (record,) = scan(wants_groups, ("legacy",), [str(site.root)], using=using)
        assert record.metadata == _metadata.MetadataRecord(
            dist.metadata["Name"], dist.version, tuple(dist.requires)
        )
        assert (record.entry_points, record.entry_points_problem) == ((), None)
        assert list(dist.entry_points) == []


@pytest.mark.parametrize("using", ["fast", "reference"])
def test_a_host_installed_as_an_egg_info_file_is_found(
    site, monkeypatch, runtime, run_discovery, using
):
    """With attn installed as Debian does it, plugins are checked against that version."""
    (site.root / "attn-7.0.egg-info").write_text("Name: attn\nVersion: 7.0\n", encoding="utf-8")
    plugin(site, "plug", requires=["attn>=7"])
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(runtime.site)])
    monkeypatch.setenv("ATTN_READER", using)
    assert importlib.metadata.version("attn") == "7.0"
    assert installed_version("attn") == "7.0"
    result = run_discovery()
    assert result.host_version == "7.0"
    assert [(p.distribution, p.status) for p in result.plugins] == [("plug", "used")]


def test_a_metadata_python_cannot_open_leaves_pkg_info_read_as_python_reads_it(site):
    """METADATA a folder (or denied): importlib.metadata reads PKG-INFO, and so does attn."""
    info = site.dist("plug", "1.5", entry_points={"attn.backends": {"A": "m:C"}}, metadata=False)
    (info / "METADATA").mkdir()
    (info / "PKG-INFO").write_text("Name: plug\nVersion: 1.5\nRequires-Dist: attn>=0.1\n")
    importlib.invalidate_caches()
    (dist,) = importlib.metadata.distributions(path=[str(site.root)])
    for using in ("fast", "reference"):
        (record,) = scan(wants_groups, (), [str(site.root)], using=using)
        assert record.metadata == _metadata.MetadataRecord(
            dist.metadata["Name"], dist.version, tuple(dist.requires)
        ), using


@pytest.mark.parametrize(("file", "code"), [("requires.txt", Code.IS_A_FOLDER)])
def test_a_requires_txt_that_cannot_be_read_makes_the_metadata_unusable(site, file, code):
    """Python reads no requirement from it; attn says so rather than skip the version check."""
    info = site.dist("plug", folder="plug.egg-info", requires=())
    (info / file).mkdir()
    for using in ("fast", "reference"):
        (record,) = scan(wants_groups, ("plug",), [str(site.root)], using=using)
        assert record.metadata_problem == Problem(code, file)


def test_a_requires_txt_that_cannot_be_read_keeps_the_name_and_version_python_reads(site):
    """Python reads the Name and Version of such a copy, and fails on its requirements alone."""
    info = site.dist("plug", "1.5", folder="plug.egg-info", requires=())
    (info / "requires.txt").write_bytes(b"attn\n# caf\xe9\n")
    importlib.invalidate_caches()
    assert importlib.metadata.version("plug") == installed_version("plug") == "1.5"
    for using in ("fast", "reference"):
        (record,) = scan(wants_groups, ("plug",), [str(site.root)], using=using)
        assert (record.name, record.version) == ("plug", "1.5")
        assert record.metadata_problem == Problem(Code.NOT_UTF8, "requires.txt", "0xe9", 10)


@pytest.mark.parametrize(
    ("version", "expected"), [((3, 10), True), ((3, 13), True), ((3, 14), False), ((4, 0), False)]
)
def test_the_fast_reader_covers_the_pythons_the_tests_compare_it_on(version, expected):
    """3.10 to 3.13 are compared with importlib.metadata; a newer Python is not."""
    assert (version <= controls.NEWEST_COVERED) is expected


def test_a_newer_python_reads_through_importlib_metadata(monkeypatch, python):
    """On a Python the tests have not covered, scans and value parsing use the standard library."""
    monkeypatch.setattr(controls, "NEWEST_COVERED", (3, 9))
    monkeypatch.setenv("ATTN_READER", "fast")
    assert controls.reader() == "reference"
    assert read_controls("ATTN").reader == "reference"
    assert _metadata.entry_point_pattern() is importlib.metadata.EntryPoint.pattern
    code = (
        "import os, sys; os.environ['ATTN_NO_CACHE'] = '1'\n"
        "from attn.registry import controls; controls.NEWEST_COVERED = (3, 9)\n"
        "import attn; attn.AttentionBackendEnum['FLASH_ATTN']\n"
        "print('importlib.metadata' in sys.modules)\n"
    )
    assert python.run("-c", code).stdout.strip() == "True"


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
    """The version of the first copy that has one, as importlib.metadata reads them."""
    for dist in importlib.metadata.distributions(name=name):
        try:
            version = dist.metadata.get("Version")
        except (UnicodeDecodeError, OSError):
            continue
        if version:
            return version
    return None


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_installed_version_is_importlib_metadata_s(sites, tmp_path, monkeypatch, build):
    """The version read directly is importlib.metadata's, for every name installed."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    names = {r.name for r in reference_scan(wants_everything)} | {"attn", "not-installed"}
    for using in ("fast", "reference"):
        monkeypatch.setenv("ATTN_READER", using)
        for name in sorted(names):
            assert installed_version(name) == reference_version(name), (name, using)


@pytest.mark.parametrize("build", ENVIRONMENTS, ids=lambda f: f.__name__[4:])
def test_a_scan_of_some_names_gives_their_copies_as_a_whole_scan(
    sites, tmp_path, monkeypatch, build
):
    """``only`` (what installed_version() reads) keeps each name's copies, in the same order."""
    monkeypatch.chdir(tmp_path)
    build(sites, tmp_path)
    importlib.invalidate_caches()
    whole = _metadata.scan(wants_everything)
    for key in {r.key for r in whole} | {"not-installed"}:
        copies = [r for r in _metadata.scan(wants_everything, only={key}) if r.key == key]
        assert copies == [r for r in whole if r.key == key], key


def test_header_lines_are_told_apart_as_email_tells_them():
    """The header rule is email.feedparser's ``headerRE``."""
    assert _scan._HEADER.pattern == email.feedparser.headerRE.pattern
    rng = random.Random(5)  # noqa: S311 - reproducible, not secret
    alphabet = "Ab: \t-\x7f\x00\u00e9From"
    lines = ["", ":", "From ", "From", " x", "\tx", "Name: x", "Na me: x", "N\u00e9: x", "a\x7f:"]
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(5000)]
    for line in lines:
        assert bool(_scan._HEADER.match(line)) == bool(email.feedparser.headerRE.match(line))


#: Every reader and command over a site whose plugin has a file that is no regular file.
NOT_A_FILE = """
import json, os, sys, warnings
warnings.simplefilter("ignore")
import attn
from attn.cli import main
from attn.registry._metadata import scan
found = {}
for reader in ("fast", "reference"):
    os.environ["ATTN_READER"] = reader
    (record,) = [r for r in scan(lambda ep: True) if r.key == "plug"]
    problem = record.metadata_problem or record.entry_points_problem
    found[reader] = None if problem is None else str(problem)
os.environ.pop("ATTN_READER")
attn.AttentionBackendEnum["FLASH_ATTN"].get_path()
for command in (["list", "--json"], ["doctor"]):
    with open(os.devnull, "w") as sys.stdout:
        main(command)
sys.stdout = sys.__stdout__
print(json.dumps(found))
"""


@pytest.mark.parametrize("file", ["METADATA", "entry_points.txt"])
@pytest.mark.parametrize("kind", ["fifo", "link-to-dev-zero"])
def test_a_metadata_file_that_is_no_regular_file_is_reported_never_read(site, python, file, kind):
    """A FIFO, or a link to /dev/zero, hangs nothing: every reader and command reports it."""
    info = plugin(site, "plug", backends={"FLASH_ATTN": "plug.m:B"})
    (info / file).unlink()
    if kind == "fifo":
        os.mkfifo(info / file)
    else:
        (info / file).symlink_to("/dev/zero")
    done = subprocess.run(
        [str(python.runtime.python), "-c", NOT_A_FILE],
        capture_output=True,
        text=True,
        timeout=30,
        env=python.env(),
        check=True,
    )
    message = f"{file} cannot be read: not a regular file"
    assert json.loads(done.stdout) == {"fast": message, "reference": message}


@pytest.mark.parametrize("using", ["fast", "reference"])
@pytest.mark.parametrize("editable", [False, True], ids=["plain", "editable-elsewhere"])
def test_the_version_of_a_host_installed_twice_is_its_imported_copys(
    sites, tmp_path, monkeypatch, using, editable
):
    """The copy beside the imported code wins over the first, also over an editable one's.

    The first copy is plain, or an editable install of a project in another folder.
    """
    first, second = sites.new("first"), sites.new("second")
    info = first.dist("toy", "1.0", requires=())
    if editable:
        url = {"url": (tmp_path / "elsewhere").as_uri(), "dir_info": {"editable": True}}
        (info / "direct_url.json").write_text(json.dumps(url), encoding="utf-8")
    second.dist("toy", "2.0", requires=())
    monkeypatch.setenv("ATTN_READER", using)
    assert installed_version("toy") == "1.0"
    assert installed_version("toy", str(second.root)) == "2.0"
    assert installed_version("toy", str(first.root)) == "1.0"
