"""Installed-metadata records, and the fast reader: `importlib.metadata`'s answers, from folders."""

from __future__ import annotations

import os
import re
import stat
import textwrap
from functools import partial
from itertools import takewhile
from typing import TYPE_CHECKING

from .codes import Code
from .controls import canonical_name
from .errors import Record

if TYPE_CHECKING:
    from collections.abc import Callable, Container

    Copy = tuple["DistributionRecord", Callable[[], "MetadataRecord"]]
    EntryPoints = tuple[tuple["EntryPointRecord", ...], "Problem | None"]

_FOLDERS = (".dist-info", ".egg-info")
_BY_FOLDER = r"(?s)(?!-)\.*[^.].*\.(?:dist|egg)-info"  # what Python keys by folder; others by Name
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
#: The key of a record for something unreadable on sys.path itself (a folder, a finder).
UNREADABLE_KEY = "<unreadable>"
#: email.feedparser's headerRE: a header, an envelope (``From ``) line or a continuation.
_HEADER = re.compile(r"^(From |[\041-\071\073-\176]*:|[\t ])")
#: By code, or by code and file where the file changes what the problem does.
_MESSAGES: dict[object, str] = {
    Code.PERMISSION_DENIED: "{p.file} cannot be read: permission denied",
    Code.NOT_UTF8: "{p.file} is not UTF-8 text (byte {p.detail} at offset {p.offset})",
    Code.IS_A_FOLDER: "{p.file} is a folder, not a file",
    Code.NO_METADATA: "no METADATA or PKG-INFO file, or an empty one",
    Code.NO_NAME: "metadata has no Name field",
    Code.READ_ERROR: "{p.file} cannot be read: {p.detail}",
    (Code.BYTE_ORDER_MARK, "entry_points.txt"): "{p.file} starts with a byte-order mark, so "
    "Python (importlib.metadata) reads no entry point before the next [group] header",
    Code.BYTE_ORDER_MARK: "{p.file} starts with a byte-order mark, so Python "
    "(importlib.metadata) reads none of its fields (no Name, no Version)",
    Code.ENTRIES_BEFORE_HEADER: "{p.file} has entries before any [group] header (first: "
    "{p.detail!r}); Python (importlib.metadata) reads none of them",
    Code.FINDER_FAILED: "the meta-path finder {p.finder} raised {p.detail} in find_distributions()",
    Code.PATH_UNREADABLE: "the sys.path entry {p.file} cannot be read (permission denied)",
}


class Problem(Record):
    """Why a metadata file or a ``sys.path`` entry cannot be read (``str()`` says it)."""

    code: Code
    file: str = ""  # METADATA, entry_points.txt, ... or the sys.path entry
    detail: str = ""  # the error's text, the first stray entry, or the byte that is not UTF-8
    offset: int = 0  # where that byte is
    finder: str = ""  # the meta-path finder that failed, as module.QualName

    def __str__(self) -> str:
        template = _MESSAGES.get((self.code, self.file)) or _MESSAGES.get(self.code)
        return (template or "{p.code}: {p.detail}").format(p=self)


class EntryPointRecord(Record):
    group: str
    name: str
    value: str


class MetadataRecord(Record):
    """The core metadata fields of one copy, or why they cannot be used."""

    name: str | None
    version: str | None
    requires: tuple[str, ...] = ()
    problem: Problem | None = None


class DistributionRecord(Record):
    """One copy of a distribution's metadata on ``sys.path``; ``metadata`` ``None`` if not read."""

    key: str  # the canonical name, as importlib.metadata tells copies apart (key_of)
    location: str  # the metadata folder (or legacy egg-info file)
    path_index: int  # the index of the sys.path entry it was found under
    path_entry: str
    entry_points: tuple[EntryPointRecord, ...]
    metadata: MetadataRecord | None
    entry_points_problem: Problem | None = None

    @property
    def name(self) -> str:
        return self.metadata.name if self.metadata and self.metadata.name else self.key

    @property
    def version(self) -> str | None:
        return self.metadata and self.metadata.version

    @property
    def metadata_problem(self) -> Problem | None:
        return self.metadata and self.metadata.problem


