"""The ``attn`` command: ``list``, ``show``, ``doctor``, ``select`` and ``state``.

Usage:

    attn list [REGISTRY ...] [--registry REGISTRY ...] [--json] [--load]
    attn show NAME [--registry REGISTRY ...] [--load]
    attn doctor [--registry REGISTRY ...] [--load] [--json]
    attn doctor --against FILE [--registry REGISTRY ...]
    attn select [REGISTRY] [--registry REGISTRY] [--set KEY=VALUE ...] [--backend NAME] [--json]
    attn state save FILE [--registry REGISTRY ...]
    attn --version

A REGISTRY is a registry's class name or group, or ``MODULE:CLASS`` to import
another host's; a host runs the same commands over its own registries with
`main`'s *registries* and *prog*.

Exit codes, as click and httpx use them: 0 success; 1 a problem was found
(``show`` of an unknown name, ``doctor``'s findings, a plugin problem under
``ATTN_STRICT=1``); 2 a wrong invocation (bad arguments, no command, an
invalid ``ATTN_*`` value). Errors go to stderr as ``Error: ...``, attn's
warnings as ``Warning: ...``. docs/cli.md records every choice.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import warnings
from typing import IO, TYPE_CHECKING, cast

from attn.registry.errors import AttnConfigError, AttnError, AttnWarning, RejectedPluginWarning

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_USAGE,
    SUMMARIES,
    Parser,
    ParserExit,
    UsageError,
    did_you_mean,
    is_registry,
    printable,
    version_label,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Sequence
    from types import ModuleType

    from attn.registry.enum import BackendEnumMeta

__all__ = ["main"]


# -- the command ------------------------------------------------------------------

_COMMANDS = ("list", "show", "doctor", "select", "state")


def _module(command: str) -> ModuleType:
    """The module (in this package) that declares and runs *command*.

    ``list``'s is ``listing``: a submodule named ``list`` would become the
    package's attribute ``list`` and hide the built-in in this module.
    """
    return importlib.import_module(f"{__name__}.{'listing' if command == 'list' else command}")


def _parser(command: str | None, prog: str) -> argparse.ArgumentParser:
    """The parser; with *command*, only that command's module is imported.

    The other commands are declared by name and summary only, which is all
    that parsing *command*'s arguments and ``attn --help`` read, so ``attn
    list`` does not pay for importing ``doctor`` or ``state``.
    """
    parser = Parser(
        prog=prog,
        description="List and diagnose backends and the plugins that provide them.",
        epilog="Exit status: 0 success, 1 a problem was found, 2 a usage error.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print attn's version and the Python in use"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in _COMMANDS:
        if command is None or name == command:
            _module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=SUMMARIES[name])
    return parser


def _command(argv: Sequence[str], prog: str) -> str | None:
    """The command *argv* names (its first argument that is not an option), if any.

    Raises:
        UsageError: it is not a command; attn's own message, as argparse's varies by Python.
    """
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is not None and command not in _COMMANDS:
        msg = f"unknown command {command!r}; the commands are: {', '.join(_COMMANDS)}"
        raise UsageError(msg + did_you_mean(command, _COMMANDS), prog)
    return command


def _run(
    argv: Sequence[str] | None,
    out: IO[str],
    err: IO[str],
    registries: Sequence[BackendEnumMeta] | None,
    prog: str,
) -> int:
    if registries is not None and not all(map(is_registry, registries)):
        msg = f"main(registries=...) expects registry classes, got {registries!r}"
        raise TypeError(msg)
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(_command(argv, prog), prog)
    # What every command reads besides its arguments: the registries it knows, the command's name.
    parser.set_defaults(known=registries, root=prog)
    try:
        args, extra = parser.parse_known_args(argv)
    except ParserExit as exc:  # --help: written as the commands write, so a failed write counts
        out.write(exc.output)
        return exc.status
    if extra:
        # argparse blames the top-level parser; the arguments belong to the command.
        after_command = (
            args.command is not None and extra[0] in argv[argv.index(args.command) + 1 :]
        )
        hint = f"{prog} {args.command}" if after_command else prog
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", hint)
    if args.version:
        out.write(f"attn {version_label()} (Python {sys.version.split()[0]}, {sys.executable})\n")
        return EXIT_OK
    if args.command is None:
        parser.print_help(err)
        return EXIT_USAGE
    status: int = _module(args.command).run(args, out, err)
    return status


class OutputError(Exception):
    """stdout cannot take what the command prints: exit 1, saying why."""


class _Stdout:
    """``sys.stdout`` for the commands, flushed at each write; a write refused is an OutputError.

    A closed pipe (``attn list | head``) stays a ``BrokenPipeError``: the reader left.
    """

    def __init__(self, stream: IO[str] | None) -> None:
        self._stream = stream
        try:
            self._tty = stream is not None and stream.isatty()
        except (AttributeError, OSError, ValueError):  # a closed file, a stream without isatty
            self._tty = False

    def isatty(self) -> bool:
        return self._tty

    def write(self, text: str) -> None:
        if self._stream is None:
            msg = "stdout is closed"
            raise OutputError(msg)
        try:
            # Colour codes (`Style`) only go to a terminal; no other control passes.
            self._stream.write(printable(text, colour=self._tty))
            self._stream.flush()
        except BrokenPipeError:
            raise
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            msg = f"stdout's encoding ({exc.encoding}) cannot encode {bad!r}"
            raise OutputError(f"{msg}; set PYTHONIOENCODING=utf-8") from exc
        except (OSError, ValueError) as exc:  # ValueError: a closed file object
            raise OutputError(getattr(exc, "strerror", None) or exc) from exc


class _Stderr:
    """``sys.stderr`` for the commands: what is written goes there with its controls escaped."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(printable(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:  # flush, fileno, isatty, encoding
        return getattr(self._stream, name)


