"""The discovery pipeline: de-duplication, validity, version check, controls, conflicts."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import random
import sys
import zipfile

import pytest

import attn
from attn.registry import discovery
from attn.registry._scan import DistributionRecord, EntryPointRecord, MetadataRecord, Problem
from attn.registry.codes import Code
from attn.registry.controls import read_controls
from attn.registry.discovery import (
    looks_like_typo,
    parse_entry_point_value,
    resolve_conflicts,
)
from attn.registry.errors import ClassPath, InvalidPathError, parse_path
from attn.registry.report import Finding, PluginRecord

#: attn's installed version, as messages quote it.
VERSION = attn.__version__
GROUP = "attn.backends"
MLA = "attn.mla_prefill_backends"


def eps(**names: str) -> dict[str, dict[str, str]]:
    return {GROUP: dict(names)}


def by_name(result):
    return {(p.distribution, p.name): p for p in result.plugins}


def kinds(result) -> list[str]:
    return [f.kind for f in result.findings]


# -- entry point values ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plug.mod:Backend", ClassPath("plug.mod", "Backend")),
        ("plug.mod:Outer.Inner", ClassPath("plug.mod", "Outer.Inner")),
        ("plug : Backend", ClassPath("plug", "Backend")),
        ("plug.mod:Backend [gpu, fast]", ClassPath("plug.mod", "Backend")),
        ("  plug:Backend  ", ClassPath("plug", "Backend")),
    ],
)
def test_value_is_parsed_as_importlib_metadata_does(value, expected):
    """module:attr (nested attr allowed, extras ignored) gives the class path."""
    assert parse_entry_point_value(value) == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("plug.mod", "no attribute part; expected 'module:attr'"),
        ("plug.mod:", "expected 'module:attr'"),
        (":Backend", "expected 'module:attr'"),
        ("plug mod:Backend", "expected 'module:attr'"),
        ("plug.mod:Backend:Extra", "expected 'module:attr'"),
        ("plug-mod:Backend", "expected 'module:attr'"),
        ("1plug:Backend", "'1plug' is not a dotted module name"),
        ("plug..mod:Backend", "'plug..mod' is not a dotted module name"),
        ("plug:Outer..Inner", "'Outer..Inner' is not a dotted qualified name"),
    ],
)
def test_malformed_values(value, reason):
    """A value not of the module:attr form is refused with the reason."""
    with pytest.raises(InvalidPathError) as info:
        parse_entry_point_value(value)
    assert info.value.reason == reason


# -- what one distribution provides --------------------------------------------


def test_entry_point_overrides_a_builtin(site, run_discovery):
    """An entry point named like a built-in is used for it, with its parsed path."""
    site.dist("plug", entry_points=eps(FLASH_ATTN="plug.mod:Backend"))
    (plugin,) = run_discovery().plugins
    assert (plugin.name, plugin.status, plugin.reason, plugin.path) == (
        "FLASH_ATTN",
        "used",
        None,
        ClassPath("plug.mod", "Backend"),
    )


def test_many_backends_per_distribution(site, run_discovery):
    """Every entry point of a distribution in the group is one backend, sorted by name."""
    site.dist("plug", entry_points=eps(ZETA="plug.mod:Backend", ALPHA="plug.mod:Other"))
    site.dist("unrelated", entry_points={MLA: {"CPU": "plug.mod:Prefill"}})
    result = run_discovery()
    assert [(p.name, p.status, p.value) for p in result.plugins] == [
        ("ALPHA", "used", "plug.mod:Other"),
        ("ZETA", "used", "plug.mod:Backend"),
    ]
    assert result.group == GROUP


def test_groups_are_read_separately(site, run_discovery):
    """A distribution's entry points in the other group belong to the other registry only."""
    site.dist("plug", entry_points={GROUP: {"A": "m:A"}, MLA: {"B": "m:B"}})
    assert [p.name for p in run_discovery(group=MLA).plugins] == ["B"]


def test_plugin_records_name_version_and_location(site, run_discovery):
    """A plugin row carries the distribution's Name as written, its version and folder."""
    info = site.dist("Attn.Plug", "2.5", entry_points=eps(A="m:A"))
    (plugin,) = run_discovery().plugins
    assert (plugin.distribution, plugin.distribution_key, plugin.distribution_version) == (
        "Attn.Plug",
        "attn-plug",
        "2.5",
    )
    assert plugin.location == str(info)
    assert plugin.requirements == ("attn>=0.1",)


def test_host_version_is_the_installed_attn(run_discovery):
    """The host version comes from attn's own installed metadata."""
    assert run_discovery().host_version == importlib.metadata.version("attn")


def test_no_plugins(run_discovery):
    """With no plugin installed, nothing is found and nothing is reported."""
    result = run_discovery()
    assert (result.plugins, result.conflicts, result.plugins_disabled) == ((), (), False)


# -- validity ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [  # the reason says why; the row (and its JSON) names the entry point and value
        ("my-backend", "plug.mod:Backend", "backend names must be Python identifiers"),
        ("9LIVES", "plug.mod:Backend", "backend names must be Python identifiers"),
        ("TWO WORDS", "plug.mod:Backend", "backend names must be Python identifiers"),
        ("NO_ATTR", "plug.mod", "no attribute part; expected 'module:attr'"),
        ("MALFORMED", "plug mod:Backend", "expected 'module:attr'"),
    ],
)
def test_invalid_entry_point(site, run_discovery, name, value, reason):
    """A bad name or value makes that entry point invalid, with the reason."""
    site.dist("plug", entry_points=eps(**{name: value}))
    (plugin,) = run_discovery().plugins
    assert (plugin.name, plugin.status, plugin.reason, plugin.path) == (
        name,
        "invalid",
        reason,
        None,
    )


def test_invalid_applies_to_that_entry_point_only(site, run_discovery):
    """The distribution's other entry points are still used."""
    site.dist("plug", entry_points=eps(**{"bad-name": "m:A", "NO_ATTR": "m", "GOOD": "m:A"}))
    assert {p.name: p.status for p in run_discovery().plugins} == {
        "GOOD": "used",
        "NO_ATTR": "invalid",
        "bad-name": "invalid",
    }


def test_invalid_entry_point_finding(site, run_discovery):
    """An invalid entry point is reported with how to fix it."""
    site.dist("plug", entry_points=eps(NO_ATTR="plug.mod"))
    assert run_discovery().findings == (
        Finding(
            "invalid",
            "NO_ATTR",
            "plug 1.0: entry point 'NO_ATTR' = 'plug.mod' is invalid: no attribute part; "
            "expected 'module:attr'",
            "fix plug's entry point in group 'attn.backends' to NO_ATTR = \"module:Class\" and "
            "reinstall plug, or report it to its authors",
            *("plug", "1.0", "attn.backends", "plug.mod"),  # the structured fields
        ),
    )


def test_names_are_case_sensitive(site, run_discovery):
    """flash_attn is a new backend, not FLASH_ATTN, and the near-collision is reported."""
    site.dist("plug", entry_points=eps(flash_attn="plug.mod:Backend"))
    result = run_discovery()
    assert [(p.name, p.status) for p in result.plugins] == [("flash_attn", "used")]
    assert result.findings == (
        Finding(
            "case-collision",
            "flash_attn",
            "plug 1.0 adds 'flash_attn', which differs from the built-in 'FLASH_ATTN' only "
            "by case (names are case sensitive)",
            "rename the entry point to 'FLASH_ATTN' to override the built-in",
            *("plug", "1.0", "attn.backends", "plug.mod:Backend"),
        ),
    )


def test_a_case_collision_of_a_blocked_plugin_says_declares(site, run_discovery):
    """A blocked plugin adds nothing: the note says it declares the name."""
    site.dist("plug", entry_points=eps(flash_attn="plug.mod:Backend"))
    (note,) = run_discovery({"ATTN_BLOCK_PLUGINS": "plug"}).findings
    assert note.message.startswith("plug 1.0 declares 'flash_attn', which differs from the ")