def key_of(location: str, read: Callable[[], MetadataRecord] | None = None) -> str:
    """The canonical name version() finds *location*'s copy by; with *read*, entry_points()'s."""
    if read and not re.fullmatch(_BY_FOLDER, os.path.basename(location)) and (name := read().name):
        return canonical_name(name)  # as _unique: by Name (an EGG-INFO, a folder in a zip, ...)
    folder = location.rstrip("/")  # a zip's folders end in "/"; an egg's EGG-INFO is named after it
    egg = os.path.basename(folder).lower() == "egg-info"
    return name_key(os.path.basename(os.path.dirname(folder) if egg else folder))


def name_key(base: str) -> str:
    """As importlib.metadata's Lookup: *base* before its last dot, then before the first dash."""
    return canonical_name((base.rpartition(".")[0] if "." in base else base).partition("-")[0])


def read_text(path: str, file: str) -> tuple[str | None, Problem | None]:
    """*path*'s text as ``Path.read_text``, ``None`` if absent, or why *file* cannot be read."""
    try:
        fd = os.open(path, _READ_FLAGS)
        try:
            st = os.fstat(fd)
            # Only a regular file is read (a FIFO or a device would block or never end).
            data = os.read(fd, st.st_size + 1) if stat.S_ISREG(st.st_mode) else b""
        finally:
            os.close(fd)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except PermissionError:
        return None, Problem(Code.PERMISSION_DENIED, file)
    except OSError as exc:
        return None, Problem(Code.READ_ERROR, file, exc.strerror or str(exc))
    if not stat.S_ISREG(st.st_mode):
        why = Problem(Code.READ_ERROR, file, "not a regular file")
        return None, Problem(Code.IS_A_FOLDER, file) if stat.S_ISDIR(st.st_mode) else why
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"), None
    except UnicodeDecodeError as exc:
        return None, Problem(Code.NOT_UTF8, file, f"0x{data[exc.start]:02x}", exc.start)


def parse_headers(text: str) -> list[tuple[str, str]]:
    """The header fields of a core-metadata text, as `email` (compat32) parses them."""
    lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text)  # email's lines (the newlines are universal)
    block = list(takewhile(_HEADER.match, lines))
    fields: list[list[str]] = [[]]  # the lines of each field; [] where email drops lines
    for number, line in enumerate(block):
        if line[0] in " \t":
            if fields[-1]:
                fields[-1].append(line)
        elif line.startswith("From "):
            if number == len(block) - 1 and number:
                break  # the body's first line, for email
            fields.append([])
        else:
            fields.append([line] if line.find(":") > 0 else [])
    found = []
    for first, *folded in filter(None, fields):
        name, value = first.split(":", 1)
        found.append((name, (value.lstrip(" \t") + "".join(folded)).rstrip("\r\n")))
    return found


def egg_requirements(text: str) -> tuple[str, ...]:
    """An egg-info's ``requires.txt`` as ``Distribution.requires`` converts it (to markers)."""
    found, marker = [], ""
    for line in map(str.strip, text.splitlines()):
        if line.startswith("[") and line.endswith("]"):
            extra, _, when = line.strip("[]").partition(":")
            both = (f"({when})" if extra and when else when, extra and f'extra == "{extra}"')
            marker = " and ".join(filter(None, both))
        elif line:
            found.append(line + " " * ("@" in line) + (f"; {marker}" if marker else ""))
    return tuple(found)


