"""The metadata seam: what ``scan()`` reads from ``*.dist-info`` trees on ``sys.path``."""

from __future__ import annotations

import importlib.metadata
import itertools
import re
import sys

import pytest

from attn.registry import _metadata
from attn.registry._metadata import (
    DistributionRecord,
    EntryPointRecord,
    Problem,
    installed_version,
    scan,
)
from attn.registry.codes import Code
from attn.registry.controls import canonical_name
from attn.registry.discovery import deduplicate, parse_entry_point_value
from attn.registry.errors import InvalidPathError, parse_path

GROUP = "attn.backends"


def wants_group(ep: EntryPointRecord) -> bool:
    return ep.group == GROUP


def records_of(key: str, path: list[str] | None = None) -> list[DistributionRecord]:
    return [r for r in scan(wants_group, path=path) if r.key == key]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("attn", "attn"),
        ("Attn_Plugin", "attn-plugin"),
        ("attn.plugin", "attn-plugin"),
        ("ATTN--plugin__x", "attn-plugin-x"),
        ("a-_.b", "a-b"),
    ],
)
def test_canonical_name(name, expected):
    """Distribution names are normalized as pip does (PEP 503)."""
    assert canonical_name(name) == expected


def test_canonical_name_agrees_with_pep_503_and_packaging():
    """Every short name of letters, digits, separators and non-ASCII letters gets PEP 503's key.

    PEP 503 replaces runs of separators, then lowercases, which matters for a
    final sigma after a dot; for ASCII names packaging agrees on every release.
    """
    from packaging.utils import canonicalize_name  # noqa: PLC0415 - the reference

    alphabet = "aZ9-_.İßΣ"
    names = ["".join(p) for n in range(1, 5) for p in itertools.product(alphabet, repeat=n)]
    assert len(names) > 7000
    assert [canonical_name(n) for n in names] == [re.sub(r"[-_.]+", "-", n).lower() for n in names]
    ascii_names = [n for n in names if n.isascii()]
    assert [canonical_name(n) for n in ascii_names] == [canonicalize_name(n) for n in ascii_names]


def test_scan_walks_sys_path_in_order(sites):
    """Every record knows the index and the entry of the sys.path folder it came from."""
    first, second = sites.new("first"), sites.new("second")
    second.dist("beta", entry_points={GROUP: {"B": "b:B"}})
    first.dist("alpha", entry_points={GROUP: {"A": "a:A"}})
    records = {r.key: r for r in scan(wants_group)}
    assert (records["alpha"].path_entry, records["beta"].path_entry) == (
        str(first.root),
        str(second.root),
    )
    assert records["alpha"].path_index == sys.path.index(str(first.root))
    assert records["beta"].path_index == sys.path.index(str(second.root))


def test_scan_keeps_every_copy(sites):
    """A distribution found in two sys.path entries gives one record per copy."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("twice", "2.0", entry_points={GROUP: {"A": "a:A"}})
    second.dist("twice", "1.0", entry_points={GROUP: {"A": "a:A"}})
    assert [r.version for r in records_of("twice")] == ["2.0", "1.0"]


def test_scan_reads_entry_points_as_declared(site):
    """Entry points keep their group, name and value exactly as written."""
    site.dist(
        "plug",
        entry_points={GROUP: {"FLASH_ATTN": "plug.mod:Outer.Inner [gpu]"}, "other": {"x": "y:z"}},
    )
    (record,) = records_of("plug")
    assert record.entry_points == (
        EntryPointRecord(GROUP, "FLASH_ATTN", "plug.mod:Outer.Inner [gpu]"),
        EntryPointRecord("other", "x", "y:z"),
    )


def test_scan_reads_metadata_of_wanted_distributions(site):
    """Name, version and requirements are read for a distribution with a wanted entry point."""
    site.dist(
        "Plug_Dist", "1.2", entry_points={GROUP: {"A": "a:A"}}, requires=["attn>=0.1", "numpy"]
    )
    (record,) = records_of("plug-dist")
    assert record.metadata is not None
    assert (record.name, record.version, record.metadata.requires) == (
        "Plug_Dist",
        "1.2",
        ("attn>=0.1", "numpy"),
    )
    assert record.metadata_problem is None


def test_scan_skips_metadata_of_unrelated_distributions(site):
    """A distribution without a wanted entry point is listed without reading its METADATA."""
    site.dist("unrelated", entry_points={"console_scripts": {"u": "u:main"}})
    (record,) = records_of("unrelated")
    assert record.metadata is None
    assert record.name == "unrelated"


def test_scan_reads_metadata_of_also(site):
    """Distributions named in ``also`` (the host) have their metadata read."""
    site.dist("hosty", "3.1")
    (record,) = [r for r in scan(wants_group, also=("hosty",)) if r.key == "hosty"]
    assert record.version == "3.1"


def test_scan_reads_metadata_of_every_duplicate(sites):
    """Every copy of a name found twice is read, so an empty copy can be told from a good one."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("dup", "1.0")
    second.dist("dup", "2.0")
    assert [r.version for r in records_of("dup")] == ["1.0", "2.0"]