def test_a_fullwidth_name_equal_to_a_builtin_under_nfkc_gets_a_note(site, run_discovery):
    """FLASH_ATTN in fullwidth letters is a new name (names are exact), with a note saying so."""
    fullwidth = "\uff26\uff2c\uff21\uff33\uff28_\uff21\uff34\uff34\uff2e"
    site.dist("plug", entry_points=eps(**{fullwidth: "m:A"}))
    result = run_discovery()
    assert [(p.name, p.status) for p in result.plugins] == [(fullwidth, "used")]
    assert result.findings == (
        Finding(
            "case-collision",
            fullwidth,
            f"plug 1.0 adds {fullwidth!r}, which differs from the built-in 'FLASH_ATTN' only by "
            "the width or form of its characters, such as fullwidth letters (names are "
            "compared as written)",
            "rename the entry point to 'FLASH_ATTN' to override the built-in",
            *("plug", "1.0", "attn.backends", "m:A"),
        ),
    )


# -- version check -------------------------------------------------------------


def test_incompatible_distribution(site, run_discovery):
    """Every entry point of a distribution needing another attn is incompatible, not merged."""
    site.dist("plug", entry_points=eps(A="m:A", B="m:B"), requires=["attn>=9.0"])
    result = run_discovery()
    assert [(p.name, p.status, p.reason) for p in result.plugins] == [
        ("A", "incompatible", f"requires attn>=9.0, installed {VERSION}"),
        ("B", "incompatible", f"requires attn>=9.0, installed {VERSION}"),
    ]
    assert result.used == ()


def test_incompatible_finding(site, run_discovery):
    """An incompatible entry point is reported with how to fix it."""
    site.dist("plug", entry_points=eps(A="m:A"), requires=["attn>=9.0"])
    assert run_discovery().findings == (
        Finding(
            "incompatible",
            "A",
            f"plug 1.0 provides 'A' = 'm:A' but is incompatible: requires attn>=9.0, installed "
            f"{VERSION}",
            f"install a release of plug that supports attn {VERSION} (pip install --upgrade "
            "plug), or install the attn release plug requires (pip install 'attn>=9.0')",
            *("plug", "1.0", "attn.backends", "m:A"),
        ),
    )


def test_incompatible_fix_installs_every_range_of_the_plugin(site, run_discovery):
    """The pip command of the fix names every range on attn, not only the unmet ones.

    Hatchling writes ``dependencies = ["attn>=9.0", "attn<10"]`` as two Requires-Dist lines;
    ``pip install 'attn>=9.0'`` alone installs the newest attn, which the other line rules out.
    """
    site.dist("plug", entry_points=eps(A="m:A"), requires=["attn>=9.0", "attn<10", "attn<9.5"])
    (finding,) = run_discovery().findings
    assert finding.message.endswith(f"requires attn>=9.0, installed {VERSION}")
    assert finding.fix.endswith("(pip install 'attn>=9.0,<10,<9.5')")


@pytest.mark.parametrize(
    ("host_version", "requires", "wanted"),
    [(None, "toy>=2,<3", "toy<3,>=2"), ("not.a.version!", "toy>=2", "toy>=2")],
    ids=["host-not-installed", "host-version-not-pep440"],
)
def test_incompatible_finding_that_no_plugin_release_can_fix(site, host_version, requires, wanted):
    """No host, or a host whose version is no version: the fix installs the release it needs.

    No plugin release can support a host that is missing or has no PEP 440 version.
    """
    if host_version is not None:
        site.dist("toy", host_version, requires=())
    site.dist("plug", entry_points={"toy.backends": {"A": "m:A"}}, requires=[requires])
    controls = read_controls("TOY", {})
    records = discovery.scan_host("toy", ("toy.backends",), controls.reader)
    result = discovery.discover(
        group="toy.backends", host="toy", controls=controls, builtin_names=[], records=records
    )
    (finding,) = result.findings
    assert finding.fix == f"install the toy release plug requires (pip install '{wanted}')"


def test_marker_excluding_the_requirement(site, run_discovery):
    """A requirement on attn whose marker is false for this interpreter does not apply."""
    requirement = f"attn>=9.0; python_version < '{sys.version_info.major}'"
    site.dist("plug", entry_points=eps(A="m:A"), requires=[requirement])
    result = run_discovery()
    assert [(p.status, p.requirements) for p in result.plugins] == [("used", (requirement,))]
    assert result.findings == ()


def test_requirement_only_under_an_extra(site, run_discovery):
    """A requirement on attn under an extra counts as declared and does not apply."""
    site.dist("plug", entry_points=eps(A="m:A"), requires=["attn>=9.0; extra == 'host'"])
    result = run_discovery()
    assert [p.status for p in result.plugins] == ["used"]
    assert result.findings == ()


def test_undeclared_requirement_is_merged_and_reported(site, run_discovery):
    """A plugin without a requirement on attn is merged, with one finding per distribution."""
    site.dist("plug", entry_points=eps(A="m:A", B="m:B"), requires=["numpy"])
    result = run_discovery()
    assert [p.status for p in result.plugins] == ["used", "used"]
    assert result.findings == (
        Finding(
            "undeclared-requirement",
            "plug",
            "plug 1.0 declares 'A' = 'm:A', 'B' = 'm:B' but no requirement on attn, so its "
            "compatibility cannot be checked",
            "add 'attn' with a version range to plug's dependencies and reinstall plug, or report "
            "it to its authors",
            *("plug", "1.0", "attn.backends"),  # the distribution's: no entry point's value
        ),
    )


# -- de-duplication ------------------------------------------------------------


def test_distribution_in_two_sys_path_entries_counts_once(sites, run_discovery):
    """The first copy on sys.path is used; the other is reported, not discovered again."""
    first, second = sites.new("first"), sites.new("second")
    good = first.dist("plug", "2.0", entry_points=eps(A="m:New"))
    old = second.dist("plug", "1.0", entry_points=eps(A="m:Old", B="m:B"))
    result = run_discovery()
    assert [(p.name, p.value, p.distribution_version) for p in result.plugins] == [
        ("A", "m:New", "2.0")
    ]
    assert result.conflicts == ()
    assert result.findings == (
        Finding(
            "duplicate-metadata",
            "plug",
            f"plug is installed twice: 2.0 at {good} (used) and 1.0 at {old} (ignored)",
            f"delete {old}, or uninstall both copies (pip uninstall plug, twice) and reinstall",
            *("plug", "1.0"),  # the ignored copy
        ),
    )


def test_a_copy_without_a_version_is_described_in_words_not_as_none(sites, run_discovery):
    """A copy whose METADATA has no Version field: the message says so, never 'None'."""
    first, second = sites.new("first"), sites.new("second")
    bare = first.dist("plug", None, entry_points=eps(A="m:New"))
    old = second.dist("plug", "1.0", entry_points=eps(A="m:Old"))
    (finding,) = run_discovery().findings
    assert finding.message == (
        f"plug is installed twice: no version at {bare} (used) and 1.0 at {old} (ignored)"
    )


@pytest.mark.parametrize("venv", [True, False])
def test_a_distribution_in_three_sys_path_entries_is_one_finding(
    sites, run_discovery, monkeypatch, venv
):
    """Three real copies: one finding counts them and names both ignored copies."""
    first, second, third = sites.new("first"), sites.new("second"), sites.new("third")
    good = first.dist("plug", "3.0", entry_points=eps(A="m:A"))
    old, older = (
        s.dist("plug", v, entry_points=eps(A="m:A")) for s, v in ((second, "2.0"), (third, "1.0"))
    )
    monkeypatch.setattr(sys, "prefix", str(first.root) if venv else sys.base_prefix)
    assert run_discovery().findings == (
        Finding(
            "duplicate-metadata",
            "plug",
            f"plug is installed 3 times: 3.0 at {good} (used), 2.0 at {old} (ignored) "
            f"and 1.0 at {older} (ignored)",
            f"delete {old} and {older}"
            + (not venv)
            * ", or uninstall all 3 copies (pip uninstall plug, 3 times) and reinstall",
            *("plug", "2.0"),  # the first ignored copy
        ),
    )


