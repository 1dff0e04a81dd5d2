"""The discovery cache: what a scan found, shared in this process and kept on disk.

The registries of one host (its sibling groups, e.g. ``attn.backends`` and
``attn.mla_prefill_backends``) read the same distributions, so the first of
them to discover scans ``sys.path`` once for all of them and the others use
that scan. ``refresh()`` scans again and replaces it.

On disk, ``$XDG_CACHE_HOME/attn/`` (else ``~/.cache/attn/``) holds one file
per host, interpreter and ``sys.path``: the records of the distributions that
matter to the host (its plugins, the host, duplicates, unreadable copies) and
each registry's merge outcome per setting of the host's variables. A process
trusts the file only when a fresh scan would give the same answer, which it
checks with one ``stat`` per ``sys.path`` entry and per cached metadata file.
The file is data (`marshal` of plain tuples), validated on load; nothing
in it is executed or unpickled.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from ._metadata import (
    DistributionRecord,
    EntryPointRecord,
    MetadataRecord,
    Problem,
    canonical_name,
    reader,
    standard_finders,
)
from .controls import Controls, parse_bool
from .errors import Code

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from .report import DiscoveryResult

    #: An entry of the table: name, module, qualname, distribution, version, value.
    EntryData = tuple[str, str, str, str | None, str | None, str | None]
    #: (the code that names the warning's class, message)
    WarningData = tuple[str, str]
    #: (message, problems) of the strict-mode error
    ErrorData = tuple[str, tuple[str, ...]]
    Stamp = tuple[int, int, int] | None
    #: What a merge depends on besides the scan: the host's variables as set
    #: (``environment_key``) and the registry's built-in names.
    MergeContext = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]

__all__ = ["HostScan", "Outcome", "forget", "host_scan"]

FORMAT = 6
"""Bumped whenever the layout of the file changes."""

RACY_NS = 2_000_000_000
"""A file modified this close to the scan is not trusted (coarse file-system clocks)."""

_SOURCES = ("_cache", "_metadata", "_scan", "compat", "controls", "discovery", "report", "table")
"""attn's own modules whose code decides what is cached: editing one invalidates."""

_HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What merging one registry's plugins gave: its table entries, warnings, strict error.

    All plain data, as the file stores it, with the discovery result it came
    from (``report.result_data``), so that listing from the cache need not
    run the pipeline again.
    """

    entries: tuple[EntryData, ...]
    warnings: tuple[WarningData, ...]
    error: ErrorData | None
    result: object = None

    def data(self) -> tuple[object, ...]:
        """The outcome as plain tuples (what the file stores)."""
        return (self.entries, self.warnings, self.error, self.result)

    def discovery(self) -> DiscoveryResult | None:
        """The discovery result; ``None`` if the data is not what attn writes."""
        from .report import result_from  # noqa: PLC0415 - listing only, off the warm path

        try:
            return None if self.result is None else result_from(self.result)
        except (ValueError, TypeError):
            return None  # the pipeline works it out again


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _resolved_path() -> tuple[str, ...]:
    # Relative sys.path entries ('' included) are read against the working folder.
    return tuple(os.path.abspath(e) if isinstance(e, str) else repr(e) for e in sys.path)


def _metadata_files(record: DistributionRecord) -> tuple[str, ...]:
    folder = record.location
    return (
        folder,
        os.path.join(folder, "entry_points.txt"),
        os.path.join(folder, "METADATA"),
        os.path.join(folder, "PKG-INFO"),
        os.path.join(folder, "requires.txt"),
    )


def _record_data(record: DistributionRecord) -> tuple[object, ...]:
    meta = record.metadata
    return (
        record.key,
        record.location,
        record.path_index,
        record.path_entry,
        tuple((ep.group, ep.name, ep.value) for ep in record.entry_points),
        None if meta is None else (meta.name, meta.version, meta.requires, _data(meta.problem)),
        _data(record.entry_points_problem),
    )


def _data(problem: Problem | None) -> tuple[object, ...] | None:
    if problem is None:
        return None
    return (problem.code.value, problem.file, problem.detail, problem.offset, problem.finder)


class _Invalid(Exception):  # noqa: N818 - internal signal, never escapes this module
    """The file's content is not what this version of attn writes."""


def _check(condition: bool) -> None:
    if not condition:
        raise _Invalid


def _tuple(value: object, length: int | None = None) -> tuple[Any, ...]:
    """*value* if it is a tuple (of *length* items), else the file is not trusted."""
    if type(value) is not tuple or (length is not None and len(value) != length):
        raise _Invalid
    return value


def _str_or_none(value: object) -> bool:
    return value is None or type(value) is str


def _strings(value: object) -> bool:
    return type(value) is tuple and all(type(v) is str for v in value)


def _problem_from(data: object) -> Problem | None:
    if data is None:
        return None
    code, file, detail, offset, finder = _tuple(data, 5)
    _check(type(file) is str and type(detail) is str and type(finder) is str)
    _check(type(code) is str and type(offset) is int)
    try:
        return Problem(Code(code), file, detail, offset, finder)
    except ValueError:  # not a code of this version of attn
        raise _Invalid from None


