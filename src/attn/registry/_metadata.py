"""The one place attn reads installed distributions' metadata.

Everything above this module works on the plain records defined here, so a
faster reader (or a cache) can replace :func:`scan` without touching the
discovery pipeline. The reference implementation uses the standard library's
:mod:`importlib.metadata`, imported on the first scan and never at
``import attn``.

A scan walks ``sys.path`` one entry at a time, so every record knows which
entry it came from (conflicts are resolved by that order), and it keeps every
copy of a distribution: de-duplication is a pipeline step, not the reader's.
"""

from __future__ import annotations

import os
import sys

from ._records import Record, set_field

# Not typing.TYPE_CHECKING: the warm path (a cache hit, then a lookup) must not
# import typing, and these records are built on it.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from importlib.metadata import Distribution

    #: One copy as a reader found it: sys.path index and entry, metadata folder,
    #: entry points, why they cannot be read, and how to read its metadata.
    Found = tuple[
        int, str, str, tuple["EntryPointRecord", ...], str | None, Callable[[], "MetadataRecord"]
    ]

__all__ = [
    "UNREADABLE_KEY",
    "DistributionRecord",
    "EntryPointRecord",
    "MetadataRecord",
    "canonical_name",
    "reference_scan",
    "scan",
]

READER_VARIABLE = "ATTN_READER"
"""Private switch for tests: ``reference`` reads through :mod:`importlib.metadata`."""


def _debug(message: str, *args: object) -> None:
    # logging is imported only when something goes wrong: it is not cheap.
    import logging  # noqa: PLC0415

    # Called from except blocks only, so exc_info is the exception being handled.
    logging.getLogger("attn.discovery").debug(message, *args, exc_info=True)  # noqa: LOG014


#: The key of a record that stands for something unreadable on ``sys.path``
#: itself (a folder, a meta-path finder), not for a distribution.
UNREADABLE_KEY = "<unreadable>"


def canonical_name(name: str) -> str:
    """Normalize a distribution name as pip does (PEP 503): runs of ``-_.`` become ``-``.

    Without :mod:`re`, which the warm path does not import.
    """
    text = name.lower().replace("_", "-").replace(".", "-")
    while "--" in text:
        text = text.replace("--", "-")
    return text


def standard_finders() -> bool:
    """Whether only the standard path finder provides distributions (the usual case)."""
    path_finder = getattr(sys.modules.get("_frozen_importlib_external"), "PathFinder", None)
    return all(
        finder is path_finder or getattr(finder, "find_distributions", None) is None
        for finder in sys.meta_path
    )


_set = set_field


class EntryPointRecord(Record):
    """One entry point as declared: its group, name and value."""

    __slots__ = ("group", "name", "value")

    group: str
    name: str
    value: str

    def __init__(self, group: str, name: str, value: str) -> None:
        """Record one entry point."""
        _set(self, "group", group)
        _set(self, "name", name)
        _set(self, "value", value)


class MetadataRecord(Record):
    """The core metadata fields attn reads from one distribution."""

    __slots__ = ("name", "problem", "requires", "version")

    name: str | None
    version: str | None
    requires: tuple[str, ...]
    problem: str | None

    def __init__(
        self,
        name: str | None,
        version: str | None,
        requires: tuple[str, ...],
        problem: str | None = None,
    ) -> None:
        """Record the fields read (or why they cannot be used, in *problem*)."""
        _set(self, "name", name)
        _set(self, "version", version)
        _set(self, "requires", requires)
        _set(self, "problem", problem)


