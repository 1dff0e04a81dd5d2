"""The fast reader behind :func:`attn.registry._metadata.scan`.

It reads ``sys.path`` folders with :func:`os.listdir` and opens only
``entry_points.txt`` of each metadata folder (and ``METADATA`` where the scan
needs it), parsing both exactly as :mod:`importlib.metadata` does: the same
folders in the same order, the same entry points, the same header values,
the same problems. What it cannot read the same way it hands to
:mod:`importlib.metadata`: a ``sys.path`` entry that is a file (a zip or an
egg) or an egg folder, an ``entry_points.txt`` line that the standard library
rejects (so the problem is worded as it words it), every entry when a
meta-path finder other than the standard one provides distributions, and
every entry on a platform whose paths are not POSIX paths.
"""

from __future__ import annotations

import os
import sys

from ._metadata import (
    EntryPointRecord,
    MetadataRecord,
    assemble,
    canonical_name,
    key_from_folder,
    key_of,
    metadata_file_record,
    reference_entry,
    reference_scan,
    standard_finders,
)

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from ._metadata import DistributionRecord, Found

__all__ = ["distribution_version", "fast_scan", "parse_headers", "standard_finders"]

_SUFFIXES = (".dist-info", ".egg-info")
_CHUNK = 1 << 16
_QUIET = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
"""What ``Distribution.read_text`` treats as "no such file"."""


def _root(root: str) -> str:
    """What ``str(pathlib.Path(root, child))`` puts before a folder name *child*, without pathlib.

    ``_root(root) + child`` is that path: the parts of *root* without empty
    and ``.`` parts, joined by ``/``, with pathlib's leading ``/`` or ``//``.
    """
    if root.startswith("/"):
        prefix = "//" if root.startswith("//") and not root.startswith("///") else "/"
    else:
        prefix = ""
    parts = [part for part in root.split("/") if part and part != "."]
    return prefix + "".join(part + "/" for part in parts)


def _join(root: str, child: str) -> str:
    """``str(pathlib.Path(root, child))`` for a folder name *child*, without pathlib."""
    return _root(root) + child


def _bytes(path: str) -> bytes:
    """The file's bytes; raises what :func:`os.open` and :func:`os.read` raise."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
            if len(chunk) < _CHUNK:
                break  # a regular file reads short only at its end: no second call
    finally:
        os.close(fd)
    return b"".join(chunks)


def _header_line(line: str) -> bool:
    r"""Whether *line* is a header, an envelope (``From ``) line or a continuation.

    email.feedparser's ``headerRE``, ``(From |[\041-\071\073-\176]*:|[\t ])``,
    without :mod:`re`: before the first colon, printable ASCII other than space.
    """
    if line.startswith(("From ", "\t", " ")):
        return True
    colon = line.find(":")
    if colon < 0:
        return False
    head = line[:colon]
    return head.isascii() and head.isprintable() and " " not in head


def _universal(text: str) -> str:
    """*text* with universal newlines, as text mode reads it."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _read(path: str) -> str | None:
    """The file's text as ``Path.read_text(encoding="utf-8")`` gives it, or ``None``."""
    try:
        data = _bytes(path)
    except _QUIET:
        return None
    return _universal(data.decode("utf-8"))


def parse_headers(text: str) -> list[tuple[str, str]]:  # noqa: C901 - email's rules, one by one
    """The header fields of a core-metadata text, as :mod:`email` (compat32) parses them.

    Headers end at the first line that is neither a field, an envelope
    (``From ``) line nor a continuation; folded values keep their line breaks.
    """
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    block = []
    for line in lines:
        if not _header_line(line):
            break
        block.append(line)
    fields: list[tuple[str, str]] = []
    current: list[str] = []
    last = len(block) - 1
    for number, line in enumerate(block):
        if line[0] in " \t":
            if current:
                current.append(line)
            continue
        if current:
            fields.append(_field(current))
            current = []
        if line.startswith("From "):
            if number == last and number:
                break
            continue
        if line.find(":") > 0:
            current = [line]
    if current:
        fields.append(_field(current))
    return fields


