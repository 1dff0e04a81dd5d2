"""Records of installed metadata, and the fast reader that makes them from folders.

Every reader yields these records and the pipeline reads nothing else; a
problem is a `Problem`, a `Code` and the
fields its message is rendered from. The fast reader lists a ``sys.path``
folder and reads its metadata as `importlib.metadata` does: the same
copies in the same order (``*.dist-info``, ``*.egg-info``, folders or legacy
files), the same header values, entry points and requirements (``requires.txt``
converted as ``Distribution.requires`` converts it). Entries it does not read
(a zip, a wheel, an egg) are left to the reference reader of `._metadata`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import textwrap
from functools import partial
from itertools import takewhile
from typing import TYPE_CHECKING, NamedTuple

from .controls import canonical_name
from .errors import Code

if TYPE_CHECKING:
    from collections.abc import Callable

    #: One copy as a reader found it (metadata not read yet) and how to read its metadata.
    Copy = tuple["DistributionRecord", Callable[[], "MetadataRecord"]]
    #: The entry points of one copy, and what Python misses of them.
    EntryPoints = tuple[tuple["EntryPointRecord", ...], "Problem | None"]

#: By code, or by code and file where the file changes what the problem does.
_MESSAGES: dict[object, str] = {
    Code.PERMISSION_DENIED: "{p.file} cannot be read: permission denied",
    Code.NOT_UTF8: "{p.file} is not UTF-8 text (byte {p.detail} at offset {p.offset})",
    Code.IS_A_FOLDER: "{p.file} is a folder, not a file",
    Code.NO_METADATA: "no METADATA or PKG-INFO file",
    Code.NO_NAME: "metadata has no Name field",
    Code.READ_ERROR: "{p.file} cannot be read: {p.detail}",
    (Code.BYTE_ORDER_MARK, "entry_points.txt"): "{p.file} starts with a byte-order mark, so "
    "Python (importlib.metadata) reads no entry point before the next [group] header",
    Code.BYTE_ORDER_MARK: "{p.file} starts with a byte-order mark, so Python "
    "(importlib.metadata) reads none of its fields (no Name, no Version)",
    Code.ENTRIES_BEFORE_HEADER: "{p.file} has entries before any [group] header (first: "
    "{p.detail!r}); Python (importlib.metadata) reads none of them",
    Code.FINDER_FAILED: "the meta-path finder {p.finder} raised {p.detail} while listing "
    "distributions",
    Code.PATH_UNREADABLE: "the sys.path entry {p.file} cannot be read (permission denied)",
}


class Problem(NamedTuple):
    """Why a metadata file or a ``sys.path`` entry cannot be read (``str()`` says it)."""

    code: Code
    file: str = ""
    """The file (``METADATA``, ``entry_points.txt``, ...), or the ``sys.path`` entry."""
    detail: str = ""
    """The error's text, the first stray entry, or the byte that is not UTF-8."""
    offset: int = 0
    """Where that byte is."""
    finder: str = ""
    """The meta-path finder that failed, as ``module.QualName``."""

    def __str__(self) -> str:
        """The message, as attn shows it."""
        template = _MESSAGES.get((self.code, self.file)) or _MESSAGES.get(self.code)
        return (template or "{p.code}: {p.detail}").format(p=self)


class EntryPointRecord(NamedTuple):
    """One entry point as declared: its group, name and value."""

    group: str
    name: str
    value: str


class MetadataRecord(NamedTuple):
    """The core metadata fields attn reads from one copy, or why they cannot be used."""

    name: str | None
    version: str | None
    requires: tuple[str, ...] = ()
    problem: Problem | None = None


#: The key of a record that stands for something unreadable on ``sys.path``
#: itself (a folder, a meta-path finder), not for a distribution.
UNREADABLE_KEY = "<unreadable>"


class DistributionRecord(NamedTuple):
    """One copy of a distribution's metadata found on ``sys.path``.

    ``key`` is the canonical name used to tell copies apart (from the folder's
    name); ``location`` the metadata folder (or legacy file); ``path_index``
    the index of the ``sys.path`` entry it was found under; ``metadata`` is
    ``None`` when the scan had no reason to read it.
    """

    key: str
    location: str
    path_index: int
    path_entry: str
    entry_points: tuple[EntryPointRecord, ...]
    metadata: MetadataRecord | None
    entry_points_problem: Problem | None = None

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
    def metadata_problem(self) -> Problem | None:
        """Why this copy's core metadata (name, version, requirements) cannot be used."""
        return None if self.metadata is None else self.metadata.problem


