"""The one place attn reads installed metadata: the fast reader, else `importlib.metadata`."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from . import _scan, controls
from ._scan import UNREADABLE_KEY, DistributionRecord, EntryPointRecord, MetadataRecord, Problem
from .codes import Code
from .controls import canonical_name, reader, standard_finders
from .errors import AttnConfigError, describe, passes_through

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable, Sequence
    from importlib.metadata import Distribution

__all__ = ["UNREADABLE_KEY", "DistributionRecord", "EntryPointRecord", "MetadataRecord", "Problem"]

#: importlib.metadata.EntryPoint.pattern, as on every Python up to NEWEST_COVERED.
_ENTRY_POINT_PATTERN = re.compile(
    r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
)


def records_from(data: Iterable[tuple[Any, ...]]) -> tuple[DistributionRecord, ...]:
    """The records that ``report.plain`` made *data* of (the discovery cache stores them so)."""

    def problem(fields: tuple[Any, ...] | None) -> Problem | None:
        return None if fields is None else Problem(Code(fields[0]), *fields[1:])

    return tuple(
        DistributionRecord(
            *(key, location, index, entry, tuple(EntryPointRecord(*ep) for ep in eps)),
            None if meta is None else MetadataRecord(meta[0], meta[1], meta[2], problem(meta[3])),
            problem(why),
        )
        for key, location, index, entry, eps, meta, why in data
    )


def entry_point_pattern() -> re.Pattern[str]:
    """How `importlib.metadata` splits an entry point's value into module, attr, extras."""
    if sys.version_info[:2] <= controls.NEWEST_COVERED:
        return _ENTRY_POINT_PATTERN
    from importlib.metadata import EntryPoint  # noqa: PLC0415 - a Python the tests have not seen

    return EntryPoint.pattern


def _reference_entry_points(dist: Distribution, local: str | None) -> _scan.EntryPoints:
    # What Python cannot read whole (it stays silent on some of it): attn's reader says which.
    problem = None if local is None else _scan.local_entry_points(local)[1]
    if problem is not None and problem.code is Code.READ_ERROR:
        return (), problem  # Python reads nothing either (or waits forever, on a FIFO)
    try:
        eps = tuple(EntryPointRecord(ep.group, ep.name, ep.value) for ep in dist.entry_points)
    except BaseException as exc:
        if passes_through(exc):
            raise
        return (), problem or Problem(Code.READ_ERROR, "entry_points.txt", describe(exc))
    return eps, problem


def _reference_metadata(dist: Distribution, local: str | None) -> MetadataRecord:
    if local is not None:  # attn's reader says which file Python cannot read, or reads nothing from
        record = _scan.local_metadata(local)
        if record.problem is not None and record.problem.code is not Code.NO_NAME:
            return record
    try:
        if local is None and not (dist.read_text("METADATA") or dist.read_text("PKG-INFO")):
            return MetadataRecord(None, None, (), Problem(Code.NO_METADATA))
        meta = dist.metadata  # an email Message: .get() has no KeyError or DeprecationWarning
        name, version = meta.get("Name"), meta.get("Version")  # type: ignore[attr-defined]
        requires = tuple(dist.requires or ())  # Requires-Dist, or an egg-info's requires.txt
    except BaseException as exc:
        if passes_through(exc):
            raise
        return MetadataRecord(None, None, (), Problem(Code.READ_ERROR, "metadata", describe(exc)))
    if not name:
        return MetadataRecord(None, version, requires, Problem(Code.NO_NAME))
    return MetadataRecord(str(name), None if version is None else str(version), requires)


def _reference_entry(index: int, entry: str, copies: list[tuple[int, _scan.Copy]]) -> list[Problem]:
    """Add the meta-path finders' copies on *entry* to *copies*, ranked; return their failures."""
    from importlib.metadata import DistributionFinder  # noqa: PLC0415 - kept off import attn

    failures, context = [], DistributionFinder.Context(path=[entry])
    for rank, finder in enumerate(list(sys.meta_path)):
        dists: list[Distribution] = []
        try:
            find = getattr(finder, "find_distributions", None)
            dists.extend(() if find is None else find(context))
        except BaseException as exc:  # plugin code: contained, reported, never an exit
            if passes_through(exc):
                raise
            kind = finder if isinstance(finder, type) else type(finder)  # a class, as PathFinder
            label = f"{kind.__module__}.{kind.__qualname__}"
            failures.append(Problem(Code.FINDER_FAILED, detail=describe(exc), finder=label))
        for dist in dists:
            path = getattr(dist, "_path", None)  # a PathDistribution's metadata folder
            location = f"<{type(dist).__name__}>" if path is None else str(path)
            local = location if path is not None and os.access(location, os.F_OK) else None
            eps, problem = _reference_entry_points(dist, local)
            read = cache(partial(_reference_metadata, dist, local))  # in memory: keyed by Name
            key = _scan.key_of(location, read) if path else canonical_name(read().name or "")
            copy = DistributionRecord(key, location, index, entry, eps, None, problem)
            copies.append((rank, (copy, read)))  # rank: the finder's place on sys.meta_path
    return failures


