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
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from importlib.metadata import Distribution

__all__ = [
    "DistributionRecord",
    "EntryPointRecord",
    "MetadataRecord",
    "canonical_name",
    "scan",
]


def _debug(message: str, *args: object) -> None:
    # logging is imported only when something goes wrong: it is not cheap.
    import logging  # noqa: PLC0415

    # Called from except blocks only, so exc_info is the exception being handled.
    logging.getLogger("attn.discovery").debug(message, *args, exc_info=True)  # noqa: LOG014


_NORMALIZE = re.compile(r"[-_.]+")


def canonical_name(name: str) -> str:
    """Normalize a distribution name as pip does (PEP 503)."""
    return _NORMALIZE.sub("-", name).lower()


@final
@dataclass(frozen=True, slots=True)
class EntryPointRecord:
    """One entry point as declared: its group, name and value."""

    group: str
    name: str
    value: str


@final
@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """The core metadata fields attn reads from one distribution."""

    name: str | None
    version: str | None
    requires: tuple[str, ...]
    problem: str | None = None


@final
@dataclass(frozen=True, slots=True)
class DistributionRecord:
    """One copy of a distribution's metadata found on ``sys.path``."""

    key: str
    """The canonical name used to tell copies apart (from the folder's name)."""
    location: str
    """The metadata folder (``*.dist-info`` or ``*.egg-info``)."""
    path_index: int
    """Index of the ``sys.path`` entry the copy was found under."""
    path_entry: str
    entry_points: tuple[EntryPointRecord, ...]
    metadata: MetadataRecord | None
    """``None`` when the scan had no reason to read it."""
    entry_points_problem: str | None = None

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
    def readable(self) -> bool:
        """Whether the copy has usable metadata (read, with a ``Name``, no read error)."""
        return self.metadata is not None and self.problem is None


def _key_from_folder(folder: str) -> str:
    stem = folder.rsplit(".", 1)[0] if "." in folder else folder
    return canonical_name(stem.split("-", 1)[0])


def _location(dist: Distribution) -> str:
    # PathDistribution keeps its folder in a private attribute; a custom finder
    # may return another kind of Distribution, which then has no location.
    path = getattr(dist, "_path", None)
    return str(path) if path is not None else f"<{type(dist).__name__}>"


def _read_entry_points(dist: Distribution) -> tuple[tuple[EntryPointRecord, ...], str | None]:
    try:
        return (
            tuple(EntryPointRecord(ep.group, ep.name, ep.value) for ep in dist.entry_points),
            None,
        )
    except Exception as exc:  # noqa: BLE001 - one unreadable plugin must not stop the scan
        _debug("cannot read entry points of %s", _location(dist))
        return (), f"cannot read entry_points.txt: {type(exc).__name__}: {exc}"


def _read_metadata(dist: Distribution) -> MetadataRecord:
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
        if not text:
            return MetadataRecord(None, None, (), "no METADATA or PKG-INFO file")
        meta = dist.metadata
        # PackageMetadata is an email.message.Message; .get() avoids the
        # KeyError / DeprecationWarning of [] on a missing field.
        name = meta.get("Name")  # type: ignore[attr-defined]
        version = meta.get("Version")  # type: ignore[attr-defined]
        requires = tuple(meta.get_all("Requires-Dist") or ())
    except Exception as exc:  # noqa: BLE001 - one unreadable plugin must not stop the scan
        _debug("cannot read metadata of %s", _location(dist))
        return MetadataRecord(None, None, (), f"unreadable metadata: {type(exc).__name__}: {exc}")
    if not name:
        return MetadataRecord(None, version, requires, "metadata has no Name field")
    return MetadataRecord(str(name), None if version is None else str(version), requires)


def scan(
    wants_metadata: Callable[[EntryPointRecord], bool],
    also: Iterable[str] = (),
    path: Sequence[str] | None = None,
) -> tuple[DistributionRecord, ...]:
    """Read every distribution on *path* (default ``sys.path``), in order.

    Metadata (name, version, requirements) is read only for distributions
    that declare an entry point for which *wants_metadata* is true, for the
    canonical names in *also* (the host), and for every copy of a name that
    occurs more than once, so that an empty copy can be told from a good one.
    """
    from importlib.metadata import distributions  # noqa: PLC0415 - kept off import attn

    entries = list(sys.path if path is None else path)
    found: list[tuple[int, str, str, Distribution, tuple[EntryPointRecord, ...], str | None]] = []
    for index, entry in enumerate(entries):
        try:
            dists = list(distributions(path=[entry]))
        except Exception:  # noqa: BLE001 - an unreadable sys.path entry holds no plugins
            _debug("cannot list distributions in %r", entry)
            continue
        for dist in dists:
            location = _location(dist)
            eps, problem = _read_entry_points(dist)
            found.append((index, entry, location, dist, eps, problem))

    # os.path, not pathlib: pathlib is a noticeable part of the import cost.
    keys = [_key_from_folder(os.path.basename(loc)) for _, _, loc, _, _, _ in found]  # noqa: PTH119
    wanted = set(also)
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            wanted.add(key)
        seen.add(key)

    records = []
    for key, (index, entry, location, dist, eps, problem) in zip(keys, found, strict=True):
        read = key in wanted or problem is not None or any(wants_metadata(ep) for ep in eps)
        records.append(
            DistributionRecord(
                key=key,
                location=location,
                path_index=index,
                path_entry=entry,
                entry_points=eps,
                metadata=_read_metadata(dist) if read else None,
                entry_points_problem=problem,
            )
        )
    return tuple(records)