class DistributionRecord(Record):
    """One copy of a distribution's metadata found on ``sys.path``.

    ``key`` is the canonical name used to tell copies apart (from the folder's
    name); ``location`` the metadata folder (``*.dist-info`` or ``*.egg-info``);
    ``path_index`` the index of the ``sys.path`` entry it was found under;
    ``metadata`` is ``None`` when the scan had no reason to read it.
    """

    __slots__ = (
        "entry_points",
        "entry_points_problem",
        "key",
        "location",
        "metadata",
        "path_entry",
        "path_index",
    )

    key: str
    location: str
    path_index: int
    path_entry: str
    entry_points: tuple[EntryPointRecord, ...]
    metadata: MetadataRecord | None
    entry_points_problem: str | None

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        key: str,
        location: str,
        path_index: int,
        path_entry: str,
        entry_points: tuple[EntryPointRecord, ...],
        metadata: MetadataRecord | None,
        entry_points_problem: str | None = None,
    ) -> None:
        """Record one copy (use :func:`scan`, not this)."""
        _set(self, "key", key)
        _set(self, "location", location)
        _set(self, "path_index", path_index)
        _set(self, "path_entry", path_entry)
        _set(self, "entry_points", entry_points)
        _set(self, "metadata", metadata)
        _set(self, "entry_points_problem", entry_points_problem)

    @property
    def name(self) -> str:
        """The ``Name`` field as written, else the canonical key."""
        if self.metadata is not None and self.metadata.name:
            return self.metadata.name
        return self.key

    @property
    def version(self) -> str | None:
        """The ``Version`` field, if the metadata was read and has one."""
        return None if self.metadata is None else self.metadata.version

    @property
    def problem(self) -> str | None:
        """Why this copy's metadata cannot be used, if it was read and cannot."""
        if self.entry_points_problem is not None:
            return self.entry_points_problem
        return None if self.metadata is None else self.metadata.problem

    @property
    def metadata_problem(self) -> str | None:
        """Why this copy's core metadata (name, version, requirements) cannot be used."""
        return None if self.metadata is None else self.metadata.problem

    @property
    def readable(self) -> bool:
        """Whether the copy has usable metadata (read, with a ``Name``, no read error)."""
        return self.metadata is not None and self.problem is None


def key_from_folder(folder: str) -> str:
    """The canonical name of the distribution a metadata folder's name names."""
    stem = folder.rsplit(".", 1)[0] if "." in folder else folder
    return canonical_name(stem.split("-", 1)[0])


def key_of(location: str) -> str:
    """The canonical name of the copy whose metadata folder is *location*."""
    # A folder inside a zip file is named with a trailing slash; an egg's
    # EGG-INFO folder is named after the egg around it.
    folder = location.rstrip("/")
    base = os.path.basename(folder)  # noqa: PTH119
    if base.lower() == "egg-info":
        base = os.path.basename(os.path.dirname(folder))  # noqa: PTH119, PTH120
    return key_from_folder(base)


def _location(dist: Distribution) -> str:
    # PathDistribution keeps its folder in a private attribute; a custom finder
    # may return another kind of Distribution, which then has no location.
    path = getattr(dist, "_path", None)
    return str(path) if path is not None else f"<{type(dist).__name__}>"


def _folder(dist: Distribution) -> str | None:
    """The metadata folder of a distribution read from a real directory, else ``None``."""
    path = getattr(dist, "_path", None)
    if path is None:
        return None
    folder = str(path)
    return folder if os.path.isdir(folder) else None  # noqa: PTH112


def _raw(folder: str | None, filename: str) -> tuple[bytes | None, str | None]:
    """The bytes of *filename* in *folder*, or why it exists and cannot be read.

    ``(None, None)``: the file is absent, or there is no folder (a zip, a
    custom finder's distribution), where ``importlib.metadata`` is the only reader.
    """
    if folder is None:
        return None, None
    try:
        with open(os.path.join(folder, filename), "rb") as handle:  # noqa: PTH118, PTH123
            return handle.read(), None
    except FileNotFoundError:
        return None, None
    except IsADirectoryError:
        return None, f"{filename} is a folder, not a file"
    except PermissionError:
        return None, f"{filename} cannot be read: permission denied"
    except OSError as exc:
        return None, f"{filename} cannot be read: {exc.strerror or exc}"


def _not_utf8(filename: str, error: UnicodeDecodeError) -> str:
    byte = error.object[error.start : error.start + 1].hex()
    return f"{filename} is not UTF-8 text (byte 0x{byte} at offset {error.start})"


def _entry_points_text_problem(data: bytes) -> str | None:
    """Why Python's reader would miss entry points that ``entry_points.txt`` holds."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _not_utf8("entry_points.txt", exc)
    if text.startswith("\ufeff"):
        return (
            "entry_points.txt starts with a byte-order mark, so Python (importlib.metadata) "
            "reads no entry point before the next [group] header"
        )
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("["):
            return None
        if "=" in stripped:
            return (
                f"entry_points.txt has entries before any [group] header (first: "
                f"{stripped[:60]!r}); Python (importlib.metadata) reads none of them"
            )
    return None


def entry_points_file_problem(folder: str | None) -> str | None:
    """Why Python cannot read all of *folder*'s ``entry_points.txt``, if it cannot."""
    data, problem = _raw(folder, "entry_points.txt")
    if problem is None and data is not None:
        problem = _entry_points_text_problem(data)
    return problem


