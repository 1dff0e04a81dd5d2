"""The discovery cache: one scan per host, in this process and in a validated `marshal` file."""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
import time
from binascii import crc32
from typing import TYPE_CHECKING, Any

from .controls import Controls, canonical_name, standard_finders
from .errors import Record

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    WarningData = tuple[str, str]  # the code that names the warning's class, message
    Stamp = tuple[int, int, int, int] | None
    MergeContext = tuple[str, tuple[object, ...], tuple[str, ...], tuple[bool, ...]]  # built-ins
    RecordData = tuple[Any, ...]  # a DistributionRecord as report.plain makes it

FORMAT = 12  # bumped whenever the layout of the file changes
RACY_NS = 2_000_000_000  # a file modified this close to the scan is not trusted (coarse clocks)
TICK_NS = 20_000_000  # how far the kernel's file clock (st_ctime) may lag time.time_ns()
#: attn's modules whose code decides what a cached merge holds: editing one invalidates.
_SOURCES: tuple[str, ...] = ("_cache", "_findings", "_metadata", "_scan", "codes", "controls")
_SOURCES += ("discovery", "errors", "report", "table")
_HERE = os.path.dirname(os.path.abspath(__file__))
_METADATA_FILES = ("entry_points.txt", "METADATA", "PKG-INFO", "requires.txt")
_SHARED: dict[str, tuple[tuple[object, ...], HostScan]] = {}  # by host: this process's scan
_SEEN: dict[str, Stamp] = {}  # each file as this process last read or wrote it


class Outcome(Record):
    """One registry's merge: its warnings, and the result lookups and listing share."""

    warnings: tuple[WarningData, ...]
    result: tuple[Any, ...]


def _stamp(path: str | int) -> Stamp:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    # st_ctime: an edit in place whose mtime, size and inode were set back still changes it.
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


class HostScan(Record):
    """One scan of a host's distributions; ``outcomes`` and ``warned`` fill in as they merge."""

    key: tuple[object, ...]
    stamps: tuple[tuple[str, Stamp], ...]
    records: tuple[RecordData, ...]
    file: str | None
    started: int  # time.time_ns() when the scan began: stamps this close to it are racy
    outcomes: dict[MergeContext, Outcome]  # each registry's merge, per controls
    warned: set[WarningData]  # the warnings issued for this scan (each is issued once)

    def remember(self, context: MergeContext, outcome: Outcome) -> None:
        """Keep *outcome* of the merge in *context*, and write the file."""
        self.outcomes[context] = outcome
        if self.file is None or _SEEN.get(self.file, stamp := _stamp(self.file)) != stamp:
            return  # another process wrote the file since: it may hold a newer answer (refresh())
        outcomes = {k: tuple(v) for k, v in self.outcomes.items()}
        data = marshal.dumps((FORMAT, self.key, self.started, self.stamps, self.records, outcomes))  # type: ignore[arg-type]
        data = crc32(data).to_bytes(4, "big") + data  # see _load
        existing = folder = os.path.dirname(self.file)
        while os.geteuid() == 0 and not os.path.lexists(existing):  # where makedirs would begin
            existing = os.path.dirname(existing)
        temporary = f"{self.file}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:  # root makes no folder in another user's (sudo -E keeps HOME): as pip, no write
            if os.geteuid() != 0 or os.stat(existing).st_uid == 0:
                os.makedirs(folder, mode=0o700, exist_ok=True)
            if _ours(folder):
                with open(temporary, "xb", opener=_open) as stream:
                    stream.write(data)
                os.replace(temporary, self.file)  # atomic: a temporary file in the same folder
                _SEEN[self.file] = _stamp(self.file)
        except OSError:  # a cache that cannot be written is not an error: attn works uncached
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _ours(path: str | int, kind: Callable[[int], bool] = stat.S_ISDIR) -> bool:
    """A folder (or *kind* of file) owned by the current user, writable by it and no one else."""
    try:  # a folder that is a symlink (another user's, in a shared folder) is not ours
        st = os.lstat(path) if isinstance(path, str) else os.stat(path)
    except OSError:
        return False
    mine = kind(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
    return mine and (type(path) is int or os.access(path, os.W_OK))  # so refresh() can repair


def _open(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), 0o600)


