"""What the commands share: exit codes, usage errors, registries, rendering."""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, cast

from attn.registry.enum import BackendEnumMeta
from attn.registry.errors import InvalidPathError, describe, passes_through, shown
from attn.registry.loading import attribute
from attn.registry.loading import plugin_output_to as plugin_output_to  # noqa: PLC0414 - commands
from attn.registry.paths import parse_path

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


WIDTH = 100  # the width the human output is laid out for


class UsageError(Exception):
    """Bad arguments: exit 2, with a hint to the help of *prog*."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


def is_registry(obj: object) -> bool:
    return isinstance(obj, BackendEnumMeta) and "_attn_state" in vars(obj)


def _imported(value: str, prog: str) -> BackendEnumMeta:
    """The registry ``MODULE:CLASS`` names, imported: the user asked for it."""
    module, _, qualname = (part.strip() for part in value.partition(":"))
    try:
        path = parse_path(value)
    except InvalidPathError as exc:
        reason = f"no {'class after' if module else 'module before'} ':'"
        reason = exc.reason if module and qualname else reason
        example = "attn.backends:AttentionBackendEnum"
        msg = f"invalid registry {value!r}: {reason}; expected MODULE:CLASS, such as {example!r}"
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


def selected_registries(args: argparse.Namespace, *named: str | None) -> list[BackendEnumMeta]:
    """The registries *named* and ``--registry`` pick (class name, group or MODULE:CLASS).

    By default, every one the command knows: attn's two, or those given to `attn.cli.main`.
    """
    names = [*filter(None, named), *args.selected]
    imported = {name: _imported(name, args.prog) for name in names if ":" in name}
    known = args.known
    if not known:
        from attn.backends import AttentionBackendEnum, MLAPrefillBackendEnum  # noqa: PLC0415

        known = [AttentionBackendEnum, MLAPrefillBackendEnum]
    known = list(dict.fromkeys([*known, *imported.values()]))
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


def did_you_mean(name: str, options: Sequence[str]) -> str:
    import difflib  # noqa: PLC0415 - only for a mistyped name

    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f". Did you mean {close[0]!r}?" if close else ""


BOLD = "1"
_COLOURS = {
    **dict.fromkeys(("ok", "used", "yes"), "32"),  # green
    **dict.fromkeys(("unregistered", "disabled", "shadowed", "note"), "33"),  # yellow
    **dict.fromkeys(("broken", "invalid", "incompatible", "problem"), "31"),  # red
}


class Style:
    """Colour for terminals; plain text for pipes, files and ``NO_COLOR``."""

    def __init__(self, stream: IO[str]) -> None:
        plain = os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb"
        self.color = stream.isatty() and not plain

    def __call__(self, text: str, code: str | None = None) -> str:
        """*text* in the ANSI colour *code*, by default that of the status it names."""
        code = code or _COLOURS.get(text)
        return f"\033[{code}m{text}\033[0m" if self.color and text and code else text


def wrap(text: str, indent: str, first: str | None = None) -> str:
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


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 group``, ``2 groups``; ``2 registries`` with *nouns*."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