def test_scan_reports_a_folder_without_metadata(site):
    """An empty metadata folder is kept, with the reason it is unusable."""
    site.dist("empty", entry_points={GROUP: {"A": "a:A"}}, metadata=False)
    (record,) = records_of("empty")
    assert record.metadata is not None
    assert record.metadata.problem == Problem(Code.NO_METADATA)
    assert str(record.metadata.problem) == "no METADATA or PKG-INFO file, or an empty one"


def test_an_empty_metadata_file_is_no_metadata(site):
    """METADATA of 0 bytes reads as no metadata, as importlib.metadata reads it; said so."""
    info = site.dist("empty", entry_points={GROUP: {"A": "a:A"}})
    (info / "METADATA").write_text("", encoding="utf-8")
    (record,) = records_of("empty")
    assert str(record.metadata.problem) == "no METADATA or PKG-INFO file, or an empty one"


def test_scan_reports_metadata_without_name(site):
    """A METADATA file without a Name field makes the copy unreadable."""
    info = site.dist("nameless", entry_points={GROUP: {"A": "a:A"}}, metadata=False)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nVersion: 1.0\n", encoding="utf-8")
    (record,) = records_of("nameless")
    assert record.metadata is not None
    assert record.metadata.problem == Problem(Code.NO_NAME)
    assert str(record.metadata.problem) == "metadata has no Name field"
    assert record.name == "nameless"


def test_scan_reports_unreadable_entry_points(site):
    """A malformed entry_points.txt is recorded as a problem, not raised."""
    site.dist("broken-eps", raw_entry_points=f"[{GROUP}]\nthis line has no equals sign\n")
    (record,) = records_of("broken-eps")
    assert record.entry_points == ()
    assert str(record.entry_points_problem) == (
        "entry_points.txt cannot be read: line 2 has no '=': 'this line has no equals sign'"
    )
    assert record.entry_points_problem.code is Code.READ_ERROR


def write(info, file, data):
    path = info / file
    if path.exists():
        path.unlink()
    if data is None:
        path.mkdir()
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("reader", ["fast", "reference"])
@pytest.mark.parametrize(
    "case",
    [
        (
            "METADATA",
            None,
            Problem(Code.IS_A_FOLDER, "METADATA"),
            "METADATA is a folder, not a file",
        ),
        (
            "METADATA",
            b"Name: plug\nSummary: caf\xe9\n",
            Problem(Code.NOT_UTF8, "METADATA", "0xe9", 23),
            "METADATA is not UTF-8 text (byte 0xe9 at offset 23)",
        ),
        (
            "METADATA",
            b"\xef\xbb\xbfName: plug\nVersion: 1.0\n",
            Problem(Code.BYTE_ORDER_MARK, "METADATA"),
            (
                "METADATA starts with a byte-order mark, so Python (importlib.metadata) reads "
                "none of its fields (no Name, no Version)"
            ),
        ),
        (
            "entry_points.txt",
            f"\ufeff[{GROUP}]\nA = a:A\n".encode(),
            Problem(Code.BYTE_ORDER_MARK, "entry_points.txt"),
            (
                "entry_points.txt starts with a byte-order mark, so Python (importlib.metadata) "
                "reads no entry point before the next [group] header"
            ),
        ),
        (  # the mark hides no header: Python reads every entry, and attn reports nothing
            "entry_points.txt",
            f"\ufeff# generated\n[{GROUP}]\nA = a:A\n".encode(),
            None,
            "None",
        ),
        (  # nor before a comment that holds an entry's syntax (# or ;)
            "entry_points.txt",
            f"\ufeff# X = m:C is the syntax\n; Y = m:D\n[{GROUP}]\nA = a:A\n".encode(),
            None,
            "None",
        ),
        (
            "entry_points.txt",
            f"A = a:A\n[{GROUP}]\nB = b:B\n".encode(),
            Problem(Code.ENTRIES_BEFORE_HEADER, "entry_points.txt", "A = a:A"),
            (
                "entry_points.txt has entries before any [group] header (first: 'A = a:A'); "
                "Python (importlib.metadata) reads none of them"
            ),
        ),
        (
            "entry_points.txt",
            None,
            Problem(Code.IS_A_FOLDER, "entry_points.txt"),
            "entry_points.txt is a folder, not a file",
        ),
    ],
)
def test_problems_carry_a_code_and_the_fields_their_message_names(site, monkeypatch, reader, case):
    """Each problem is a code and its fields; the message is rendered from them."""
    file, data, problem, message = case
    monkeypatch.setenv("ATTN_READER", reader)
    info = site.dist("plug", entry_points={GROUP: {"A": "a:A"}})
    write(info, file, data)
    (record,) = records_of("plug")
    found = record.metadata_problem if file == "METADATA" else record.entry_points_problem
    assert found == problem
    assert str(found) == message