def _field(lines: list[str]) -> tuple[str, str]:
    name, value = lines[0].split(":", 1)
    value = value.lstrip(" \t") + "".join(lines[1:])
    return name, value.rstrip("\r\n")


def _redent(value: str) -> str:
    """Undo RFC 822 folding as ``importlib.metadata`` does for every header value."""
    if "\n" not in value:
        return value
    import textwrap  # noqa: PLC0415 - only folded values need it

    return textwrap.dedent(" " * 8 + value)


def _metadata(location: str) -> MetadataRecord:  # noqa: C901 - email's fields, one by one
    if not location.endswith(".dist-info") and os.path.exists(_join(location, "requires.txt")):
        return _reference_metadata(location)  # an egg-info's requires.txt: read as Python does
    try:
        try:
            text = _read(_join(location, "METADATA")) or _read(_join(location, "PKG-INFO"))
        except (UnicodeDecodeError, OSError):
            text = None
        if not text:
            # A folder, no permission, not UTF-8, a link loop: the shared reader words it.
            special = metadata_file_record(location)
            if special is not None:
                return special
            return MetadataRecord(None, None, (), "no METADATA or PKG-INFO file")
        name = version = None
        requires = []
        for field, raw in parse_headers(text):
            folded = field.lower()
            value = _redent(raw)
            if folded == "name":
                name = value if name is None else name
            elif folded == "version":
                version = value if version is None else version
            elif folded == "requires-dist":
                requires.append(value)
    except Exception as exc:  # noqa: BLE001 - worded as the reference reader words it
        return MetadataRecord(None, None, (), f"unreadable metadata: {type(exc).__name__}: {exc}")
    if not name:
        return MetadataRecord(None, version, tuple(requires), "metadata has no Name field")
    return MetadataRecord(name, version, tuple(requires))


_REFER = object()
"""Marks a file that only the reference reader can word the problem of."""


def _entry_points_text(location: str) -> str | object | None:
    """``entry_points.txt`` as text, ``None`` when absent, else :data:`_REFER`.

    :data:`_REFER` when Python cannot read it whole: a folder, no permission,
    not UTF-8, a byte-order mark.
    """
    try:
        # location is a normalized path (_join's): appending is joining.
        text = _bytes(location + "/entry_points.txt").decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return _REFER
    return _REFER if text.startswith("\ufeff") else _universal(text)


def _entry_points(location: str) -> tuple[tuple[EntryPointRecord, ...], str | None] | None:
    """The entry points of one folder, or ``None`` when only the reference can word the problem.

    The reference words every file Python cannot read whole: a folder, no
    permission, not UTF-8, a byte-order mark, entries before any header.
    """
    text = _entry_points_text(location)
    if text is _REFER:
        return None
    if not isinstance(text, str) or not text:
        return (), None
    found = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        if line[0] == "[" and line[-1] == "]":
            section = line.strip("[]")
            continue
        if section is None:
            if "=" in line and line[0] != ";":
                return None  # entries before any header: Python drops them, attn says so
            continue
        name, equals, value = line.partition("=")
        if not equals:
            return None
        found.append(EntryPointRecord(section, name.strip(), value.strip()))
    return tuple(found), None


def _reference_entry_points(location: str) -> tuple[tuple[EntryPointRecord, ...], str | None]:
    import pathlib  # noqa: PLC0415 - only for an entry_points.txt the fast parser refuses
    from importlib.metadata import PathDistribution  # noqa: PLC0415

    from ._metadata import _read_entry_points  # noqa: PLC0415

    return _read_entry_points(PathDistribution(pathlib.Path(location)))


def _reference_metadata(location: str) -> MetadataRecord:
    import pathlib  # noqa: PLC0415 - only for an egg-info with requires.txt
    from importlib.metadata import PathDistribution  # noqa: PLC0415

    from ._metadata import _read_metadata  # noqa: PLC0415

    return _read_metadata(PathDistribution(pathlib.Path(location)))


def _metadata_reader(location: str) -> Callable[[], MetadataRecord]:
    return lambda: _metadata(location)