def _read_entry_points(dist: Distribution) -> tuple[tuple[EntryPointRecord, ...], str | None]:
    """The entry points Python reads, and why it misses some or all of them, if it does."""
    problem = entry_points_file_problem(_folder(dist))
    try:
        eps = tuple(EntryPointRecord(ep.group, ep.name, ep.value) for ep in dist.entry_points)
    except Exception as exc:  # noqa: BLE001 - one unreadable plugin must not stop the scan
        _debug("cannot read entry points of %s", _location(dist))
        return (), problem or f"entry_points.txt cannot be read: {type(exc).__name__}: {exc}"
    return eps, problem


def metadata_file_record(folder: str | None) -> MetadataRecord | None:
    """The record of a metadata file Python's reader cannot read; ``None`` when it can.

    A ``METADATA`` that is a folder, lacks permission or is not UTF-8 cannot
    be read by :mod:`importlib.metadata` either: the problem says which.
    """
    filename = "METADATA"
    data, problem = _raw(folder, filename)
    if data is None and problem is None:
        filename = "PKG-INFO"
        data, problem = _raw(folder, filename)
    if problem is not None:
        return MetadataRecord(None, None, (), problem)
    if data is None:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return MetadataRecord(None, None, (), _not_utf8(filename, exc))
    return None


def _read_metadata(dist: Distribution) -> MetadataRecord:
    special = metadata_file_record(_folder(dist))
    if special is not None:
        return special
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
        if not text:
            return MetadataRecord(None, None, (), "no METADATA or PKG-INFO file")
        meta = dist.metadata
        # PackageMetadata is an email.message.Message; .get() avoids the
        # KeyError / DeprecationWarning of [] on a missing field.
        name = meta.get("Name")  # type: ignore[attr-defined]
        version = meta.get("Version")  # type: ignore[attr-defined]
        # .requires reads Requires-Dist, or an egg-info's requires.txt.
        requires = tuple(dist.requires or ())
    except Exception as exc:  # noqa: BLE001 - one unreadable plugin must not stop the scan
        _debug("cannot read metadata of %s", _location(dist))
        return MetadataRecord(None, None, (), f"unreadable metadata: {type(exc).__name__}: {exc}")
    if not name:
        return MetadataRecord(None, version, requires, "metadata has no Name field")
    return MetadataRecord(str(name), None if version is None else str(version), requires)


def _finder_label(finder: object) -> str:
    kind = type(finder)
    return f"{kind.__module__}.{kind.__qualname__}"


def _distributions(entry: str) -> tuple[list[Distribution], list[str]]:
    """The distributions every meta-path finder provides for *entry*, and the finders' failures.

    As :func:`importlib.metadata.distributions` does, one finder after the
    other, except that a finder that raises is reported instead of ending the scan.
    """
    from importlib.metadata import DistributionFinder  # noqa: PLC0415 - kept off import attn

    found: list[Distribution] = []
    problems: list[str] = []
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_distributions", None)
        if find is None:
            continue
        try:
            found.extend(find(DistributionFinder.Context(path=[entry])))
        except Exception as exc:  # noqa: BLE001 - a broken finder must not hide the others
            _debug("meta-path finder %r failed on %r", finder, entry)
            problems.append(
                f"the meta-path finder {_finder_label(finder)} raised "
                f"{type(exc).__name__}: {exc} while listing distributions"
            )
    if os.path.isdir(entry) and not os.access(entry, os.R_OK | os.X_OK):  # noqa: PTH112
        problems.append(f"the sys.path entry {entry} cannot be read (permission denied)")
    return found, problems


def unreadable_record(index: int, entry: str, problem: str) -> DistributionRecord:
    """A record that stands for a part of ``sys.path`` nothing could be read from."""
    return DistributionRecord(UNREADABLE_KEY, entry, index, entry, (), None, problem)