@pytest.mark.parametrize(
    ("folder", "key"),
    [
        ("plug-1.0.dist-info", "plug"),
        ("Plug_Name-1.0.dist-info", "plug-name"),
        ("plug.egg-info", "plug"),
        ("plug-1.0-py3.11.egg-info", "plug"),
        ("plug.name-2.dist-info", "plug-name"),
    ],
)
def test_scan_keys_copies_by_folder_name(site, folder, key):
    """Copies are told apart by the canonical name in their folder's name."""
    site.dist("plug", folder=folder)
    assert key in {r.key for r in scan(wants_group)}


def test_scan_of_an_explicit_path_ignores_sys_path(sites):
    """``path=`` replaces sys.path, and indexes count within it."""
    first, second = sites.new("first"), sites.new("second")
    first.dist("one")
    second.dist("two")
    records = scan(wants_group, path=[str(second.root)])
    assert [(r.key, r.path_index) for r in records] == [("two", 0)]


def test_scan_skips_missing_path_entries(site):
    """A sys.path entry that does not exist is skipped."""
    site.dist("here")
    records = scan(wants_group, path=[str(site.root / "missing"), str(site.root)])
    assert [(r.key, r.path_index) for r in records] == [("here", 1)]


def reference_view(group: str) -> set[tuple[str, str, str]]:
    return {
        (ep.dist.name, ep.name, ep.value)
        for ep in importlib.metadata.entry_points(group=group)
        if ep.dist is not None
    }


def seam_view(group: str) -> set[tuple[str, str, str]]:
    dists, _ = deduplicate(scan(lambda ep: ep.group == group), (), (group,))
    return {
        (d.name, ep.name, ep.value) for d in dists for ep in d.entry_points if ep.group == group
    }


def test_scan_agrees_with_importlib_metadata(sites):
    """scan() then deduplicate() sees the entry points importlib.metadata.entry_points() sees."""
    first, second, third = sites.new("first"), sites.new("second"), sites.new("third")
    first.dist("Alpha.Plugin", "2.0", entry_points={GROUP: {"FLASH_ATTN": "alpha:New"}})
    second.dist("alpha_plugin", "1.0", entry_points={GROUP: {"FLASH_ATTN": "alpha:Old"}})
    second.dist("beta", entry_points={GROUP: {"A": "beta:A", "B": "beta.x:Outer.B [extra]"}})
    second.dist("gamma", entry_points={"attn.mla_prefill_backends": {"A": "gamma:A"}})
    third.dist("beta", "0.9", entry_points={GROUP: {"C": "beta:C"}})
    third.dist("delta", folder="delta.egg-info", entry_points={GROUP: {"D": "delta:D"}})
    (first.root / "delta.egg-info").symlink_to(third.root / "delta.egg-info")
    importlib.invalidate_caches()
    for group in (GROUP, "attn.mla_prefill_backends"):
        assert seam_view(group) == reference_view(group)
    assert ("Alpha.Plugin", "FLASH_ATTN", "alpha:New") in seam_view(GROUP)