def _load(file: str, key: tuple[object, ...]) -> HostScan | None:
    """The scan in *file*, if attn wrote it (its checksum matches), for *key*, and up to date."""
    if not _ours(os.path.dirname(file)) or not os.access(file, os.W_OK):  # chattr +i: no repair
        return None
    try:  # only a regular file of ours: owned by us, writable by us only
        with open(file, "rb", opener=_open) as stream:
            data = stream.read() if _ours(stream.fileno(), stat.S_ISREG) else b""
            seen = _stamp(stream.fileno())  # the file read: one replaced meanwhile differs
        # Only the bytes attn wrote, as git checks its index: any other change fails the checksum.
        if data[:4] != crc32(data[4:]).to_bytes(4, "big"):
            return None
        loaded = marshal.loads(data[4:])  # noqa: S302 - our own file, validated
        if type(loaded) is not tuple or loaded[:2] != (FORMAT, key):
            return None
        _, _, began, stamps, records, outcomes = loaded
        # Only paths older than the scan's clock tick are trusted (git's racy entries); an mtime
        # set back (cp -p) leaves a new ctime, late by a tick, or by 1 s with whole seconds (ext3).
        racy = any(
            s
            and (s[0] >= began - RACY_NS or s[3] >= began - (TICK_NS if s[3] % 10**9 else RACY_NS))
            for _, s in stamps
        )
        if racy or any(_stamp(path) != stamp for path, stamp in stamps):
            return None
        outcomes, _SEEN[file] = {k: Outcome(*v) for k, v in dict(outcomes).items()}, seen
    # MemoryError: a damaged size; the others: a checksummed payload of another shape (by hand).
    except (OSError, EOFError, ValueError, TypeError, LookupError, MemoryError):
        return None
    return HostScan(key, stamps, records, file, began, outcomes, set())


def host_scan(host: str, groups: Iterable[str], *, controls: Controls, fresh: bool) -> HostScan:
    """The host's scan: this process's, else the cache file's, else a new one by its reader."""
    host_key, ordered, using = canonical_name(host), tuple(sorted(set(groups))), controls.reader
    # importlib_metadata, once imported, reads every copy by its own rules: its code is stamped.
    backport = [f for f in [getattr(sys.modules.get("importlib_metadata"), "__file__", None)] if f]
    cwd = ""  # no working folder: relative entries stay relative, so no other process's key equals
    with contextlib.suppress(OSError):
        cwd = os.getcwd()
    resolved = tuple(os.path.join(cwd, e) if isinstance(e, str) else repr(e) for e in sys.path)
    # Off with <PREFIX>_NO_CACHE, another meta-path finder (stat cannot check it), no geteuid.
    off = controls.no_cache or not standard_finders(backport=True)
    process_key, held = (ordered, tuple(sys.path), resolved, using), _SHARED.get(host_key)
    if not fresh and held is not None and held[0] == process_key:  # set since: write no file
        return held[1]._replace(file=None) if off else held[1]
    interpreter = (sys.executable, sys.version, sys.implementation.cache_tag)
    key = (FORMAT, *interpreter, resolved, _HERE, host_key, ordered, using, *backport)
    base = os.environ.get("XDG_CACHE_HOME", "")
    base = base if os.path.isabs(base) else os.path.join(os.path.expanduser("~"), ".cache")
    file = None
    if not off and hasattr(os, "geteuid") and os.path.isabs(base):
        # A name, not a check (the key is stored): a tuple of ints hashes alike in every process.
        digest = hash(tuple(repr(key).encode("utf-8", "surrogateescape"))) & 0xFFFF_FFFF_FFFF_FFFF
        file = os.path.join(base, "attn", f"{host_key}-{digest:016x}.marshal")
    found = None if file is None or fresh else _load(file, key)
    if found is None:
        # sys.path's folders are stamped before they are read: one switched meanwhile mismatches.
        entries = {path: _stamp(path) for path in (*resolved, file)} if file is not None else {}
        from .discovery import scan_host  # noqa: PLC0415 - the cold path only
        from .report import plain  # noqa: PLC0415

        started, records = time.time_ns(), plain(scan_host(host, ordered, using))
        paths: list[str] = []
        if file is not None:  # stamps only for a file to check them against
            paths = [*resolved, *(os.path.join(_HERE, f"{n}.py") for n in _SOURCES), *backport]
            for _, location, *_ in records:  # the metadata folder (or legacy file) and its files
                paths += [location, *(os.path.join(location, f) for f in _METADATA_FILES)]
        stamps = tuple((p, entries[p] if p in entries else _stamp(p)) for p in dict.fromkeys(paths))
        # A metadata file that is missing needs no stamp: creating it changes its folder's.
        stamps = tuple((p, s) for p, s in stamps if s is not None or p in entries)
        # refresh() reads no file and deletes the host's others: what it repairs may be in them.
        if fresh and file is not None and _ours(folder := os.path.dirname(file)):
            # f"{host}-{16 hex digits}.marshal", not another host's whose name starts so.
            for name in os.listdir(folder):
                if name.startswith(f"{host_key}-") and len(name) == len(host_key) + 25:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(folder, name))
        found = HostScan(key, stamps, records, file, started, {}, set())
        if file is not None:  # it writes over the file its scan began on only (refresh(): none)
            _SEEN[file] = _stamp(file) if fresh else entries[file]
    _SHARED[host_key] = (process_key, found)
    return found


def forget(host: str | None = None) -> None:
    """Drop *host*'s scan in this process, or every one (the next discovery scans again)."""
    for key in list(_SHARED) if host is None else [canonical_name(host)]:
        _SHARED.pop(key, None)