def reference_entry(index: int, entry: str) -> tuple[list[Found], list[DistributionRecord]]:
    """Every copy under one ``sys.path`` entry, read through :mod:`importlib.metadata`.

    Also what could not be read there at all (a finder that raises, a folder
    without read permission), as records of :data:`UNREADABLE_KEY`.
    """
    dists, problems = _distributions(entry)
    found: list[Found] = []
    for dist in dists:
        eps, problem = _read_entry_points(dist)
        found.append((index, entry, _location(dist), eps, problem, _metadata_reader(dist)))
    return found, [unreadable_record(index, entry, p) for p in dict.fromkeys(problems)]


def _metadata_reader(dist: Distribution) -> Callable[[], MetadataRecord]:
    return lambda: _read_metadata(dist)


def assemble(
    found: Sequence[Found],
    wants_metadata: Callable[[EntryPointRecord], bool],
    also: Iterable[str],
    unreadable: Sequence[DistributionRecord] = (),
    keys: list[str] | None = None,
    *,
    kept_only: bool = False,
) -> tuple[DistributionRecord, ...]:
    """Turn what a reader found into records, reading metadata only where it matters.

    *keys*, when the reader has them, are the canonical names of *found*, in order.
    With *kept_only*, the copies whose metadata is not read are left out: the
    pipeline never looks at them (a single copy with no entry point that matters).

    Metadata (name, version, requirements) is read for distributions that
    declare an entry point for which *wants_metadata* is true, for the
    canonical names in *also* (the host), for copies whose entry points cannot
    be read, and for every copy of a name that occurs more than once, so that
    an empty copy can be told from a good one.
    """
    # os.path, not pathlib: pathlib is a noticeable part of the import cost.
    if keys is None:
        keys = [key_of(copy[2]) for copy in found]
    wanted = set(also)
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            wanted.add(key)
        seen.add(key)
    records = []
    for key, (index, entry, location, eps, problem, read_metadata) in zip(keys, found, strict=True):
        read = (
            key in wanted
            or problem is not None
            or (bool(eps) and any(wants_metadata(ep) for ep in eps))
        )
        if kept_only and not read:
            continue
        records.append(
            DistributionRecord(
                key,
                location,
                index,
                entry,
                eps,
                read_metadata() if read else None,
                problem,
            )
        )
    # A finder that fails fails for every entry: report it once.
    problems: set[str | None] = set()
    for record in unreadable:
        if record.entry_points_problem not in problems:
            problems.add(record.entry_points_problem)
            records.append(record)
    return tuple(records)


def reference_scan(
    wants_metadata: Callable[[EntryPointRecord], bool],
    also: Iterable[str] = (),
    path: Sequence[str] | None = None,
    *,
    kept_only: bool = False,
) -> tuple[DistributionRecord, ...]:
    """:func:`scan` through :mod:`importlib.metadata`, one ``sys.path`` entry at a time."""
    entries = list(sys.path if path is None else path)
    found: list[Found] = []
    unreadable: list[DistributionRecord] = []
    for index, entry in enumerate(entries):
        copies, problems = reference_entry(index, entry)
        found.extend(copies)
        unreadable.extend(problems)
    return assemble(found, wants_metadata, also, unreadable, kept_only=kept_only)


def reader() -> str:
    """The reader that :func:`scan` uses: ``fast`` unless ``ATTN_READER=reference``.

    Raises:
        AttnConfigError: ``ATTN_READER`` is set to something else.
    """
    value = os.environ.get(READER_VARIABLE, "").strip().lower() or "fast"
    if value not in {"fast", "reference"}:
        from .errors import AttnConfigError  # noqa: PLC0415

        raise AttnConfigError(READER_VARIABLE, value, "fast or reference")
    return value


def scan(
    wants_metadata: Callable[[EntryPointRecord], bool],
    also: Iterable[str] = (),
    path: Sequence[str] | None = None,
    *,
    kept_only: bool = False,
) -> tuple[DistributionRecord, ...]:
    """Read every distribution on *path* (default ``sys.path``), in order.

    Every copy of a distribution gives one record; see :func:`assemble` for
    which copies have their metadata read (with *kept_only*, the only ones
    returned). The fast reader
    (:mod:`attn.registry._scan`) reads folders directly and yields exactly
    what the reference, :mod:`importlib.metadata`, yields.
    """
    if reader() == "reference":
        return reference_scan(wants_metadata, also, path, kept_only=kept_only)
    from ._scan import fast_scan  # noqa: PLC0415

    return fast_scan(wants_metadata, also, path, kept_only=kept_only)
