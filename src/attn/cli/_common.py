"""What the commands share: exit codes, the argument parser, registries, rendering."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import IO, TYPE_CHECKING, Any, NoReturn, cast

from attn import _version
from attn.registry.enum import BackendEnumMeta
from attn.registry.errors import InvalidPathError, describe, passes_through, shown
from attn.registry.loading import attribute
from attn.registry.loading import plugin_output_to as plugin_output_to  # noqa: PLC0414 - doctor, show
from attn.registry.paths import parse_path

if TYPE_CHECKING:
    from collections.abc import Sequence

    from _typeshed import SupportsWrite

    from attn.registry.listing import BackendRow, RegistryReport

#: The width the human output is laid out for.
WIDTH = 100

#: Each command's one-line help, as ``attn --help`` lists it.
SUMMARIES = {
    "list": "the backends in effect and every plugin not in effect",
    "show": "one backend in detail, with every claimant",
    "doctor": "check installed plugins and print a fix for each problem",
    "select": "choose a registry's backend for a configuration, with every candidate's verdict",
    "state": "save what every backend resolves to here, for 'doctor --against FILE'",
}

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad arguments: exit 2, with a hint to the help of *prog*."""

    def __init__(self, message: str, prog: str) -> None:
        """Record the *message* and the (sub)command whose help to point to."""
        super().__init__(message)
        self.prog = prog


class ParserExit(Exception):  # noqa: N818 - not an error: argparse asked to stop (--help)
    """argparse asked to stop with *status*, after printing *output* on stdout (``--help``)."""

    def __init__(self, status: int, output: str = "") -> None:
        """Record the exit *status* and what the command prints on stdout first."""
        super().__init__(status, output)
        self.status = status
        self.output = output


class Parser(argparse.ArgumentParser):
    """An argument parser that raises instead of exiting the process."""

    def error(self, message: str) -> NoReturn:
        """Raise a `UsageError` naming this (sub)command."""
        raise UsageError(message, self.prog)

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        """Print the help on *file*; to stdout, hand it to the command's writer (`ParserExit`).

        argparse would write to ``sys.stdout`` itself and ignore a write that
        fails, so that ``attn --help > /dev/full`` would exit 0 with nothing
        written.
        """
        if file is not None:
            file.write(self.format_help())
            return
        raise ParserExit(0, self.format_help())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """Raise `ParserExit` instead of exiting the process."""
        if message:
            sys.stderr.write(message)
        raise ParserExit(status)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse would ask shutil for the terminal's width, and importing
        # shutil loads bz2 and lzma: the same width, without them.
        formatter: Any = self.formatter_class  # every HelpFormatter takes width
        return formatter(prog=self.prog, width=_terminal_columns() - 2)  # type: ignore[no-any-return]


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``COLUMNS``, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


# -- registries -----------------------------------------------------------------

#: A MODULE:CLASS that names a registry, for messages.
EXAMPLE = "attn.backends:AttentionBackendEnum"
#: How ``--help`` describes a REGISTRY value.
REGISTRY_HELP = (
    "a registry's class name or entry-point group, spelled exactly, or MODULE:CLASS to import "
    "another host's registry"
)


def add_registry_option(parser: argparse.ArgumentParser) -> None:
    """Declare ``--registry REGISTRY`` (repeatable) on a command's *parser*.

    The command's messages name it as its parser does (``args.prog``: ``attn list``).
    """
    parser.set_defaults(prog=parser.prog)
    parser.add_argument(
        "--registry",
        action="append",
        default=[],
        dest="selected",
        metavar="REGISTRY",
        help=f"{REGISTRY_HELP} (repeatable; default: every registry)",
    )


def is_registry(obj: object) -> bool:
    """Whether *obj* is a registry class (declared with ``group=...``)."""
    return isinstance(obj, BackendEnumMeta) and "_attn_state" in vars(obj)


def _imported(value: str, prog: str) -> BackendEnumMeta:
    """The registry *value* (``MODULE:CLASS``) names, imported: the user asked for it.

    Raises:
        UsageError: *value* is malformed, cannot be imported, or is not a registry.
    """
    module, _, qualname = (part.strip() for part in value.partition(":"))
    try:
        path = parse_path(value)
    except InvalidPathError as exc:
        reason = f"no {'class after' if module else 'module before'} ':'"
        reason = exc.reason if module and qualname else reason
        msg = f"invalid registry {value!r}: {reason}; expected MODULE:CLASS, such as {EXAMPLE!r}"
        raise UsageError(msg, prog) from None
    try:
        with plugin_output_to(sys.stderr):  # what it prints stays out of --json
            obj = attribute(path)
    except BaseException as exc:
        if passes_through(exc):
            raise
        raise UsageError(f"cannot import registry {value!r}: {describe(exc)}", prog) from None
    if not is_registry(obj):
        msg = f"invalid registry {value!r}: it is {shown(obj)}, not a BackendEnum with a group"
        raise UsageError(msg, prog)
    return cast("BackendEnumMeta", obj)