def unreadable_record(index: int, entry: str, problem: Problem) -> DistributionRecord:
    """A record that stands for a part of ``sys.path`` nothing could be read from."""
    return DistributionRecord(UNREADABLE_KEY, entry, index, entry, (), None, problem)


def key_from_folder(folder: str) -> str:
    """The canonical name of the distribution a metadata folder's name names."""
    # As importlib.metadata's Lookup: the part before the last dot, then before the first dash.
    stem = folder.rpartition(".")[0] if "." in folder else folder
    return canonical_name(stem.partition("-")[0])


def key_of(location: str) -> str:
    """The canonical name of the copy whose metadata folder is *location*."""
    # A folder inside a zip file is named with a trailing slash; an egg's
    # EGG-INFO folder is named after the egg around it.
    folder = location.rstrip("/")
    base = os.path.basename(folder)
    if base.lower() == "egg-info":
        base = os.path.basename(os.path.dirname(folder))
    return key_from_folder(base)


# -- reading files as Path.read_text(encoding="utf-8") does ----------------------


def _bytes(path: str) -> bytes:
    """The file's bytes; raises what `os.open` and `os.read` raise.

    Only a regular file is read: a FIFO or a device (a link to ``/dev/zero``)
    would block or never end, so it raises `OSError` (opening a FIFO
    does not wait, either).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            if len(chunk) < 1 << 16:
                break  # a regular file reads short only at its end: no second call
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str, file: str) -> tuple[str | None, Problem | None]:
    """*path*'s text with universal newlines; ``None`` if absent; else why it cannot be read.

    *file* names the file in the problem. Absent is what ``Distribution.read_text``
    treats as absent, less a folder and missing permission, which attn reports.
    """
    try:
        data = _bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except IsADirectoryError:
        return None, Problem(Code.IS_A_FOLDER, file)
    except PermissionError:
        return None, Problem(Code.PERMISSION_DENIED, file)
    except OSError as exc:
        return None, Problem(Code.READ_ERROR, file, exc.strerror or str(exc))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, Problem(Code.NOT_UTF8, file, f"0x{data[exc.start]:02x}", exc.start)
    return text.replace("\r\n", "\n").replace("\r", "\n"), None


def path_problem(entry: str) -> Problem | None:
    """Why the ``sys.path`` folder *entry* cannot be read, if it cannot."""
    if os.path.isdir(entry) and not os.access(entry, os.R_OK | os.X_OK):
        return Problem(Code.PATH_UNREADABLE, entry)
    return None


# -- core metadata (METADATA, PKG-INFO, requires.txt) ----------------------------------

#: email.feedparser's headerRE: a header, an envelope (``From ``) line or a continuation.
_HEADER = re.compile(r"^(From |[\041-\071\073-\176]*:|[\t ])")


def parse_headers(text: str) -> list[tuple[str, str]]:
    """The header fields of a core-metadata text, as `email` (compat32) parses them.

    Headers end at the first line that is neither a field, an envelope
    (``From ``) line nor a continuation; folded values keep their line breaks.
    """
    parts = text.split("\n")  # email's line breaks: the text has universal newlines
    lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
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
    return [_field(field) for field in fields if field]


def _field(lines: list[str]) -> tuple[str, str]:
    name, value = lines[0].split(":", 1)
    value = value.lstrip(" \t") + "".join(lines[1:])
    return name, value.rstrip("\r\n")


def _redent(value: str) -> str:
    """Undo RFC 822 folding as ``importlib.metadata`` does for every header value."""
    return textwrap.dedent(" " * 8 + value) if "\n" in value else value


def _core_text(location: str) -> tuple[str | None, Problem | None, str]:
    """The text Python reads a copy's core metadata from, and which file it is.

    ``METADATA``, else ``PKG-INFO``, else the file *location* itself: a legacy
    egg-info file (``pkg-1.0.egg-info``).
    """
    for file in ("METADATA", "PKG-INFO"):
        text, problem = read_text(f"{location}/{file}", file)
        if problem is not None or text:
            return text, problem, file
    file = os.path.basename(location)
    text, problem = read_text(location, file)
    if problem is not None and problem.code is Code.IS_A_FOLDER:
        return None, None, file  # the metadata folder itself: no file of core metadata in it
    return text, problem, file


def egg_requirements(text: str) -> tuple[str, ...]:
    """An egg-info's ``requires.txt``, converted as ``Distribution.requires`` converts it.

    Lines before any ``[section]`` are unconditional; a section ``[extra]``,
    ``[:marker]`` or ``[extra:marker]`` becomes the marker of its lines.
    """
    found = []
    marker = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _, markers = line.strip("[]").partition(":")
            conditions = [f"({markers})" if extra and markers else markers]
            conditions += [f'extra == "{extra}"'] if extra else []
            marker = " and ".join(filter(None, conditions))
            continue
        found.append(line + " " * ("@" in line) + (f"; {marker}" if marker else ""))
    return tuple(found)


def local_metadata(location: str) -> MetadataRecord:
    """Name, version and requirements of the copy at *location*, or why they cannot be used."""
    text, problem, file = _core_text(location)
    if problem is not None or not text:
        return MetadataRecord(None, None, (), problem or Problem(Code.NO_METADATA))
    name = version = None
    requires = []
    for field, value in parse_headers(text):
        folded = field.lower()
        if folded == "name" and name is None:
            name = _redent(value)
        elif folded == "version" and version is None:
            version = _redent(value)
        elif folded == "requires-dist":
            requires.append(_redent(value))
    if not requires:  # as Distribution.requires: Requires-Dist, else requires.txt
        egg, problem = read_text(f"{location}/requires.txt", "requires.txt")
        if problem is not None:
            return MetadataRecord(None, None, (), problem)
        requires = list(egg_requirements(egg or ""))
    if not name:
        # A byte-order mark hides every header from Python's email parser: say so.
        bom = text.startswith("\ufeff")
        problem = Problem(Code.BYTE_ORDER_MARK, file) if bom else Problem(Code.NO_NAME)
        return MetadataRecord(None, version, tuple(requires), problem)
    return MetadataRecord(name, version, tuple(requires))


# -- entry points (entry_points.txt) -----------------------------------------------------


def parse_entry_points(text: str) -> EntryPoints:
    """The entry points Python reads from *text*, and the first thing it misses or fails on."""
    file = "entry_points.txt"
    problem = Problem(Code.BYTE_ORDER_MARK, file) if text.startswith("\ufeff") else None
    found = []
    group = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        if line[0] == "[" and line[-1] == "]":
            group = line.strip("[]")
            continue
        name, equals, value = line.partition("=")
        if group is None:  # Python drops entries before any header: attn says so
            if equals and line[0] != ";" and problem is None:
                problem = Problem(Code.ENTRIES_BEFORE_HEADER, file, line[:60])
        elif not equals:  # Python cannot read the file at all
            return (), Problem(Code.READ_ERROR, file, f"line {number} has no '=': {line[:60]!r}")
        else:
            found.append(EntryPointRecord(group, name.strip(), value.strip()))
    return tuple(found), problem


def local_entry_points(location: str) -> EntryPoints:
    """The entry points of the copy at *location*, and what Python misses of them."""
    path = f"{location}/entry_points.txt"
    if not os.access(path, os.F_OK):  # most copies have none: ask without raising
        return (), None
    text, problem = read_text(path, "entry_points.txt")
    return ((), problem) if text is None else parse_entry_points(text)


# -- the fast reader ----------------------------------------------------------------


def _root(root: str) -> str:
    """What ``str(pathlib.Path(root, child))`` puts before a folder name *child*.

    The parts of *root* without empty and ``.`` parts, joined by ``/``, with
    pathlib's leading ``/`` or ``//``.
    """
    prefix = ""
    if root.startswith("/"):
        prefix = "//" if root.startswith("//") and not root.startswith("///") else "/"
    return prefix + "".join(part + "/" for part in root.split("/") if part not in {"", "."})


def metadata_children(entry: str) -> list[tuple[str, str]] | None:
    """``(key, name)`` of the metadata in the folder *entry*, in `importlib.metadata`'s order.

    ``None`` when the fast reader does not read *entry*: a file (a zip, a
    wheel, an egg) or an ``.egg`` folder.
    """
    if os.path.basename(entry).lower().endswith(".egg"):
        return None
    try:
        children = os.listdir(entry or ".")
    except NotADirectoryError:
        return None
    except OSError:
        return []  # missing, no permission (path_problem says so), a link loop: nothing there
    # importlib.metadata groups the copies of one name, in order of first sight.
    by_key: dict[str, list[str]] = {}
    for child in children:
        if child.lower().endswith((".dist-info", ".egg-info")):
            by_key.setdefault(key_from_folder(child), []).append(child)
    return [(key, child) for key, group in by_key.items() for child in group]


def fast_entry(index: int, entry: str) -> list[Copy] | None:
    """Every copy in the ``sys.path`` folder *entry*; ``None`` if the fast reader skips it."""
    children = metadata_children(entry)
    if children is None:
        return None
    root = _root(entry)
    copies: list[Copy] = []
    for key, child in children:
        location = root + child
        eps, problem = local_entry_points(location)
        record = DistributionRecord(key, location, index, entry, eps, None, problem)
        copies.append((record, partial(local_metadata, location)))
    return copies
