"""The discovery cache: what a scan found, shared in this process and kept on disk.

The registries of one host (its sibling groups) read the same distributions,
so the first to discover scans ``sys.path`` for all of them; ``refresh()``
scans again. On disk, ``$XDG_CACHE_HOME/attn/`` (else ``~/.cache/attn/``)
holds one file per host, interpreter and ``sys.path``: the records the
pipeline reads and each registry's merge outcome per setting of the host's
variables, trusted while one ``stat`` per ``sys.path`` entry and per cached
metadata file shows nothing changed. The file is data (`marshal` of plain
tuples), validated on load; nothing in it is executed or unpickled.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from .controls import Controls, canonical_name, parse_bool, reader, standard_finders
from .errors import Code

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    #: An entry of the table: name, module, qualname, distribution, version, value.
    EntryData = tuple[str, str, str, str | None, str | None, str]
    #: (the code that names the warning's class, message)
    WarningData = tuple[str, str]
    #: (message, problems) of the strict-mode error
    ErrorData = tuple[str, tuple[str, ...]]
    Stamp = tuple[int, int, int, int] | None
    #: What a merge depends on besides the scan: the host's variables as set
    #: (``environment_key``) and the registry's built-in names.
    MergeContext = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]
    Check = Callable[[object], bool]
    #: A distribution record as plain tuples (``report.plain``), which the pipeline rebuilds.
    RecordData = tuple[Any, ...]

__all__ = ["HostScan", "Outcome", "forget", "host_scan"]

FORMAT = 7
"""Bumped whenever the layout of the file changes."""

RACY_NS = 2_000_000_000
"""A file modified this close to the scan is not trusted (coarse file-system clocks)."""

_SOURCES = ("_cache", "_metadata", "_scan", "compat", "controls", "discovery", "report", "table")
"""attn's own modules whose code decides what is cached: editing one invalidates."""

_HERE = os.path.dirname(os.path.abspath(__file__))


class Outcome(NamedTuple):
    """What merging one registry's plugins gave: its warnings, strict error and result.

    Plain data, as the file stores it: the result is the discovery result as
    plain tuples (``report.plain``; ``report.result_from`` rebuilds it). The
    table's entries (`entries`) and the listing both come from that one
    result, so no content of the file can make lookups and listing disagree.
    """

    warnings: tuple[WarningData, ...]
    error: ErrorData | None
    result: tuple[Any, ...]

    def entries(self) -> tuple[EntryData, ...]:
        """``(name, module, qualname, distribution, version, value)`` of each merged entry point."""
        return tuple(
            (name, *path, dist, version, value)
            for name, value, dist, _, version, *_, status, _, path, _, _ in self.result[2]
            if status == "used" and path is not None
        )


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    # st_ctime: an edit in place whose mtime, size and inode were set back still changes it.
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


def _cwd() -> str | None:
    # None when the working folder was removed: relative sys.path entries
    # ('' included) then find nothing, as importlib.metadata finds nothing there.
    try:
        return os.getcwd()
    except OSError:
        return None


def _resolved_path() -> tuple[str, ...]:
    # Relative entries are read against the working folder; with none, they
    # stay relative, which no absolute entry of another process equals.
    cwd = _cwd()
    return tuple(
        (e if cwd is None else os.path.join(cwd, e)) if isinstance(e, str) else repr(e)
        for e in sys.path
    )


def _metadata_files(record: RecordData) -> tuple[str, ...]:
    folder = record[1]  # the metadata folder (DistributionRecord.location)
    return (
        folder,
        os.path.join(folder, "entry_points.txt"),
        os.path.join(folder, "METADATA"),
        os.path.join(folder, "PKG-INFO"),
        os.path.join(folder, "requires.txt"),
    )


# -- what the file may hold: each part checked against its shape on load ------


def _is(*types: type) -> Check:
    return lambda value: type(value) in types


def _maybe(check: Check) -> Check:
    return lambda value: value is None or check(value)


def _row(*fields: Check) -> Check:
    """A tuple of exactly these fields."""
    return lambda value: (
        type(value) is tuple
        and len(value) == len(fields)
        and all(check(item) for check, item in zip(fields, value, strict=True))
    )


def _many(item: Check, least: int = 0) -> Check:
    """A tuple of at least *least* items."""
    return lambda value: type(value) is tuple and len(value) >= least and all(map(item, value))


def _among(values: Iterable[str]) -> Check:
    allowed = frozenset(values)
    return lambda value: type(value) is str and value in allowed


_STR, _INT, _BOOL, _OPT = _is(str), _is(int), _is(bool), _is(str, type(None))
_CODE = _among(c.value for c in Code)
_STATUS = _among(("used", "incompatible", "shadowed", "invalid", "disabled"))
_PROBLEM = _maybe(_row(_CODE, _STR, _STR, _INT, _STR))
_RECORD = _row(
    *(_STR, _STR, _INT, _STR, _many(_row(_STR, _STR, _STR))),
    *(_maybe(_row(_OPT, _OPT, _many(_STR), _PROBLEM)), _PROBLEM),
)
_PLUGIN = _row(
    *(_STR, _STR, _STR, _STR, _OPT, _STR, _INT, _many(_STR), _STATUS, _OPT),
    *(_maybe(_row(_STR, _STR)), _OPT, _maybe(_CODE)),
)
_FINDING = _row(_CODE, _STR, _STR, _STR, _OPT, _OPT, _OPT, _OPT, _BOOL)
_RESULT = _row(
    *(_STR, _OPT, _many(_PLUGIN), _many(_row(_STR, _many(_PLUGIN, least=2)))),
    *(_many(_FINDING), _BOOL, _many(_row(_STR, _STR, _STR)), _many(_FINDING)),
)
_OUTCOME = _row(_many(_row(_STR, _STR)), _maybe(_row(_STR, _many(_STR))), _RESULT)
_OUTCOME_KEY = _row(_STR, _many(_row(_STR, _STR)), _many(_STR))
_STAMPS = _many(_row(_STR, _maybe(_row(_INT, _INT, _INT, _INT))))