def _record_from(data: object) -> DistributionRecord:
    key, location, index, entry, eps, meta, problem = _tuple(data, 7)
    _check(type(key) is str and type(location) is str and type(entry) is str)
    _check(type(index) is int)
    entry_points = []
    for ep in _tuple(eps):
        group, name, value = _tuple(ep, 3)
        _check(type(group) is str and type(name) is str and type(value) is str)
        entry_points.append(EntryPointRecord(group, name, value))
    metadata = None
    if meta is not None:
        dist_name, version, requires, why = _tuple(meta, 4)
        _check(_str_or_none(dist_name) and _str_or_none(version) and _strings(requires))
        metadata = MetadataRecord(dist_name, version, requires, _problem_from(why))
    return DistributionRecord(
        key, location, index, entry, tuple(entry_points), metadata, _problem_from(problem)
    )


def _outcome_from(data: object) -> Outcome:
    entries, warned, error, result = _tuple(data, 4)
    for entry in _tuple(entries):
        fields = _tuple(entry, 6)
        _check(all(type(p) is str for p in fields[:3]) and all(map(_str_or_none, fields[3:])))
    for warning in _tuple(warned):
        _check(_strings(_tuple(warning, 2)))
    if error is not None:
        message, problems = _tuple(error, 2)
        _check(type(message) is str and _strings(problems))
    # The discovery result is checked field by field when it is first decoded
    # (report.result_from); here, that it is plain data, as report.result_data writes it.
    _check(result is None or _plain(result))
    return Outcome(entries, warned, error, result)


_PLAIN = (str, int, bool, type(None))
_DEPTH = 8
"""How deeply a discovery result nests tuples (a plugin's path in a conflict: 6)."""


def _plain(value: object, depth: int = 0) -> bool:
    """Whether *value* is nested tuples of strings, integers, booleans and ``None`` only."""
    if type(value) in _PLAIN:
        return True
    return type(value) is tuple and depth < _DEPTH and all(_plain(v, depth + 1) for v in value)


@dataclass(slots=True, eq=False)
class HostScan:
    """One scan of a host's distributions, from ``sys.path`` or from the cache file.

    ``records`` are those the pipeline reads: the host scan returns only them,
    and the file stores only them.
    """

    host: str
    groups: tuple[str, ...]
    key: tuple[object, ...]
    stamps: tuple[tuple[str, Stamp], ...]
    records: tuple[DistributionRecord, ...]
    file: str | None
    _: KW_ONLY
    writable: bool
    """Whether the file may be written: nothing it depends on changed near the scan."""
    from_file: bool
    outcomes: dict[object, Outcome] = field(default_factory=dict)

    def outcome(self, group: str, context: MergeContext) -> Outcome | None:
        """The cached outcome of merging *group* in *context* (variables, built-in names)."""
        return self.outcomes.get((group, context[0], context[1]))

    def remember(self, group: str, context: MergeContext, outcome: Outcome) -> None:
        """Keep *outcome* for *group* and *context*; write the file if it may be trusted."""
        self.outcomes[(group, context[0], context[1])] = outcome
        if self.file is None or not self.writable:
            return
        data = (
            FORMAT,
            self.key,
            self.stamps,
            tuple(_record_data(r) for r in self.records),
            {k: v.data() for k, v in self.outcomes.items()},
        )
        _write(self.file, marshal.dumps(data))  # type: ignore[arg-type]


# -- where the file lives, and how it is read and written ---------------------


def cache_folder() -> str | None:
    """``$XDG_CACHE_HOME/attn`` (an absolute ``XDG_CACHE_HOME``), else ``~/.cache/attn``.

    ``None`` (no cache) where files have no POSIX owner (no `os.geteuid()`,
    as on Windows): a file that is not provably the user's own is never read.
    """
    if not hasattr(os, "geteuid"):
        return None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "attn")


def enabled(prefix: str) -> bool:
    """Whether the cache may be used: ``<PREFIX>_NO_CACHE`` unset or false.

    Raises:
        AttnConfigError: the variable is not a boolean.
    """
    variable = Controls(prefix).no_cache_variable
    return not parse_bool(variable, os.environ.get(variable))


def _ours(st: os.stat_result) -> bool:
    """Owned by the current user, and writable by no one else."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _private_folder(folder: str) -> bool:
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and _ours(st)


def _read(file: str) -> bytes | None:
    """The file's bytes if it is ours: a regular file, owned by us, writable by us only."""
    if not _private_folder(os.path.dirname(file)):
        return None
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and _ours(st)):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _write(file: str, data: bytes) -> None:
    """Write *file* atomically (a temporary file in the same folder, then rename); never fail."""
    folder = os.path.dirname(file)
    temporary = f"{file}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not _private_folder(folder):
            return
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
            0o600,
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temporary, file)
    except OSError:
        # A cache that cannot be written is not an error: attn works uncached.
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _key(host: str, groups: tuple[str, ...], using: str) -> tuple[object, ...]:
    return (
        FORMAT,
        sys.executable,
        sys.version,
        sys.implementation.cache_tag,
        _resolved_path(),
        _HERE,
        host,
        groups,
        using,
    )