def scan(
    wants_metadata: Callable[[EntryPointRecord], bool],
    also: Iterable[str] = (),
    path: Sequence[object] | None = None,
    *,
    kept_only: bool = False,
    using: str | None = None,
    only: Container[str] | None = None,
) -> tuple[DistributionRecord, ...]:
    """One record per copy on *path* (default ``sys.path``), in Python's order, not de-duplicated.

    Metadata is read for copies with entry points *wants_metadata* wants or that cannot be read,
    of the names in *also* and of names found twice; *kept_only* leaves the others out. With
    *only*, the fast reader reads the copies of those names alone (the others may be missing).
    """
    # importlib.metadata reads zips, eggs, other finders' copies; all on Windows or per reader().
    fast = (using or reader()) == "fast" and os.sep == "/" and standard_finders()
    ranked: list[tuple[int, _scan.Copy]] = []
    unreadable: dict[Problem, DistributionRecord] = {}
    for index, entry in enumerate(list(sys.path if path is None else path)):
        if not isinstance(entry, str):
            continue
        found = _scan.fast_entry(index, entry, only) if fast else None
        failed = [] if found is not None else _reference_entry(index, entry, ranked)
        ranked += [(0, c) for c in found or ()]  # the fast reader: the path finder's alone
        if os.path.isdir(entry) and not os.access(entry, os.R_OK | os.X_OK):  # noqa: PTH112
            failed.append(Problem(Code.PATH_UNREADABLE, entry))
        for problem in failed:  # a finder that fails fails for every entry: kept once
            record = DistributionRecord(UNREADABLE_KEY, entry, index, entry, (), None, problem)
            unreadable.setdefault(problem, record)
    if not fast:  # importlib.metadata's order: each finder over the whole path, in turn
        ranked.sort(key=lambda copy: copy[0])
    copies = [c for _, c in ranked if not c[0].key.startswith("~")]  # pip's stash, as pip does
    counts = Counter(record.key for record, _ in copies)
    wanted, records = {*also, *(key for key, count in counts.items() if count > 1)}, []
    for record, read in copies:
        want = record.key in wanted or record.entry_points_problem is not None
        if want or any(map(wants_metadata, record.entry_points)):
            records.append(record._replace(metadata=read()))
        elif not kept_only:
            records.append(record)
    return (*records, *unreadable.values())


def project_folder(location: str, *, editable_only: bool = True) -> str | None:
    """The folder (PEP 610) the install at *location* came from; by default, editable only."""
    text, _ = _scan.read_text(f"{location}/direct_url.json", "direct_url.json")
    if text is None:
        return None
    import json  # noqa: PLC0415 - only for a distribution found twice
    from urllib.parse import unquote, urlsplit  # noqa: PLC0415 - likewise

    try:
        data = json.loads(text)
        wanted, url = data["dir_info"].get("editable") is True or not editable_only, data["url"]
    except (ValueError, LookupError, TypeError, AttributeError):  # not of PEP 610's shape
        return None
    parts = urlsplit(url) if wanted and type(url) is str else None
    return unquote(parts.path) if parts is not None and parts.scheme == "file" else None


def installed_with(path_entry: str, location: str, root: str) -> bool:
    """Whether the copy at *location* was installed with the code under *root* (or editable)."""
    real = os.path.realpath(root)
    if real == os.path.realpath(path_entry):
        return True
    source = project_folder(location)
    return source is not None and (real + os.sep).startswith(os.path.realpath(source) + os.sep)


def installed_version(name: str, root: str | None = None) -> str | None:
    """*name*'s version as `importlib.metadata.version`, past copies without one.

    The copy installed with the code under *root* (where *name* was imported from) comes first.
    """
    key = canonical_name(name)
    try:
        using = reader()
    except AttnConfigError:  # a bad <PREFIX>_READER is discovery's error, not the version's
        using = "reference"
    records = scan(lambda _: False, (key,), kept_only=True, using=using, only={key})
    found = ((r.key if r.location[:1] == "<" else _scan.key_of(r.location), r) for r in records)
    copies = [r for k, r in found if k == key and r.version]  # as version() finds them (Lookup)
    if root is not None:
        copies.sort(key=lambda copy: not installed_with(copy.path_entry, copy.location, root))
    return copies[0].version if copies else None