def _entry(index: int, entry: str, keys: list[str]) -> list[Found] | None:
    """Every copy under one ``sys.path`` folder, or ``None`` to use the reference.

    The canonical name of each copy is appended to *keys*, in the same order.
    """
    if not isinstance(entry, str) or os.path.basename(entry).lower().endswith(".egg"):
        return None
    try:
        children = os.listdir(entry or ".")
    except FileNotFoundError:
        return []  # the reference finds nothing there either
    except PermissionError:
        return None  # the reference reports it
    except OSError:
        return None  # a zip file, or something else only the reference knows how to read
    # importlib.metadata groups the folders of one name, in order of first sight.
    by_name: dict[str, list[str]] = {}
    for child in children:
        low = child.lower()
        if low.endswith(_SUFFIXES):
            by_name.setdefault(key_from_folder(child), []).append(child)
    root = _root(entry)
    found: list[Found] = []
    none: tuple[EntryPointRecord, ...] = ()
    for key, group in by_name.items():
        for child in group:
            location = root + child
            eps, problem = none, None
            # Most folders have no entry_points.txt: ask without raising for them.
            if os.access(location + "/entry_points.txt", os.F_OK):
                read = _entry_points(location)
                eps, problem = _reference_entry_points(location) if read is None else read
            found.append((index, entry, location, eps, problem, _metadata_reader(location)))
            keys.append(key)
    return found


def fast_scan(
    wants_metadata: Callable[[EntryPointRecord], bool],
    also: Iterable[str] = (),
    path: Sequence[str] | None = None,
    *,
    kept_only: bool = False,
) -> tuple[DistributionRecord, ...]:
    """What :func:`attn.registry._metadata.reference_scan` returns, read directly."""
    entries = list(sys.path if path is None else path)
    if os.sep != "/" or not standard_finders():
        return reference_scan(wants_metadata, also, entries, kept_only=kept_only)
    found: list[Found] = []
    keys: list[str] = []
    unreadable: list[DistributionRecord] = []
    for index, entry in enumerate(entries):
        copies = _entry(index, entry, keys)
        if copies is None:
            copies, problems = reference_entry(index, entry)
            unreadable.extend(problems)
            keys.extend(key_of(copy[2]) for copy in copies)
        found.extend(copies)
    return assemble(found, wants_metadata, also, unreadable, keys, kept_only=kept_only)


def _first_folder(children: Iterable[str], wanted: str) -> str | None:
    """The first metadata folder among *children* of the distribution named *wanted*."""
    # A folder of that name starts with its first letter, whatever the spelling.
    starts = ("-", "_", ".") if wanted.startswith("-") else (wanted[:1],)
    for child in children:
        low = child.lower()
        if low.startswith(starts) and low.endswith(_SUFFIXES) and key_from_folder(child) == wanted:
            return child
    return None


def distribution_version(name: str) -> str | None:
    """``importlib.metadata.version(name)``, read directly; ``None`` when it is not installed.

    The first folder of that name on ``sys.path`` wins, as for the standard
    library. Whenever the answer could differ (an egg or zip entry, another
    finder, a folder without a readable ``Version``), the standard library answers.
    """
    if os.sep == "/" and standard_finders():
        wanted = canonical_name(name)
        for entry in sys.path:
            if not isinstance(entry, str) or os.path.basename(entry).lower().endswith(".egg"):
                break
            try:
                children = os.listdir(entry or ".")
            except (FileNotFoundError, PermissionError):
                continue
            except OSError:
                break
            match = _first_folder(children, wanted)
            if match is not None:
                record = _metadata(_join(entry, match))
                if record.problem is None and record.version:
                    return record.version
                break
        else:
            return None
    import warnings  # noqa: PLC0415
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        with warnings.catch_warnings():
            # 3.12+ warns when the metadata has no Version; None says the same.
            warnings.simplefilter("ignore", DeprecationWarning)
            return version(name)
    except PackageNotFoundError:
        return None


def first_version(name: str) -> str | None:
    """The version of the first copy of *name* that has one, through the standard library.

    An empty copy left before the installed one by an interrupted install must
    not make the version ``None``.
    """
    from importlib.metadata import distributions  # noqa: PLC0415

    for dist in distributions(name=name):
        try:
            version = dist.version
        except Exception:  # noqa: BLE001, S112 - an unreadable copy: try the next one
            continue
        if version:
            return str(version)
    return None
