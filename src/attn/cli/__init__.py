"""The ``attn`` command: ``list``, ``show``, ``doctor`` and ``state``.

Usage::

    attn list [REGISTRY ...] [--json] [--load]
    attn show NAME [--registry REGISTRY] [--load]
    attn doctor [--load] [--json]
    attn doctor --against FILE
    attn state save FILE
    attn --version

REGISTRY is a registry's class name (``AttentionBackendEnum``) or its
entry-point group (``attn.backends``), spelled exactly.

Exit codes, as click and httpx use them:

- 0: success (``doctor``: no problem found);
- 1: a problem was found: ``show`` of an unknown name, ``doctor`` found a
  problem, or, under ``ATTN_STRICT=1``, a plugin has a problem (discovery
  raises :class:`attn.registry.PluginProblemError`, or ``list --load`` finds a backend
  that cannot be loaded);
- 2: the invocation is wrong: bad arguments, no command at all (the help is
  printed on stderr), or an ``ATTN_*`` variable with an invalid value.

Errors go to stderr as ``Error: ...``; usage errors add a hint to the
``--help`` of the (sub)command whose arguments were wrong.
Warnings that attn issues while a command runs (a conflict between plugins,
an ``ATTN_PLUGINS`` name that matches nothing) are printed on stderr as
``Warning: ...`` instead of Python's default warning format.

Output is plain text unless stdout is a terminal, ``NO_COLOR`` is unset or
empty and ``TERM`` is not ``dumb``; then statuses are coloured. Tables are
laid out for 100 columns whatever the terminal's width, so the output is the
same in a terminal, a pipe and a log. docs/cli.md records these choices.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_USAGE,
    SUMMARIES,
    Parser,
    ParserExit,
    UsageError,
    version_label,
)

# Not typing.TYPE_CHECKING: the commands do not import typing at run time.
TYPE_CHECKING = False

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO

__all__ = ["main"]


# -- the command ------------------------------------------------------------------

#: Each command and the module (in this package) that declares and runs it. The
#: module for ``list`` is ``listing``: a submodule named ``list`` would become the
#: package's attribute ``list`` and hide the built-in in this module.
_MODULES = {"list": "listing", "show": "show", "doctor": "doctor", "state": "state"}
_COMMANDS = tuple(_MODULES)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with *command*, only that command's module is imported.

    The other commands are declared by name and summary only, which is all
    that parsing *command*'s arguments and ``attn --help`` read, so ``attn
    list`` does not pay for importing ``doctor`` or ``state``.
    """
    parser = Parser(
        prog="attn",
        description="List and diagnose attn's backends and the plugins that provide them.",
        epilog="Exit status: 0 success, 1 a problem was found, 2 a usage error.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print attn's version and the Python in use"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in _COMMANDS:
        if command is None or name == command:
            importlib.import_module(f"{__name__}.{_MODULES[name]}").add_parser(sub)
        else:
            sub.add_parser(name, help=SUMMARIES[name])
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The command *argv* names: its first argument that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def _check_command(argv: Sequence[str]) -> None:
    """Refuse an unknown command with attn's own message (argparse's varies by Python)."""
    command = _command(argv)
    if command is None or command in _COMMANDS:
        return
    import difflib  # noqa: PLC0415 - only for a mistyped command

    msg = f"unknown command {command!r}; the commands are: {', '.join(_COMMANDS)}"
    close = difflib.get_close_matches(command, _COMMANDS, n=1, cutoff=0.6)
    if close:
        msg += f". Did you mean {close[0]!r}?"
    raise UsageError(msg, "attn")


def _run(argv: Sequence[str] | None, out: IO[str], err: IO[str]) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _check_command(argv)
    parser = _parser(_command(argv))
    args, extra = parser.parse_known_args(argv)
    if extra:
        # argparse blames the top-level parser; the arguments belong to the command.
        after_command = (
            args.command is not None and extra[0] in argv[argv.index(args.command) + 1 :]
        )
        prog = f"attn {args.command}" if after_command else "attn"
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", prog)
    if args.version:
        out.write(f"attn {version_label()} (Python {sys.version.split()[0]}, {sys.executable})\n")
        return EXIT_OK
    if args.command is None:
        parser.print_help(err)
        return EXIT_USAGE
    module = importlib.import_module(f"{__name__}.{_MODULES[args.command]}")
    status: int = module.run(args, out, err)
    return status


def _report_warnings(caught: Sequence[warnings.WarningMessage], err: IO[str]) -> None:
    from attn.registry.errors import RejectedPluginWarning  # noqa: PLC0415

    shown: set[str] = set()
    for w in caught:
        if issubclass(w.category, RejectedPluginWarning):
            continue  # every command shows rejected plugins itself, with the reason
        text = str(w.message)
        if text not in shown:
            shown.add(text)
            err.write(f"Warning: {text}\n")


def main(argv: Sequence[str] | None = None) -> int:  # noqa: PLR0911 - one return per outcome
    """Run the ``attn`` command with *argv* (default ``sys.argv[1:]``); return the exit code."""
    from attn.registry import AttnConfigError, AttnError, AttnWarning  # noqa: PLC0415

    out, err = sys.stdout, sys.stderr
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", AttnWarning)
            try:
                return _run(argv, out, err)
            finally:
                _report_warnings(caught, err)
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
        # `attn list | head`: the reader left; stop quietly, as other CLIs do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PROBLEM