def _report_warnings(caught: Sequence[warnings.WarningMessage], err: IO[str]) -> None:
    # Not rejected plugins: every command shows them itself, with the reason.
    texts = (str(w.message) for w in caught if not issubclass(w.category, RejectedPluginWarning))
    err.writelines(f"Warning: {text}\n" for text in dict.fromkeys(texts))


def main(
    argv: Sequence[str] | None = None,
    *,
    registries: Sequence[BackendEnumMeta] | None = None,
    prog: str | None = None,
) -> int:
    """Run the ``attn`` command with *argv* (default ``sys.argv[1:]``); return the exit code.

    A host ships the same commands for its own registries: with *registries*,
    the commands work on those (and on any that ``--registry MODULE:CLASS``
    names) instead of attn's two, and *prog* is the command's name in usage
    lines and hints (``"tinyinfer plugins"``; default ``attn``).

    Raises:
        TypeError: an item of *registries* is not a registry class.
    """
    if sys.stderr is not None:
        return _main(argv, registries, prog, cast("IO[str]", _Stderr(sys.stderr)))
    # `attn list 2>&-`: what would go to stderr is dropped; the output and exit code are the same.
    with open(os.devnull, "w", encoding="utf-8") as discard:  # noqa: PTH123 - a text stream
        return _main(argv, registries, prog, discard)


def _main(  # noqa: PLR0911 - one return per outcome
    argv: Sequence[str] | None,
    registries: Sequence[BackendEnumMeta] | None,
    prog: str | None,
    err: IO[str],
) -> int:
    out = cast("IO[str]", _Stdout(sys.stdout))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", AttnWarning)
            try:
                return _run(argv, out, err, registries, prog or "attn")
            finally:
                _report_warnings(caught, err)
    except OutputError as exc:
        err.write(f"Error: cannot write the output: {exc}\n")
        return EXIT_PROBLEM
    except ParserExit as exc:
        return exc.status
    except UsageError as exc:
        err.write(f"Error: {exc}\nTry '{exc.prog} --help' for help.\n")
        return EXIT_USAGE
    except AttnConfigError as exc:
        err.write(f"Error: {exc}\n")
        return EXIT_USAGE
    except AttnError as exc:
        err.write(f"Error: {exc}\n")
        return EXIT_PROBLEM
    except KeyboardInterrupt:
        err.write("Aborted.\n")
        return 130
    except BrokenPipeError:
        # `attn list | head`: the reader left. Stop quietly with exit 1, as Python's
        # documentation of SIGPIPE says (pip exits 1 too), pointing fd 1 at
        # /dev/null so that the interpreter's last flush cannot fail again.
        with contextlib.suppress(AttributeError, OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stdout.fileno())
            finally:
                os.close(devnull)
        return EXIT_PROBLEM