def local_metadata(location: str) -> MetadataRecord:
    """Name, version and requirements of the copy at *location*, or why they cannot be used."""
    skipped = None  # a METADATA that Python cannot open (a folder, denied): it reads PKG-INFO
    for file in ("METADATA", "PKG-INFO"):
        text, problem = read_text(f"{location}/{file}", file)
        if problem and problem.code in {Code.IS_A_FOLDER, Code.PERMISSION_DENIED} and not skipped:
            skipped, problem = problem, None
        elif problem is not None or text:
            break
    else:  # a legacy egg-info file (pkg-1.0.egg-info), unless *location* is the folder
        file = os.path.basename(location)
        text, problem = read_text(location, file)
        if problem is not None and problem.code is Code.IS_A_FOLDER:
            text = problem = None
    if problem is not None or not text:
        return MetadataRecord(None, None, (), problem or skipped or Problem(Code.NO_METADATA))
    fields: dict[str, list[str]] = {"name": [], "version": [], "requires-dist": []}
    for field, value in parse_headers(text):
        if (found := fields.get(field.lower())) is not None:
            # importlib.metadata undoes RFC 822 folding in every header value.
            found.append(textwrap.dedent(" " * 8 + value) if "\n" in value else value)
    name, version = (fields[f][0] if fields[f] else None for f in ("name", "version"))
    requires = fields["requires-dist"]
    if not requires:  # as Distribution.requires: Requires-Dist, else requires.txt
        egg, problem = read_text(f"{location}/requires.txt", "requires.txt")
        if problem is not None:  # Python reads the name and version all the same
            return MetadataRecord(name or None, version, (), problem)
        requires = list(egg_requirements(egg or ""))
    bom = text.startswith("\ufeff")  # a BOM hides every header from Python's email parser: say so
    why = None if name else (Problem(Code.BYTE_ORDER_MARK, file) if bom else Problem(Code.NO_NAME))
    return MetadataRecord(name or None, version, tuple(requires), why)


def local_entry_points(location: str) -> EntryPoints:
    """The entry points Python reads at *location*, and the first thing it misses or fails on."""
    file = "entry_points.txt"
    if not os.access(f"{location}/{file}", os.F_OK):  # most copies have none: ask, no raise
        return (), None
    text, problem = read_text(f"{location}/{file}", file)
    if text is None:
        return (), problem
    found, group, bom, problem = [], None, text.startswith("\ufeff"), None
    for number, line in enumerate(map(str.strip, text.splitlines()), 1):
        if not line or line[0] == "#":
            continue
        name, equals, value = line.partition("=")
        if line[0] == "[" and line[-1] == "]":
            group = line.strip("[]")
        elif group is None:  # Python drops entries before any header (a mark hid it if bom)
            if equals and line.lstrip("\ufeff")[0] not in "#;" and problem is None:  # no comment
                why = Problem(Code.ENTRIES_BEFORE_HEADER, file, line[:60])
                problem = Problem(Code.BYTE_ORDER_MARK, file) if bom else why
        elif not equals:  # Python cannot read the file at all
            return (), Problem(Code.READ_ERROR, file, f"line {number} has no '=': {line[:60]!r}")
        else:
            found.append(EntryPointRecord(group, name.strip(), value.strip()))
    return tuple(found), problem


def fast_entry(index: int, entry: str, only: Container[str] | None = None) -> list[Copy] | None:
    """Copies (*only*: of those names) in the sys.path folder *entry*, in order; None: zip, egg."""
    if os.path.basename(entry).lower().endswith(".egg"):
        return None
    try:
        names = os.listdir(entry or ".")
    except NotADirectoryError:  # a zip; a named pipe or a device is nothing, as to imports
        return None if os.path.isfile(entry) else []
    except OSError:
        return []  # missing, no permission (scan says so), a link loop: nothing
    root = ""  # as str(pathlib.Path(entry, name)): entry's parts but '' and '.', after '/' or '//'
    if entry.startswith("/"):
        root = "//" if entry.startswith("//") and not entry.startswith("///") else "/"
    root += "".join(part + "/" for part in entry.split("/") if part not in {"", "."})
    # name_key(), not key_of(): a bare name needs no path handling (a microsecond per copy).
    found = [(name_key(n), n) for n in names if n.lower().endswith(_FOLDERS)]
    if len(order := dict.fromkeys(key for key, _ in found)) < len(found):  # as importlib.metadata:
        rank = {key: i for i, key in enumerate(order)}  # a name's copies together, first seen first
        found.sort(key=lambda copy: rank[copy[0]])
    copies: list[Copy] = []
    for lookup, name in found:  # tuple.__new__: Record's checks of arguments cost 1 µs a copy
        by_name = name[0] in ".-" or not name.endswith(_FOLDERS)  # Python keys it by its Name
        if only is not None and lookup not in only and not by_name:  # an odd name is read
            continue
        eps, why = local_entry_points(location := root + name)
        read = partial(local_metadata, location)  # read now only where Python goes by Name
        key = key_of(location, read) if by_name else lookup
        record = tuple.__new__(DistributionRecord, (key, location, index, entry, eps, None, why))
        copies.append((record, read))
    return copies