class HostScan(NamedTuple):
    """One scan of a host's distributions, from ``sys.path`` or from the cache file.

    ``records`` are those the pipeline reads, as plain tuples: the host scan
    returns only them, and the file stores only them. ``outcomes`` and
    ``warned`` fill in as the host's registries merge.
    """

    key: tuple[object, ...]
    stamps: tuple[tuple[str, Stamp], ...]
    records: tuple[RecordData, ...]
    file: str | None
    writable: bool
    """Whether the file may be written: nothing it depends on changed near the scan."""
    from_file: bool
    outcomes: dict[object, Outcome]
    warned: set[WarningData]
    """The warnings the host's registries issued for this scan (each is issued once)."""

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
            self.records,
            {k: tuple(v) for k, v in self.outcomes.items()},
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
    """Whether ``<PREFIX>_NO_CACHE`` is unset or false (`AttnConfigError` if no boolean)."""
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


def _delete_files(folder: str, host: str) -> None:
    """Delete every cache file of *host* in *folder* (a private one): the next processes scan."""
    if not _private_folder(folder):
        return
    for name in os.listdir(folder):
        # f"{host}-{16 hex digits}.marshal": not another host whose name starts the same.
        if name.startswith(f"{host}-") and len(name) == len(host) + 25:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


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
    # A name, not a check (the key is stored and compared): the hash of a tuple
    # of ints, unlike a string's, is the same in every process.
    text = repr(key).encode("utf-8", "surrogateescape")
    digest = f"{hash(tuple(text)) & 0xFFFF_FFFF_FFFF_FFFF:016x}"
    return os.path.join(folder, f"{host}-{digest}.marshal")


def _load(file: str, key: tuple[object, ...]) -> HostScan | None:
    """The scan stored in *file*, if it is valid for *key* and nothing changed since.

    ``None`` when it is missing, unreadable, foreign, corrupt or out of date:
    every part of it is checked against the shape attn writes, or none is used.
    """
    data = _read(file)
    if data is None:
        return None
    try:
        # Plain data only: a code object (or anything else) fails the checks below.
        loaded = marshal.loads(data)  # noqa: S302 - our own file, owner-only, validated
    except (EOFError, ValueError, TypeError):
        return None
    if not (type(loaded) is tuple and len(loaded) == 5 and loaded[:2] == (FORMAT, key)):
        return None
    _, _, stamps, records, outcomes = loaded
    valid = (
        _STAMPS(stamps)
        and all(_stamp(path) == stamp for path, stamp in stamps)
        and _many(_RECORD)(records)
        and type(outcomes) is dict
        and all(_OUTCOME_KEY(k) and _OUTCOME(v) for k, v in outcomes.items())
    )
    if not valid:
        return None
    outcomes = {k: Outcome(*v) for k, v in outcomes.items()}
    return HostScan(
        key, stamps, records, file, writable=True, from_file=True, outcomes=outcomes, warned=set()
    )


def _scan_stamps(
    records: tuple[RecordData, ...], started: int
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


def host_scan(
    host: str,
    groups: Iterable[str],
    scan: Callable[[], tuple[RecordData, ...]],
    *,
    prefix: str,
    fresh: bool = False,
) -> HostScan:
    """The host's scan: this process's, else the cache file's, else a new one.

    *scan* returns the records the pipeline reads (``discovery.scan_host``:
    the copies whose metadata the scan read) as plain tuples, which is all
    the file stores.
    With *fresh* (``refresh()``) the cache is not read; a new scan is made
    and written, and when it differs from the scan it replaces, the host's
    files for every other ``sys.path`` are deleted too (they may be as stale).
    The file is written only when every ``sys.path`` entry and metadata file
    it depends on was last modified well before the scan began.
    """
    host_key = canonical_name(host)
    ordered = tuple(sorted(set(groups)))
    using = reader(prefix)
    process_key = (ordered, tuple(sys.path), _cwd(), using)
    held = _SHARED.get(host_key)
    if not fresh and held is not None and held[0] == process_key:
        return held[1]
    # Distributions from another finder cannot be checked with stat().
    use_cache = enabled(prefix) and standard_finders()
    folder = cache_folder() if use_cache else None
    key = _key(host_key, ordered, using)
    file = None if folder is None else _file_name(folder, host_key, key)
    found = None if file is None or fresh else _load(file, key)
    if found is None:
        started = time.time_ns()
        records = scan()
        stamps, trusted = _scan_stamps(records, started)
        if fresh and file is not None:
            before = held[1] if held is not None else _load(file, key)
            if before is None or before.records != records:
                _delete_files(os.path.dirname(file), host_key)
        found = HostScan(
            key, stamps, records, file, writable=trusted, from_file=False, outcomes={}, warned=set()
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