def _file_name(folder: str, host: str, key: tuple[object, ...]) -> str:
    # A name for the file, not a check of its content (the key is stored and
    # compared): the hash of a tuple of ints is the same in every process,
    # unlike the hash of a string, and needs no hashing module to import.
    text = repr(key).encode("utf-8", "surrogateescape")
    digest = f"{hash(tuple(text)) & 0xFFFF_FFFF_FFFF_FFFF:016x}"
    return os.path.join(folder, f"{host}-{digest}.marshal")


def _load(file: str, key: tuple[object, ...], host: str, groups: tuple[str, ...]) -> HostScan:
    """The scan stored in *file*, if it is valid for *key* and nothing changed since.

    Raises:
        _Invalid: missing, unreadable, foreign, corrupt or out of date.
    """
    data = _read(file)
    if data is None:
        raise _Invalid
    try:
        # Plain data only: a code object (or anything else) fails the checks below.
        loaded = marshal.loads(data)  # noqa: S302 - our own file, owner-only, validated
    except (EOFError, ValueError, TypeError):
        raise _Invalid from None
    version, stored_key, stamps, records, outcomes = _tuple(loaded, 5)
    _check(version == FORMAT and stored_key == key)
    for item in _tuple(stamps):
        path, stamp = _tuple(item, 2)
        _check(type(path) is str and _stamp(path) == stamp)
    decoded = tuple(_record_from(record) for record in _tuple(records))
    _check(type(outcomes) is dict)
    parsed = {}
    for outcome_key, outcome in outcomes.items():
        _tuple(outcome_key, 3)
        parsed[outcome_key] = _outcome_from(outcome)
    return HostScan(
        host,
        groups,
        key,
        stamps,
        decoded,
        file,
        writable=True,
        from_file=True,
        outcomes=parsed,
    )


def _scan_stamps(
    records: Sequence[DistributionRecord], started: int
) -> tuple[tuple[tuple[str, Stamp], ...], bool]:
    """Stamps of everything the cache depends on, and whether all of them may be trusted."""
    paths = list(dict.fromkeys(_resolved_path()))
    paths += [os.path.join(_HERE, f"{name}.py") for name in _SOURCES]
    for record in records:
        paths.extend(_metadata_files(record))
    stamps = tuple((path, _stamp(path)) for path in dict.fromkeys(paths))
    # A file modified in the same clock tick as the scan may change again
    # without its stamp changing: do not trust the scan (as git's racy index).
    trusted = all(s is None or s[0] < started - RACY_NS for _, s in stamps)
    return stamps, trusted


# -- the process-wide scans -----------------------------------------------------

_SHARED: dict[str, tuple[tuple[object, ...], HostScan]] = {}


def _process_key(groups: Iterable[str], using: str) -> tuple[object, ...]:
    return (tuple(sorted(set(groups))), tuple(sys.path), os.getcwd(), using)


def host_scan(
    host: str,
    groups: Iterable[str],
    scan: Callable[[], tuple[DistributionRecord, ...]],
    *,
    prefix: str,
    fresh: bool = False,
) -> HostScan:
    """The host's scan: this process's, else the cache file's, else a new one.

    *scan* returns the records the pipeline reads (``discovery.scan_host``:
    the copies whose metadata the scan read), which is all the file stores.
    With *fresh* (``refresh()``) the cache is not read; a new scan is made
    and written. The file is written only when every ``sys.path`` entry and
    metadata file it depends on was last modified well before the scan began.
    """
    host_key = canonical_name(host)
    ordered = tuple(sorted(set(groups)))
    using = reader(prefix)
    process_key = _process_key(ordered, using)
    if not fresh:
        held = _SHARED.get(host_key)
        if held is not None and held[0] == process_key:
            return held[1]
    use_cache = enabled(prefix)
    # Distributions from another finder cannot be checked with stat().
    use_cache = use_cache and standard_finders()
    folder = cache_folder() if use_cache else None
    key = _key(host_key, ordered, using)
    file = None if folder is None else _file_name(folder, host_key, key)
    found = None
    if file is not None and not fresh:
        try:
            found = _load(file, key, host_key, ordered)
        except _Invalid:
            found = None
    if found is None:
        started = time.time_ns()
        records = scan()
        stamps, trusted = _scan_stamps(records, started)
        found = HostScan(
            host_key, ordered, key, stamps, records, file, writable=trusted, from_file=False
        )
    _SHARED[host_key] = (process_key, found)
    return found


def forget(host: str | None = None) -> None:
    """Drop *host*'s scan in this process, or every one (the next discovery scans again)."""
    if host is None:
        _SHARED.clear()
    else:
        _SHARED.pop(canonical_name(host), None)


def environment_key(prefix: str) -> tuple[tuple[str, str], ...]:
    """The host's variables (``<PREFIX>_*`` and ``_<PREFIX>_*``) as they are set now."""
    heads = (f"{prefix}_", f"_{prefix}_")
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(heads)))