def test_a_copy_in_a_wheel_on_sys_path_is_deleted_with_the_wheel(sites, run_discovery, monkeypatch):
    """A duplicate inside an archive on sys.path: the fix names the archive, which can go."""
    good = sites.new("first").dist("plug", "2.0", entry_points=eps(A="m:New"))
    wheel = good.parent.parent / "plug-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("plug-1.0.dist-info/METADATA", "Name: plug\nVersion: 1.0\n")
        archive.writestr("plug-1.0.dist-info/entry_points.txt", f"[{GROUP}]\nA = m:Old\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(wheel)])
    (finding,) = run_discovery().findings
    assert finding.message.endswith(f"1.0 at {wheel}/plug-1.0.dist-info/ (ignored)")
    assert finding.fix.startswith(f"delete {wheel},")  # the folder inside it cannot be deleted


def test_copies_match_by_normalized_name(sites, run_discovery):
    """Plug_Name and plug.name are one distribution."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("Plug_Name", "2.0", entry_points=eps(A="m:A"))
    second.dist("plug.name", "1.0", entry_points=eps(A="m:A"))
    result = run_discovery()
    assert [(p.distribution, p.status) for p in result.plugins] == [("Plug_Name", "used")]
    assert kinds(result) == ["duplicate-metadata"]


def test_symlinked_folder_reached_twice(sites, run_discovery):
    """A metadata folder reached through a link counts once and is not a duplicate."""
    first, second = sites.new("first"), sites.new("second")
    info = first.dist("plug", entry_points=eps(A="m:A"))
    (second.root / info.name).symlink_to(info)
    importlib.invalidate_caches()
    result = run_discovery()
    assert [(p.name, p.status) for p in result.plugins] == [("A", "used")]
    assert result.findings == ()


def test_symlinked_sys_path_entry(sites, run_discovery, monkeypatch, tmp_path):
    """A sys.path entry that is a link to another one (lib64 -> lib) counts once."""
    site = sites.new("lib")
    site.dist("plug", entry_points=eps(A="m:A"))
    link = tmp_path / "lib64"
    link.symlink_to(site.root)
    monkeypatch.syspath_prepend(str(link))
    result = run_discovery()
    assert [(p.name, p.status) for p in result.plugins] == [("A", "used")]
    assert result.findings == ()


def test_egg_info_beside_dist_info(site, run_discovery):
    """An .egg-info beside a .dist-info of one distribution counts once and is reported."""
    site.dist("plug", "1.0", entry_points=eps(A="m:FromDistInfo"))
    site.dist("plug", "0.9", entry_points=eps(A="m:FromEggInfo"), folder="plug.egg-info")
    result = run_discovery()
    used = importlib.metadata.distribution("plug")
    (plugin,) = result.plugins
    assert (plugin.distribution_version, plugin.status) == (used.version, "used")
    assert kinds(result) == ["duplicate-metadata"]


def editable_install(sites, egg_version="1.0", *, inside=True, editable=True):
    """`pip install -e .` of a setuptools src layout: a dist-info, and an egg-info in src/.

    Not *editable*: `pip install .`, whose build leaves the same egg-info in src/.
    """
    site_packages, src = sites.new("site-packages"), sites.new("proj/src")
    info = site_packages.dist("plug", "1.0", entry_points=eps(A="m:A"))
    project = src.root.parent if inside else src.root.parent / "elsewhere"
    url = {"url": project.as_uri(), "dir_info": {"editable": True} if editable else {}}
    (info / "direct_url.json").write_text(json.dumps(url), encoding="utf-8")
    src.dist("plug", egg_version, entry_points=eps(A="m:A"), folder="plug.egg-info")
    return info


def test_egg_info_of_an_editable_install_is_not_a_second_copy(sites, run_discovery):
    """The egg-info setuptools leaves in the editable project's src/ is the same install."""
    info = editable_install(sites)
    result = run_discovery()
    assert [(p.name, p.status, p.location) for p in result.plugins] == [("A", "used", str(info))]
    assert result.findings == ()


def test_egg_info_a_build_leaves_in_the_installed_project_is_not_a_second_copy(
    sites, run_discovery
):
    """`pip install .` of a setuptools project: its build's egg-info there is that install."""
    info = editable_install(sites, editable=False)
    result = run_discovery()
    assert [(p.name, p.status, p.location) for p in result.plugins] == [("A", "used", str(info))]
    assert result.findings == ()


def test_egg_info_first_on_sys_path_in_the_installed_project_is_used_and_not_reported(
    sites, run_discovery
):
    """Run from the project folder (a flat layout, python -m pytest): its egg-info comes
    first, as importlib.metadata reads it, and it is still the one install."""
    project, site_packages = sites.new("proj"), sites.new("site-packages")
    egg = project.dist("plug", "1.0", entry_points=eps(A="m:A"), folder="plug.egg-info")
    info = site_packages.dist("plug", "1.0", entry_points=eps(A="m:A"))
    url = {"url": project.root.as_uri(), "dir_info": {}}
    (info / "direct_url.json").write_text(json.dumps(url), encoding="utf-8")
    result = run_discovery()
    assert importlib.metadata.distribution("plug").locate_file("") == project.root
    assert [(p.status, p.location) for p in result.plugins] == [("used", str(egg))]
    assert result.findings == ()


def test_egg_info_of_another_version_in_the_editable_source_is_reported(sites, run_discovery):
    """A stale egg-info (another version) in the editable project is still a second copy."""
    editable_install(sites, egg_version="0.9")
    assert kinds(run_discovery()) == ["duplicate-metadata"]


def test_egg_info_outside_the_editable_project_is_reported(sites, run_discovery):
    """An egg-info that is not in the editable install's project folder is a second copy."""
    editable_install(sites, inside=False)
    assert kinds(run_discovery()) == ["duplicate-metadata"]


@pytest.mark.parametrize("direct_url", [None, "[]", '{"dir_info": []}', "{not json"])
def test_egg_info_beside_an_install_that_is_not_editable_is_reported(
    sites, run_discovery, direct_url
):
    """Without a PEP 610 editable record (none, or not the JSON object it should be),
    an egg-info in another folder is a second copy, never an error."""
    info = editable_install(sites)
    target = info / "direct_url.json"
    if direct_url is None:
        target.unlink()
    else:
        target.write_text(direct_url, encoding="utf-8")
    result = run_discovery()
    assert [(p.name, p.status, p.location) for p in result.plugins] == [("A", "used", str(info))]
    assert kinds(result) == ["duplicate-metadata"]


def test_empty_metadata_folder_does_not_win(sites, run_discovery):
    """An empty copy first on sys.path loses to a good copy, and is reported."""
    first, second = sites.new("first"), sites.new("second")
    empty = first.dist("plug", entry_points=eps(A="m:Stale"), metadata=False)
    good = second.dist("plug", "1.0", entry_points=eps(A="m:Good"))
    result = run_discovery()
    assert [(p.value, p.location) for p in result.plugins] == [("m:Good", str(good))]
    assert result.findings == (
        Finding(
            "empty-metadata",
            "plug",
            f"plug: the metadata copy at {empty} cannot be used "
            f"(no METADATA or PKG-INFO file, or an empty one); attn uses {good}",
            f"delete {empty} (left behind by an interrupted install)",
            "plug",
        ),
    )


def test_empty_metadata_folder_alone_is_listed_invalid(site, run_discovery):
    """A lone empty metadata folder with entry points is not merged: its rows are invalid."""
    empty = site.dist("plug", entry_points=eps(A="m:A"), metadata=False)
    result = run_discovery()
    assert result.used == ()
    reason = (
        "the distribution's metadata cannot be read: no METADATA or PKG-INFO file, or an empty one"
    )
    assert [(p.name, p.status, p.reason) for p in result.plugins] == [("A", "invalid", reason)]
    assert result.findings == (
        Finding(
            "unreadable-metadata",
            "A",
            f"plug declares 'A' = 'm:A', but {reason}",
            f"delete {empty} (left behind by an interrupted install), or reinstall plug",
            *("plug", None, "attn.backends", "m:A"),
        ),
    )


@pytest.mark.parametrize("beside", [False, True], ids=["alone", "beside-a-good-copy"])
def test_a_copy_with_broken_files_is_reinstalled_or_deleted(sites, run_discovery, beside):
    """METADATA that is not UTF-8: alone, reinstall (or report it); beside a good copy, delete."""
    broken = sites.new("broken").dist("plug", entry_points=eps(A="m:A"))
    (broken / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: plug\nSummary: caf\xe9\n")
    if beside:
        sites.new("good").dist("plug", "1.0", entry_points=eps(A="m:A"))
    reinstall = (
        f"delete {broken} and reinstall plug (pip install --force-reinstall --no-deps plug); "
        "if the new copy is broken too, report it to plug's authors"
    )
    fixes = [f.fix for f in run_discovery().findings]
    assert fixes == [f"delete {broken}" if beside else reinstall]


def test_the_reinstall_a_fix_gives_keeps_the_version_and_the_dependencies(site, run_discovery):
    """A bare ``pip install --force-reinstall plug`` upgrades plug, and attn with it, if it can."""
    broken = site.dist("plug", "1.0", entry_points=eps(A="m:A"))
    (broken / "entry_points.txt").write_bytes(b"[attn.backends]\nA\xff = m:A\n")
    (fix,) = [f.fix for f in run_discovery().findings]
    assert "(pip install --force-reinstall --no-deps 'plug==1.0');" in fix


def test_a_copy_denied_to_the_user_is_made_readable(tmp_path):
    """METADATA that permission denies (as a root install under umask 077 leaves): chmod it."""
    denied = MetadataRecord("plug", None, problem=Problem(Code.PERMISSION_DENIED, "METADATA"))
    where = str(tmp_path / "plug-1.0.dist-info")
    declared = (EntryPointRecord(GROUP, "A", "m:A"),)
    record = DistributionRecord("plug", where, 0, str(tmp_path), declared, denied)
    result = discovery.discover(
        group=GROUP,
        host="attn",
        controls=read_controls("ATTN", {}),
        builtin_names=[],
        records=[record],
    )
    assert [(f.kind, f.fix) for f in result.findings] == [
        ("unreadable-metadata", f"make {where} readable (chmod -R a+rX {where}), or reinstall plug")
    ]


SCRIPTS = {"console_scripts": {"tool": "tool.cli:main"}}


@pytest.mark.parametrize("venv", [True, False])
def test_uninstalling_twice_is_offered_only_where_pip_uninstalls(
    sites, run_discovery, monkeypatch, venv
):
    """pip leaves copies outside the virtualenv it runs in: then the fix is to delete one."""
    first, second = sites.new("first"), sites.new("second")
    for site, version in ((first, "2.0"), (second, "1.0")):
        site.dist("plug", version, entry_points=eps(A="m:A"))
    monkeypatch.setattr(sys, "prefix", str(first.root) if venv else sys.base_prefix)
    (finding,) = run_discovery().findings
    assert finding.fix == f"delete {second.root / 'plug-1.0.dist-info'}" + (not venv) * (
        ", or uninstall both copies (pip uninstall plug, twice) and reinstall"
    )


def test_pips_stash_of_a_copy_it_replaces_is_not_installed(site, run_discovery):
    """``~lug-1.0.dist-info``, pip's stash during an upgrade (or after a killed one): ignored."""
    site.dist("plug", "2.0", entry_points=eps(A="m:A"))
    site.dist("plug", "1.0", entry_points=eps(A="m:A"), folder="~lug-1.0.dist-info")
    result = run_discovery()
    assert [(p.distribution_version, p.status) for p in result.plugins] == [("2.0", "used")]
    assert result.findings == ()


def test_a_second_copy_of_a_distribution_that_is_no_plugin_is_a_note(sites, run_discovery):
    """Copies of a distribution with entry points in other groups only are a note, saying so."""
    first, second = sites.new("first"), sites.new("second")
    good = first.dist("tool", "2.0", entry_points=SCRIPTS)
    old = second.dist("tool", "1.0", entry_points=SCRIPTS)
    empty = second.dist("tool", "0.5", entry_points=SCRIPTS, metadata=False)
    result = run_discovery()
    assert result.plugins == ()
    assert result.findings == (
        Finding(
            "non-plugin-copy",
            "tool",
            f"tool is installed twice: 2.0 at {good} (used) and 1.0 at {old} (ignored); it "
            "declares no entry point in the registry's groups, so no backend comes from it",
            f"nothing to do for attn; to tidy up, delete {old}, or uninstall both copies "
            "(pip uninstall tool, twice) and reinstall",
            *("tool", "1.0"),
        ),
        Finding(
            "non-plugin-copy",
            "tool",
            f"tool: the metadata copy at {empty} cannot be used (no METADATA or PKG-INFO file, or "
            "an empty one); "
            f"attn uses {good}; it declares no entry point in the registry's groups, so no "
            "backend comes from it",
            f"nothing to do for attn; to tidy up, delete {empty} (left behind by an "
            "interrupted install)",
            "tool",
        ),
    )
    assert not any(f.is_problem for f in result.findings)


@pytest.mark.parametrize("group", [GROUP, "attn.backend"], ids=["its-group", "a-typo-of-it"])
def test_a_second_copy_of_a_plugin_distribution_stays_a_problem(sites, run_discovery, group):
    """A plugin declaring entry points in the group, or in a typo of it, installed twice."""
    first, second = sites.new("first"), sites.new("second")
    for site, version in ((first, "2.0"), (second, "1.0")):
        site.dist("plug", version, entry_points={group: {"A": "m:A"}, **SCRIPTS})
    assert "duplicate-metadata" in kinds(run_discovery())


@pytest.mark.parametrize(("here", "there"), [(GROUP, MLA), (MLA, GROUP)])
def test_a_second_copy_of_a_sibling_registrys_plugin_is_that_registrys_problem(
    sites, run_discovery, here, there
):
    """Copies of a plugin of the other registry only are reported there, not here."""
    first, second = sites.new("first"), sites.new("second")
    for site, version in ((first, "2.0"), (second, "1.0")):
        site.dist("plug", version, entry_points={there: {"A": "m:A"}})
    assert kinds(run_discovery(group=here)) == []
    assert kinds(run_discovery(group=there)) == ["duplicate-metadata"]


def test_a_second_copy_of_the_host_is_a_problem(sites, run_discovery):
    """The host itself installed twice (a stale attn copy) is a problem for every registry."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("attn", VERSION, requires=())
    second.dist("attn", "0.0.5", requires=())
    found = run_discovery().findings
    assert {f.kind for f in found} == {"duplicate-metadata"}
    assert all(f.is_problem for f in found)


def test_a_host_without_entry_points_installed_twice_is_a_problem(sites):
    """A host that declares no entry point at all (no console script) found twice."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("toy", "2.0", requires=())
    old = second.dist("toy", "1.0", requires=())
    controls = read_controls("TOY", {})
    records = discovery.scan_host("toy", ("toy.backends",), controls.reader)
    result = discovery.discover(
        group="toy.backends", host="toy", controls=controls, builtin_names=[], records=records
    )
    assert [(f.kind, f.subject, f.fix.split(",")[0]) for f in result.findings] == [
        ("duplicate-metadata", "toy", f"delete {old}")
    ]


def test_a_second_copy_with_unreadable_entry_points_is_a_problem(sites, run_discovery):
    """Two copies, the first with an entry_points.txt Python cannot read: both are reported."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("plug", "2.0", raw_entry_points=f"[{GROUP}]\nno equals sign here\n")
    second.dist("plug", "1.0")
    assert kinds(run_discovery()) == ["duplicate-metadata", "unreadable-metadata"]


def test_unreadable_entry_points_are_reported(site, run_discovery):
    """A distribution whose entry_points.txt cannot be read is reported."""
    info = site.dist("plug", raw_entry_points=f"[{GROUP}]\nno equals sign here\n")
    result = run_discovery()
    assert result.plugins == ()
    (finding,) = result.findings
    assert (finding.kind, finding.subject, finding.distribution, finding.version) == (
        "unreadable-metadata",
        "plug",
        "plug",
        "1.0",
    )
    assert finding.message.startswith("plug 1.0: entry_points.txt cannot be read: line 2 has ")
    assert finding.message.endswith(f"(at {info}); any backend it declares is not in effect")


def test_entries_before_a_header_say_only_those_are_lost(site, run_discovery):
    """A stray line above the first header: Python reads the rest, and the finding says so."""
    info = site.dist("plug", raw_entry_points=f"STRAY = a:A\n[{GROUP}]\nKEPT = a:A\n")
    result = run_discovery()
    assert [(p.name, p.status) for p in result.plugins] == [("KEPT", "used")]
    (finding,) = result.findings
    assert finding.kind == "unreadable-metadata"
    assert finding.message == (
        "plug 1.0: entry_points.txt has entries before any [group] header (first: 'STRAY = a:A'); "
        f"Python (importlib.metadata) reads none of them (at {info}); those entries are not in "
        "effect"
    )


# -- conflicts -----------------------------------------------------------------


@pytest.mark.parametrize("install_order", [("alpha", "Zed"), ("Zed", "alpha")])
def test_conflict_in_one_site_goes_to_the_smaller_normalized_name(
    site, run_discovery, install_order
):
    """In one sys.path entry, the smaller normalized name wins, whatever the install order."""
    for name in install_order:
        site.dist(name, entry_points=eps(FLASH_ATTN=f"{name.lower()}:Backend"))
    result = run_discovery()
    assert {p.distribution: p.status for p in result.plugins} == {
        "alpha": "used",
        "Zed": "shadowed",
    }
    assert by_name(result)[("Zed", "FLASH_ATTN")].reason == (
        "'FLASH_ATTN' is also provided by alpha 1.0, which wins "
        "(same sys.path entry, name sorts first)"
    )


@pytest.mark.parametrize("first_name", ["alpha", "zed"])
def test_conflict_across_sites_goes_to_the_earlier_on_sys_path(sites, run_discovery, first_name):
    """Across sys.path entries the earlier entry wins, whatever the names."""
    second_name = "zed" if first_name == "alpha" else "alpha"
    first, second = sites.new("first"), sites.new("second")
    second.dist(second_name, entry_points=eps(X=f"{second_name}:Backend"))
    first.dist(first_name, entry_points=eps(X=f"{first_name}:Backend"))
    result = run_discovery()
    assert {p.distribution: p.status for p in result.plugins} == {
        first_name: "used",
        second_name: "shadowed",
    }
    assert by_name(result)[(second_name, "X")].reason == (
        f"'X' is also provided by {first_name} 1.0, which wins (earlier on sys.path)"
    )


def test_conflict_record_names_every_claimant_winner_first(site, run_discovery):
    """A conflict lists all claimants, the winner first; the finding says how to choose."""
    for name in ("c-plug", "a-plug", "b-plug"):
        site.dist(name, entry_points=eps(X=f"{name[0]}:Backend"))
    result = run_discovery()
    (conflict,) = result.conflicts
    assert conflict.name == "X"
    assert [(c.distribution, c.status) for c in conflict.claimants] == [
        ("a-plug", "used"),
        ("b-plug", "shadowed"),
        ("c-plug", "shadowed"),
    ]
    assert result.findings == (
        Finding(
            "shadowed",
            "X",
            "'X' is provided by 3 distributions (a-plug 1.0: 'a:Backend', b-plug 1.0: 'b:Backend', "
            "c-plug 1.0: 'c:Backend'); a-plug 1.0 wins (same sys.path entry, name sorts first)",
            "choose the winner with ATTN_PREFER (nothing else changes): export ATTN_PREFER=a-plug "
            "keeps a-plug, export ATTN_PREFER=b-plug,c-plug makes b-plug win; "
            "or uninstall all but one",
            *("a-plug", "1.0", "attn.backends", "a:Backend"),  # the winner
        ),
    )


def test_a_preferred_winner_is_a_note_about_it(site, run_discovery):
    """ATTN_PREFER choosing the winner: a note with the winner's distribution and value."""
    for name in ("a-plug", "b-plug"):
        site.dist(name, entry_points=eps(X=f"{name[0]}:Backend"))
    (note,) = run_discovery({"ATTN_PREFER": "b-plug"}).findings
    assert (note.kind, note.subject, note.is_problem) == ("preferred", "X", False)
    assert (note.distribution, note.version, note.group, note.value) == (
        "b-plug",
        "1.0",
        GROUP,
        "b:Backend",
    )
    assert note.message.endswith("b-plug 1.0 wins, as ATTN_PREFER asks")


def test_a_preferred_winner_is_listed_first(site, run_discovery):
    """The plugins of a name come in the conflict's order, ATTN_PREFER's winner first."""
    for name in ("a-plug", "b-plug", "c-plug"):
        site.dist(name, entry_points=eps(X=f"{name[0]}:Backend"))
    result = run_discovery({"ATTN_PREFER": "c-plug,b-plug"})
    rows = [(p.distribution, p.status) for p in result.plugins]
    assert rows == [("c-plug", "used"), ("b-plug", "shadowed"), ("a-plug", "shadowed")]
    assert [p.distribution for p in result.conflicts[0].claimants] == [d for d, _ in rows]


@pytest.mark.parametrize(
    ("controls", "rows"),
    [
        ({"ATTN_PLUGINS": "c-plug"}, ["c-plug used", "a-plug disabled", "b-plug disabled"]),
        (
            {"ATTN_BLOCK_PLUGINS": "a-plug", "ATTN_PREFER": "a-plug"},
            ["b-plug used", "a-plug disabled", "c-plug shadowed"],
        ),
    ],
)
def test_the_claimant_in_effect_comes_first_when_the_controls_leave_out_better_ranked_ones(
    site, run_discovery, controls, rows
):
    """A left-out claimant ranked before the one used comes after it (winner first)."""
    for name in ("a-plug", "b-plug", "c-plug"):
        site.dist(name, entry_points=eps(X=f"{name[0]}:Backend"))
    result = run_discovery(controls)
    assert [f"{p.distribution} {p.status}" for p in result.plugins] == rows


def test_only_eligible_entry_points_conflict(site, run_discovery):
    """An incompatible or invalid claimant does not shadow, nor is it shadowed."""
    site.dist("a-incompatible", entry_points=eps(X="a:X"), requires=["attn>=9"])
    site.dist("b-invalid", entry_points=eps(X="b"))
    site.dist("c-good", entry_points=eps(X="c:X"))
    result = run_discovery()
    assert {p.distribution: p.status for p in result.plugins} == {
        "a-incompatible": "incompatible",
        "b-invalid": "invalid",
        "c-good": "used",
    }
    assert result.conflicts == ()


def test_a_name_declared_twice_by_one_distribution_is_reported_to_its_authors(site, run_discovery):
    """One distribution declaring a name twice: the first declaration is used, and said so."""
    site.dist("plug", raw_entry_points=f"[{GROUP}]\nA = m:First\nA = m:Second\n")
    result = run_discovery()
    assert [(p.value, p.status) for p in result.plugins] == [
        ("m:First", "used"),
        ("m:Second", "shadowed"),
    ]
    assert result.findings == (
        Finding(
            "shadowed",
            "A",
            "plug 1.0 declares 'A' 2 times ('m:First', 'm:Second'); only the first ('m:First') "
            "counts",
            "remove the other declarations of 'A' from plug's entry points in group "
            "'attn.backends' and reinstall plug, or report it to its authors",
            *("plug", "1.0", "attn.backends", "m:First"),
        ),
    )


@pytest.mark.parametrize("prefer", ["", "plug", "zed"])
def test_a_name_declared_twice_besides_another_claimant_is_reported_too(
    site, run_discovery, prefer
):
    """A conflict, chosen by ATTN_PREFER or not, does not hide one claimant declaring it twice."""
    site.dist("plug", raw_entry_points=f"[{GROUP}]\nA = m:First\nA = m:Second\n")
    site.dist("zed", entry_points=eps(A="z:B"))
    findings = run_discovery({"ATTN_PREFER": prefer}).findings
    assert [(f.kind, f.distribution) for f in findings] == [
        ("preferred" if prefer else "shadowed", prefer or "plug"),
        ("shadowed", "plug"),
    ]
    assert findings[1].message == (
        "plug 1.0 declares 'A' 2 times ('m:First', 'm:Second'); only the first ('m:First') counts"
    )


def test_a_conflict_names_each_distributions_first_declaration_only(site, run_discovery):
    """The conflict counts distributions: their later declarations are the own finding's.

    It listed 'm:Second' as a claimant of its own and said plug won because 'declared first',
    which is why m:First beats m:Second (the other finding), not why plug beats zed.
    """
    site.dist("plug", raw_entry_points=f"[{GROUP}]\nA = m:First\nA = m:Second\n")
    site.dist("zed", entry_points=eps(A="z:B"))
    conflict, own = run_discovery().findings
    assert conflict.message == (
        "'A' is provided by 2 distributions (plug 1.0: 'm:First', zed 1.0: 'z:B'); plug 1.0 wins "
        "(same sys.path entry, name sorts first)"
    )
    assert own.message.startswith("plug 1.0 declares 'A' 2 times ('m:First', 'm:Second')")


def test_an_invalid_first_declaration_keeps_the_later_ones_out(site, run_discovery):
    """The first declaration counts even when it is invalid: a later one never wins silently."""
    site.dist("plug", raw_entry_points=f"[{GROUP}]\nA = m\nA = m:Second\n")
    result = run_discovery()
    assert [(p.value, p.status, p.code) for p in result.plugins] == [
        ("m", "invalid", Code.INVALID_VALUE),
        ("m:Second", "shadowed", Code.SHADOWED),
    ]
    assert result.plugins[1].reason == (
        "'A' is declared first with an invalid value; only that one counts"
    )
    assert [f.kind for f in result.findings] == [Code.INVALID]


def test_resolve_conflicts_keeps_declaration_order_within_a_distribution():
    """One distribution declaring a name twice keeps the first declaration."""

    def record(value: str) -> PluginRecord:
        return PluginRecord(
            name="X",
            value=value,
            distribution="plug",
            distribution_key="plug",
            distribution_version="1.0",
            location="/site/plug-1.0.dist-info",
            path_index=0,
            requirements=(),
            status="used",
            reason=None,
            path=parse_entry_point_value(value),
        )

    controls = read_controls("ATTN", {})
    resolved, conflicts = resolve_conflicts([record("m:First"), record("m:Second")], controls)
    assert [(p.value, p.status) for p in resolved] == [
        ("m:First", "used"),
        ("m:Second", "shadowed"),
    ]
    assert resolved[1].reason == "'X' is also provided by plug 1.0, which wins (declared first)"
    assert len(conflicts) == 1


# -- controls ------------------------------------------------------------------


def test_disable_plugins(site, run_discovery):
    """ATTN_DISABLE_PLUGINS=1 discovers no plugin and says plugins are disabled."""
    site.dist("plug", entry_points=eps(A="m:A"))
    result = run_discovery({"ATTN_DISABLE_PLUGINS": "1"})
    assert (result.plugins, result.plugins_disabled, result.findings) == ((), True, ())


def test_disable_plugins_does_not_scan(site, run_discovery, metadata_reads):
    """With plugins disabled, installed metadata is not read at all; enabled, it is."""
    site.dist("plug", entry_points=eps(A="m:A"))
    assert run_discovery({"ATTN_DISABLE_PLUGINS": "1"}).plugins_disabled
    assert metadata_reads == []
    assert [p.distribution for p in run_discovery().plugins] == ["plug"]
    assert len(metadata_reads) > 0


def test_disable_plugins_wins_over_selection(site, run_discovery):
    """ATTN_DISABLE_PLUGINS wins over ATTN_PLUGINS."""
    site.dist("plug", entry_points=eps(A="m:A"))
    result = run_discovery({"ATTN_DISABLE_PLUGINS": "true", "ATTN_PLUGINS": "plug"})
    assert (result.plugins, result.plugins_disabled) == ((), True)


@pytest.mark.parametrize(
    "selection", ["attn-plug-a", "Attn_Plug_A", "attn.plug.a", "x, ATTN-plug-a"]
)
def test_selection(site, run_discovery, selection):
    """ATTN_PLUGINS merges only the named distributions (pip-normalized); others are disabled."""
    site.dist("attn-plug-a", entry_points=eps(A="a:A"))
    site.dist("attn-plug-b", entry_points=eps(B="b:B"))
    result = run_discovery({"ATTN_PLUGINS": selection})
    assert {p.name: p.status for p in result.plugins} == {"A": "used", "B": "disabled"}
    assert by_name(result)[("attn-plug-b", "B")].reason == (
        f"not selected by ATTN_PLUGINS={','.join(s.strip() for s in selection.split(','))}"
    )


def test_selection_resolves_a_conflict(site, run_discovery):
    """Selecting the losing claimant makes it the only one, without a conflict."""
    site.dist("alpha", entry_points=eps(X="a:X"))
    site.dist("zed", entry_points=eps(X="z:X"))
    result = run_discovery({"ATTN_PLUGINS": "zed"})
    assert {p.distribution: p.status for p in result.plugins} == {
        "alpha": "disabled",
        "zed": "used",
    }
    assert result.conflicts == ()


def test_empty_selection_is_unset(site, run_discovery):
    """An empty ATTN_PLUGINS selects everything."""
    site.dist("plug", entry_points=eps(A="m:A"))
    assert [p.status for p in run_discovery({"ATTN_PLUGINS": ""}).plugins] == ["used"]


def test_unmatched_selection_is_reported_with_the_valid_names(site, run_discovery):
    """A selected name that matches no plugin distribution is reported, listing the valid ones."""
    site.dist("attn-plug-b", entry_points=eps(B="b:B"))
    site.dist("Attn-Plug-A", entry_points={MLA: {"A": "a:A"}})
    site.dist("unrelated", entry_points={"console_scripts": {"u": "u:main"}})
    result = run_discovery({"ATTN_PLUGINS": "attn-plug-b,nope"})
    assert [f for f in result.findings if f.kind == "unmatched-selection"] == [
        Finding(
            "unmatched-selection",
            "nope",
            "ATTN_PLUGINS names 'nope', which is not an installed attn plugin distribution",
            "use one of: Attn-Plug-A, attn-plug-b",
        )
    ]


@pytest.mark.parametrize("variable", ["ATTN_PLUGINS", "ATTN_PREFER"])
def test_a_selection_matches_the_name_field_not_the_folder(site, run_discovery, variable):
    """The Name of a copy whose folder is named otherwise is what selects it, and what matches."""
    site.dist("other-plugin", folder="zzz-2.0.dist-info", entry_points=eps(A="o:A"))
    result = run_discovery({variable: "other-plugin"})
    assert [p.status for p in result.plugins] == ["used"]
    assert [f for f in result.findings if f.kind == "unmatched-selection"] == []
    result = run_discovery({variable: "zzz"})
    assert [f.subject for f in result.findings if f.kind == "unmatched-selection"] == ["zzz"]


def test_an_unmatched_selection_lists_each_valid_name_once(site, run_discovery):
    """A distribution with several entry points (here in a misspelt group) is named once."""
    site.dist("plug", entry_points={"attn.backend": {"A": "m:A", "B": "m:B"}, **eps(C="m:C")})
    result = run_discovery({"ATTN_PLUGINS": "nope"})
    fixes = [f.fix for f in result.findings if f.kind == "unmatched-selection"]
    assert fixes == ["use one of: plug"]


def test_an_unmatched_selection_without_plugins_says_none_is_installed(run_discovery):
    """With no plugin installed, the fix says so, and to unset the variable (doctor then passes)."""
    (finding,) = run_discovery({"ATTN_PLUGINS": "nosuchdist"}).findings
    fix = "unset ATTN_PLUGINS (none installed)"
    assert (finding.kind, finding.fix) == ("unmatched-selection", fix)
    assert run_discovery({"ATTN_PLUGINS": ""}).findings == ()


@pytest.mark.parametrize("written", ["nosuchdist", "beta alpha", "beta==1.0"])
def test_a_preference_that_matches_no_plugin_is_reported(site, run_discovery, written):
    """An ATTN_PREFER name that is no installed plugin distribution is a finding too."""
    site.dist("alpha", entry_points=eps(A="a:A"))
    site.dist("beta", entry_points=eps(A="b:A"))
    result = run_discovery({"ATTN_PREFER": f"alpha,{written}"})
    assert [f for f in result.findings if f.kind == "unmatched-selection"] == [
        Finding(
            "unmatched-selection",
            written,
            f"ATTN_PREFER names {written!r}, which is not an installed attn plugin distribution",
            "remove the names that match nothing (export ATTN_PREFER=alpha), "
            "or put one of these in its place: alpha, beta",
        )
    ]


def test_a_preference_without_plugins_is_removed(run_discovery):
    """With no plugin installed, the fix for an ATTN_PREFER name is to unset the variable."""
    (finding,) = run_discovery({"ATTN_PREFER": "nosuchdist, other"}).findings[:1]
    assert (finding.kind, finding.fix) == (
        "unmatched-selection",
        "remove the names that match nothing (unset ATTN_PREFER)",
    )


def test_a_conflict_fix_quotes_a_preference_a_shell_would_split(site, run_discovery):
    """ATTN_PREFER='beta alpha' (a space for a comma) set: the values to paste are quoted."""
    for name in ("a-plug", "b-plug"):
        site.dist(name, entry_points=eps(X=f"{name[0]}:Backend"))
    (shadowed,) = (
        f for f in run_discovery({"ATTN_PREFER": "beta alpha"}).findings if f.kind == "shadowed"
    )
    assert shadowed.fix == (
        "choose the winner with ATTN_PREFER (nothing else changes): "
        "export ATTN_PREFER='beta alpha,a-plug' keeps a-plug, "
        "export ATTN_PREFER='beta alpha,b-plug' makes b-plug win; or uninstall all but one"
    )


def test_selecting_the_host_itself_is_unmatched(site, run_discovery):
    """attn is not a plugin of itself: ATTN_PLUGINS=attn matches nothing."""
    site.dist("attn", VERSION, entry_points=eps(OWN="attn.x:Y"), requires=())
    site.dist("attn-plug-b", entry_points=eps(B="b:B"))
    result = run_discovery({"ATTN_PLUGINS": "attn"})
    assert [f.subject for f in result.findings if f.kind == "unmatched-selection"] == ["attn"]


# -- status precedence ---------------------------------------------------------


@pytest.mark.parametrize(
    ("selected", "requires", "value", "status"),
    [
        (False, "attn>=9", "m", "disabled"),
        (False, "attn>=0.1", "m:A", "disabled"),
        (True, "attn>=9", "m", "incompatible"),
        (True, "attn>=9", "m:A", "incompatible"),
        (True, "attn>=0.1", "m", "invalid"),
        (True, "attn>=0.1", "m:A", "used"),
    ],
)
def test_status_precedence(site, run_discovery, selected, requires, value, status):  # noqa: PLR0917
    """disabled, then incompatible, then invalid, then shadowed or used."""
    site.dist("plug", entry_points=eps(A=value), requires=[requires])
    site.dist("other", entry_points=eps(O="o:O"))
    result = run_discovery({"ATTN_PLUGINS": "plug" if selected else "other"})
    assert by_name(result)[("plug", "A")].status == status


def test_shadowed_comes_after_invalid(site, run_discovery):
    """An invalid entry point is invalid even when another distribution claims its name."""
    site.dist("alpha", entry_points=eps(X="a"))
    site.dist("zed", entry_points=eps(X="z:X"))
    assert {p.distribution: p.status for p in run_discovery().plugins} == {
        "alpha": "invalid",
        "zed": "used",
    }


# -- typo'd groups ---------------------------------------------------------------


#: Near misses of attn's own group name.
TYPOS = ["attn.backend", "attn_backends", "attn-backends", "Attn.Backends", "atn.backends"]
#: Other projects' groups, which only look alike: torch and triton are in every vLLM install.
OTHER_PROJECTS = ["triton.backends", "torch.backends", "jax.backends", "keras.backends"]


@pytest.mark.parametrize(
    ("candidate", "typo"),
    [
        *((group, True) for group in TYPOS),
        ("attnbackends", True),
        ("attn.backendz", True),
        ("atn.backend", True),  # one edit in the project, one after it
        *((group, False) for group in OTHER_PROJECTS),
        ("attn.backends", False),
        ("console_scripts", False),
        ("attn.mla_prefill_backends", False),
        ("attention.backends", False),
        ("attn-ext.backends", False),
        ("vllm.attn_backends", False),
    ],
)
def test_looks_like_typo(candidate, typo):
    """Near misses of the host's group are typos; its other groups, other projects' are not."""
    assert looks_like_typo(candidate, GROUP) is typo


@pytest.mark.parametrize(
    ("candidate", "typo"), [("tinyhost.kernels.xyz", True), ("tinyhost.kernels.wxyz", False)]
)
def test_the_typo_threshold_includes_its_bound(candidate, typo):
    """A close spelling exactly at the threshold (ratio 0.85) is a typo; one just below is not."""
    assert looks_like_typo(candidate, "tinyhost.kernels.abc") is typo


def test_a_project_part_two_edits_away_is_another_project():
    """Two letters changed in the project part: another project's group, however alike."""
    assert looks_like_typo("tixxhost.kernels", "tinyhost.kernels") is False
    assert looks_like_typo("tinhyost.kernels", "tinyhost.kernels") is True  # one swap
    assert looks_like_typo("xinyhoat.kernels", "tinyhost.kernels") is False  # the first and one


def test_a_sibling_registrys_group_is_no_typo_however_alike(site):
    """Entry points in a sibling registry's group are that registry's, not a misspelling."""
    site.dist("plug", entry_points={"toy.backend": {"A": "m:A"}})
    controls, groups = read_controls("TOY", {}), ("toy.backends", "toy.backend")
    result = discovery.discover(
        group="toy.backends",
        host="toy",
        controls=controls,
        builtin_names=[],
        sibling_groups=groups,
        records=discovery.scan_host("toy", groups, controls.reader),
    )
    assert (result.findings, result.misgrouped) == ((), ())


def test_the_hosts_own_entry_points_are_not_plugins(sites, run_discovery):
    """Entry points the host distribution itself declares in its group are never plugins."""
    own = sites.new("host")
    own.dist("attn", VERSION, entry_points=eps(OWN="attn.own:B"), requires=())
    sites.new("plugins").dist("plug", entry_points=eps(PLUG="plug.m:B"))
    assert [p.name for p in run_discovery().plugins] == ["PLUG"]


@pytest.mark.parametrize("group", TYPOS)
def test_typo_group_is_reported(site, run_discovery, group):
    """A near miss of attn's group is reported with the distribution, version and names."""
    site.dist("plug", "2.1", entry_points={group: {"A": "m:A", "B": "m:B"}})
    result = run_discovery()
    assert result.plugins == ()
    assert result.findings == (
        Finding(
            "typo-group",
            "plug",
            f"plug 2.1 declares 'A' = 'm:A', 'B' = 'm:B' in group {group!r}, which looks like a "
            "typo of 'attn.backends'; attn does not read it",
            "rename the group to 'attn.backends' where plug declares it, then reinstall plug "
            "(pip install -e . in its checkout, or install the fixed release): the entry points "
            "attn reads are written at install time, so doctor reports this until the reinstall",
            *("plug", "2.1", group),  # the misspelt group
        ),
    )


def test_a_group_named_after_another_installed_project_is_no_typo(site, run_discovery):
    """``xattn.backends`` is one edit from attn's group, but xattn is a project installed here."""
    site.dist("xplug", entry_points={"xattn.backends": {"A": "m:A"}})
    assert kinds(run_discovery()) == ["typo-group"]  # no xattn: a near miss of attn's
    site.module("xattn", "raise AssertionError('imported')")  # found, never imported
    result = run_discovery()
    assert (result.findings, result.misgrouped) == ((), ())


class BrokenFinder:
    """A meta-path finder that fails for every name, as a broken editable install's may."""

    @staticmethod
    def find_spec(name, path=None, target=None):  # noqa: ARG004 - the finder protocol
        raise RuntimeError(f"cannot look {name} up")


def test_a_finder_that_fails_leaves_a_near_miss_a_typo(site, run_discovery, monkeypatch):
    """Whether xattn is a project cannot be told: the group is reported, nothing crashes."""
    site.dist("xplug", entry_points={"xattn.backends": {"A": "m:A"}})
    monkeypatch.setattr(sys, "meta_path", [BrokenFinder(), *sys.meta_path])
    assert kinds(run_discovery()) == ["typo-group"]


def test_a_distribution_declaring_only_a_misspelt_group_can_be_selected(site, run_discovery):
    """ATTN_PLUGINS naming it is no unmatched name: the typo is its one problem."""
    site.dist("typo-plug", entry_points={"attn.backend": {"A": "m:A"}})
    assert kinds(run_discovery({"ATTN_PLUGINS": "typo-plug"})) == ["typo-group"]
    assert kinds(run_discovery({"ATTN_PLUGINS": "typo-plug"}, group=MLA)) == []  # a sibling's
    one, other = (run_discovery({"ATTN_PLUGINS": "nosuch"}, group=g).findings for g in (GROUP, MLA))
    assert (
        [f.fix for f in one if f.kind == "unmatched-selection"]
        == [  # the same in both:
            "use one of: typo-plug"  # one warning per scan
        ]
        == [f.fix for f in other]
    )


LEFT_OUT = {"ATTN_BLOCK_PLUGINS": "plug"}, {"ATTN_PLUGINS": "mine"}


@pytest.mark.parametrize("environ", LEFT_OUT, ids=["blocked", "not-selected"])
def test_a_typo_group_of_a_distribution_the_controls_leave_out_is_not_reported(
    site, run_discovery, environ
):
    """Blocked, or left out by ATTN_PLUGINS: its misspelt group is as irrelevant as its plugins."""
    site.dist("plug", entry_points={"attn.backend": {"A": "m:A"}})
    site.dist("mine", entry_points=eps(MINE="mine:B"))
    result = run_discovery(environ)
    assert ([f.kind for f in result.findings], result.misgrouped) == ([], ())


@pytest.mark.parametrize("environ", LEFT_OUT, ids=["blocked", "not-selected"])
def test_copies_of_a_distribution_the_controls_leave_out_are_not_reported(
    sites, run_discovery, environ
):
    """Two copies of a plugin nobody uses are no problem; two of the host still are."""
    first, second = sites.new("first"), sites.new("second")
    for site, version in ((first, "2.0"), (second, "1.0")):
        site.dist("plug", version, entry_points=eps(A="m:A"))
    second.dist("attn", VERSION, requires=())  # beside the attn under test
    first.dist("mine", entry_points=eps(MINE="mine:B"))
    findings = run_discovery(environ).findings
    assert [(f.kind, f.subject) for f in findings] == [("duplicate-metadata", "attn")]


@pytest.mark.parametrize("environ", LEFT_OUT, ids=["blocked", "not-selected"])
def test_unreadable_entry_points_of_a_distribution_the_controls_leave_out_are_not_reported(
    site, run_discovery, environ
):
    """A plugin's CI selecting its own distribution is not failed by another's broken file."""
    site.dist("plug", raw_entry_points="\ufeff[console_scripts]\nplug = plug:main\n")
    site.dist("mine", entry_points=eps(MINE="mine:B"))
    assert [f.kind for f in run_discovery({}).findings] == ["unreadable-metadata"]
    result = run_discovery(environ)
    assert ([f.kind for f in result.findings], [p.name for p in result.plugins]) == ([], ["MINE"])


@pytest.mark.parametrize("group", OTHER_PROJECTS)
def test_other_projects_groups_are_not_typos(site, run_discovery, group):
    """A distribution with entry points in another project's group: no finding, nothing read."""
    site.dist("kernels", "3.1.0", requires=(), entry_points={group: {"nvidia": "kernels.nvidia"}})
    result = run_discovery()
    assert (result.plugins, result.findings) == ((), ())


def test_triton_beside_a_plugin_changes_nothing(site, triton, run_discovery):
    """triton's real entry points next to a plugin: the plugin is used, no finding at all."""
    site.dist("plug", entry_points=eps(A="m:A"))
    result = run_discovery()
    assert [(p.distribution, p.name, p.status) for p in result.plugins] == [("plug", "A", "used")]
    assert result.findings == ()


def test_testing_sites_limit_plugins_to_their_folders(sites, run_discovery):
    """With attn.testing's private variable set, only plugins in its folders are discovered."""
    installed, fake = sites.new("installed"), sites.new("fake")
    installed.dist("installed", entry_points=eps(FLASH_ATTN="a:X"))
    fake.dist("fake", entry_points=eps(VENDOR="b:Y"))
    result = run_discovery({"_ATTN_TESTING_SITES": str(fake.root)})
    assert [(p.name, p.distribution) for p in result.plugins] == [("VENDOR", "fake")]
    assert result.host_version == attn.__version__
    assert run_discovery({"_ATTN_TESTING_SITES": ""}).plugins == ()
    assert [p.name for p in run_discovery().plugins] == ["FLASH_ATTN", "VENDOR"]


def test_a_plugin_the_kit_hides_is_matched_by_its_name_field(sites, run_discovery):
    """Naming an installed plugin the kit hides is no unmatched selection, whatever its folder."""
    sites.new("installed").dist(
        "other-plugin", folder="zzz-2.0.dist-info", entry_points=eps(A="o:A")
    )
    fake = sites.new("fake")
    result = run_discovery({"_ATTN_TESTING_SITES": str(fake.root), "ATTN_PLUGINS": "other-plugin"})
    assert (result.plugins, result.findings) == ((), ())


# -- the hand-written matchers agree with the patterns they stand for ----------

_VALUE_RE = importlib.metadata.EntryPoint.pattern
_ALPHABET = "aZ_.:9 [],-\t\u00e9\u0663x"


def _corpus(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 - reproducible, not secret
    texts = ["", ":", "a:", ":b", "a:b", "a.b:c.d", " a : b ", "a:b [x]", "a:b:c", "\u00e9:x"]
    texts += [
        "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 9))) for _ in range(count)
    ]
    return texts


def _by_pattern(value: str) -> str | None:
    match = _VALUE_RE.match(value.strip())
    if match is None or match.group("attr") is None:
        return None
    return f"{match.group('module')}:{match.group('attr')}"


def _by_parser(value: str) -> str | None:
    try:
        path = discovery.parse_entry_point_value(value)
    except InvalidPathError:
        return None
    return f"{path.module}:{path.qualname}"


def test_entry_point_values_are_read_as_the_standard_library_pattern_reads_them():
    """On generated values, module and attribute are what EntryPoint.pattern finds."""
    for value in _corpus(4000, seed=7):
        expected = _by_pattern(value)
        if expected is not None:
            try:
                path = parse_path(expected)
            except InvalidPathError:
                expected = None
            else:
                expected = f"{path.module}:{path.qualname}"
        assert _by_parser(value) == expected, repr(value)


def test_every_rejected_row_carries_its_reason_as_a_code(site, run_discovery):
    """Each status but used comes with the code of its reason; a used row has none."""
    site.dist("blocked", entry_points=eps(B="b:B"))
    site.dist("unselected", entry_points=eps(U="u:U"))
    site.dist("old", entry_points=eps(O="o:O"), requires=["attn>=99"])
    site.dist("bad", entry_points=eps(**{"bad-name": "b:B", "NO_ATTR": "b"}))
    site.dist("alpha", entry_points=eps(X="a:X"))
    site.dist("zed", entry_points=eps(X="z:X"))
    environ = {"ATTN_BLOCK_PLUGINS": "blocked", "ATTN_PLUGINS": "blocked,old,bad,alpha,zed"}
    rows = {(p.name, p.distribution): (p.status, p.code) for p in run_discovery(environ).plugins}
    assert rows == {
        ("B", "blocked"): ("disabled", Code.BLOCKED),
        ("U", "unselected"): ("disabled", Code.NOT_SELECTED),
        ("O", "old"): ("incompatible", Code.REQUIREMENT_UNMET),
        ("bad-name", "bad"): ("invalid", Code.INVALID_NAME),
        ("NO_ATTR", "bad"): ("invalid", Code.INVALID_VALUE),
        ("X", "alpha"): ("used", None),
        ("X", "zed"): ("shadowed", Code.SHADOWED),
    }


#: What a process with a stale copy of attn's metadata before its own reports.
STALE = """
import json, os, warnings
warnings.simplefilter("ignore")
import attn
from attn.registry._metadata import installed_version
from attn.registry.loading import code_root
from attn.registry.enum import state_of
out = {"version": attn.__version__}
for reader in ("fast", "reference"):
    os.environ["ATTN_READER"] = reader
    out[reader] = installed_version("attn", code_root("attn"))
    result = state_of(attn.AttentionBackendEnum).diagnose(fresh=True)
    out[reader + "-host"] = result.host_version
    out[reader + "-plugins"] = [[p.name, p.status] for p in result.plugins]
    out[reader + "-fixes"] = [f.fix for f in result.findings if f.kind == "duplicate-metadata"]
print(json.dumps(out))
"""


def test_a_stale_copy_of_the_host_earlier_on_sys_path_decides_nothing(sites, python):
    """attn-0.0.5.dist-info left before attn's own: the version is the imported code's."""
    stale = sites.new("stale").dist("attn", "0.0.5", requires=())
    sites.new("plugins").dist("plug", entry_points=eps(P="p:B"), requires=["attn>=0.1"])
    out = json.loads(python.run("-c", STALE).stdout)
    fix = f"delete {stale}"  # in a virtualenv, pip uninstalls nothing in the test's folders
    fix += (
        sys.prefix == sys.base_prefix
    ) * ", or uninstall both copies (pip uninstall attn, twice) and reinstall"
    assert out == {
        "version": VERSION,
        **dict.fromkeys(("fast", "reference"), VERSION),
        **{f"{reader}-host": VERSION for reader in ("fast", "reference")},
        **{f"{reader}-plugins": [["P", "used"]] for reader in ("fast", "reference")},
        **{f"{reader}-fixes": [fix] for reader in ("fast", "reference")},
    }