@pytest.mark.parametrize("reader", ["fast", "reference"])
def test_scan_tells_copies_apart_as_importlib_metadata_does(sites, tmp_path, monkeypatch, reader):
    """By the folder's name after a name and an exact lower-case suffix, else by the Name field.

    As ``PathDistribution._normalized_name`` on Python 3.10 to 3.13 and in the backport: an
    upper-case suffix, no name before it, an egg's EGG-INFO and a folder in a zip go by Name.
    """
    monkeypatch.setenv("ATTN_READER", reader)
    first, second, third = sites.new("first"), sites.new("second"), sites.new("third")
    first.dist("bar", "1.0", entry_points={GROUP: {"B1": "bar:B1"}})
    second.dist("bar", "2.0", folder="Foo-2.0.Egg-Info", entry_points={GROUP: {"B2": "bar:B2"}})
    second.dist("bar", "3.0", folder="notbar-3.0.dist-info", entry_points={GROUP: {"B3": "b:B3"}})
    third.dist("emptyname", folder=".dist-info", entry_points={GROUP: {"E": "e:E"}})
    third.dist("dashname", folder="-1.0.dist-info", entry_points={GROUP: {"D": "d:D"}})
    egg = tmp_path / "eggname-1.0-py3.11.egg" / "EGG-INFO"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Name: bar\nVersion: 4.0\n", encoding="utf-8")
    (egg / "entry_points.txt").write_text(f"[{GROUP}]\nB4 = bar:B4\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(egg.parent))  # first: its bar (by Name) hides bar 1.0
    importlib.invalidate_caches()
    assert seam_view(GROUP) == reference_view(GROUP)
    assert {(d, n) for d, n, _ in seam_view(GROUP)} == {
        *(("bar", n) for n in ("B4", "B3")),
        *(("emptyname", "E"), ("dashname", "D")),
    }
    # version() still finds copies by their folder's name (Lookup): bar 1.0, and the egg by its own.
    assert installed_version("bar") == importlib.metadata.version("bar") == "1.0"
    assert installed_version("eggname") == importlib.metadata.version("eggname") == "4.0"


def test_a_problem_with_a_code_of_another_kind_still_renders():
    """A code without a reader message of its own is shown as code and detail."""
    assert str(Problem(Code.INVALID, detail="what went wrong")) == "invalid: what went wrong"


#: Entry point values: extras, spaces, dotted attributes, a missing attribute, bad characters.
VALUES = [
    "plug.mod:Backend",
    "plug.mod:Outer.Inner",
    "plug.mod:Backend [gpu]",
    "plug.mod:Backend[gpu, fast]",
    "plug.mod:Backend [unclosed",
    "plug : Backend",
    "  plug:Backend  ",
    "plug\t:\tBackend",
    "plug.mod",
    "plug.mod [gpu]",
    "plug.mod:",
    ":Backend",
    "plug mod:Backend",
    "plug-mod:Backend",
    "plug.mod:Backend:Extra",
    "plug..mod:Backend",
    "plug:Outer..Inner",
    "1plug:Backend",
    "caf\u00e9:Backend",
    "plug:Back-end",
    "plug:Backend!",
    "",
]


def by_the_standard_library(value: str) -> object:
    """What importlib.metadata.EntryPoint.pattern makes of *value*: a class path, or refusal."""
    match = importlib.metadata.EntryPoint.pattern.match(value.strip())
    if match is None or match.group("attr") is None:
        return InvalidPathError
    try:
        return parse_path(f"{match.group('module')}:{match.group('attr')}")
    except InvalidPathError:
        return InvalidPathError


def by_attn(value: str) -> object:
    try:
        return parse_entry_point_value(value)
    except InvalidPathError:
        return InvalidPathError


@pytest.mark.parametrize("value", VALUES)
def test_entry_point_values_are_split_by_importlib_metadata_s_pattern(value):
    """Module and attribute are what importlib.metadata's own EntryPoint.pattern finds."""
    assert by_attn(value) == by_the_standard_library(value)


def test_the_entry_point_pattern_is_the_standard_library_s():
    """attn's copy of EntryPoint.pattern is the one of the Python running the tests."""
    assert _metadata.entry_point_pattern().pattern == importlib.metadata.EntryPoint.pattern.pattern