def selected_registries(args: argparse.Namespace, names: Sequence[str]) -> list[BackendEnumMeta]:
    """The registries *names* pick (every one the command knows when there is none).

    Known are attn's two registries (or those given to `attn.cli.main`)
    and those ``MODULE:CLASS`` names import; a name is one's class name or group.

    Raises:
        UsageError: a name picks no registry; the hint names the command's help.
    """
    imported = {name: _imported(name, args.prog) for name in names if ":" in name}
    known = list(dict.fromkeys([*(args.known or _attn_registries()), *imported.values()]))
    spellings = {r.__name__: r for r in known} | {r.group: r for r in known} | imported
    for name in names:
        if name not in spellings:
            valid = ", ".join(f"{r.__name__} ({r.group})" for r in known)
            msg = (
                f"unknown registry {name!r}; valid registries are: {valid}, "
                "or another host's as MODULE:CLASS"
            )
            raise UsageError(msg + did_you_mean(name, list(spellings)), args.prog)
    return list(dict.fromkeys(spellings[name] for name in names)) if names else known


def _attn_registries() -> list[BackendEnumMeta]:
    """The registries attn ships, in the order the commands print them."""
    from attn.backends import AttentionBackendEnum, MLAPrefillBackendEnum  # noqa: PLC0415

    return [AttentionBackendEnum, MLAPrefillBackendEnum]


def did_you_mean(name: str, options: Sequence[str]) -> str:
    """``. Did you mean 'x'?`` for the option closest to a mistyped *name*; empty if none is."""
    import difflib  # noqa: PLC0415 - only for a mistyped name

    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f". Did you mean {close[0]!r}?" if close else ""


# -- rendering helpers ------------------------------------------------------------


_COLOURS = {
    **dict.fromkeys(("ok", "used", "yes"), "32"),  # green
    **dict.fromkeys(("unregistered", "disabled", "shadowed", "note"), "33"),  # yellow
    **dict.fromkeys(("broken", "invalid", "incompatible", "problem"), "31"),  # red
}


#: attn's own colour codes (`Style`), then every character that would move
#: the cursor, retitle or clear the terminal, or reorder the text (C0 and C1
#: controls but the newline, DEL, bidirectional overrides and isolates).
_CONTROLS = re.compile(
    "(\033\\[(?:" + "|".join(sorted({"0", "1", *_COLOURS.values()})) + ")m)"
    "|[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def printable(text: str, *, colour: bool = False) -> str:
    r"""*text* with control characters written as escapes (``\x1b``), for a terminal.

    What installed metadata says (a distribution's name and version, an entry
    point's name) reaches the output as written; escaped, it cannot drive the
    terminal. With *colour*, attn's own colour codes are kept.
    """

    def escaped(match: re.Match[str]) -> str:
        if match.group(1) is not None and colour:
            return match.group(1)
        return match.group().encode("unicode_escape").decode("ascii")

    return _CONTROLS.sub(escaped, text)


class Style:
    """Colour for terminals; plain text for pipes, files and ``NO_COLOR``."""

    def __init__(self, stream: IO[str]) -> None:
        """Colour only when *stream* is a terminal and the environment allows it."""
        isatty = getattr(stream, "isatty", None)
        self.color = (
            not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb"
            and callable(isatty)
            and bool(isatty())
        )

    def paint(self, text: str, code: str) -> str:
        """*text* in the ANSI colour *code* (unchanged without colour)."""
        return f"\033[{code}m{text}\033[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        """*text* in bold."""
        return self.paint(text, "1")

    def word(self, text: str) -> str:
        """*text* in the colour of the status or verdict it names."""
        code = _COLOURS.get(text)
        return self.paint(text, code) if code else text


def wrap(text: str, indent: str, *, first: str | None = None) -> str:
    """*text* wrapped to `WIDTH`, indented; words are never broken."""
    import textwrap  # noqa: PLC0415 - attn list --json wraps nothing

    return textwrap.fill(
        " ".join(text.split()),
        width=WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def fit(text: str, width: int) -> str:
    """*text* cut to *width* characters, ending in ``...`` when cut."""
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def version_label() -> str:
    """The installed version of attn."""
    return _version()


def host_label(report: RegistryReport) -> str:
    """The host distribution and its version, e.g. ``attn 0.1.0``."""
    host = report.host or "attn"
    version = report.host_version
    if version is None:  # discovery did not scan (plugins disabled): ask the metadata
        from importlib.metadata import PackageNotFoundError  # noqa: PLC0415
        from importlib.metadata import version as installed  # noqa: PLC0415

        try:
            version = installed(host)
        except PackageNotFoundError:
            return host
    return f"{host} {version}"


def source(row: BackendRow, report: RegistryReport) -> str:
    """Where a backend in effect comes from: a distribution, or the registering module."""
    if row.origin == "builtin":
        return report.host or "attn"
    if row.origin == "runtime":
        return row.registered_by or "unknown module"
    if row.distribution_version:
        return f"{row.distribution} {row.distribution_version}"
    return row.distribution or "unknown distribution"


def available(row: BackendRow) -> str:
    """The AVAILABLE cell: yes, no, unknown (plugin code not imported) or ``-``."""
    if row.path is None:
        return "-"
    if row.available is None:
        return "unknown"
    return "yes" if row.available else "no"


def plural(count: int, noun: str) -> str:
    """``1 group``, ``2 groups``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def either(items: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"
