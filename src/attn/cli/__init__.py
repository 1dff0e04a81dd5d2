"""The ``attn`` command: ``list``, ``show``, ``doctor``, ``select`` and ``state save``."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import stat
import sys
import warnings
from typing import IO, TYPE_CHECKING, Any, NoReturn, cast

from attn import _fork, _version
from attn.registry.enum import BackendEnumMeta, close_matches, declared_registries
from attn.registry.errors import (
    AttnConfigError,
    AttnError,
    AttnWarning,
    InvalidPathError,
    PluginProblemError,
    RejectedPluginWarning,
    describe,
    joined,
    parse_path,
    passes_through,
    shown,
)
from attn.registry.loading import attribute, plugin_output_to

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["main"]

WIDTH = 100  # the width the human output is laid out for
BOLD = "1"
_COLOURS = {
    **dict.fromkeys(("ok", "used"), "32"),  # green
    **dict.fromkeys(("unregistered", "disabled", "shadowed", "note"), "33"),  # yellow
    **dict.fromkeys(("broken", "invalid", "incompatible", "problem"), "31"),  # red
}
#: attn's colour codes, then the controls that could move the cursor, retitle, clear or reorder.
_CONTROLS = re.compile(
    "(\033\\[(?:0|1|31|32|33)m)|[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
_MODULES = {"list": "listing", "show": "listing", "state": "doctor", "select": "doctor"}
_REGISTRY = """a registry's class name or entry-point group, spelled exactly, or MODULE:CLASS
    to import another host's registry"""
_FLAG: dict[str, Any] = {"action": "store_true"}
_JSON = ("--json", "print one JSON object", _FLAG)
_REGISTRIES = (
    "--registry",
    f"{_REGISTRY} (repeatable; default: every registry; select takes one)",
    {"action": "append", "default": [], "dest": "selected", "metavar": "REGISTRY"},
)

#: Each command: (summary, description, *arguments as (flags, help, options)); argparse reflows.
_COMMANDS: dict[str, tuple[Any, ...]] = {
    "list": (
        "the backends in effect and every plugin not in effect",
        """One table per registry: every backend in effect, then every discovered plugin that
        is not in effect, with its status and reason.""",
        ("registry", f"{_REGISTRY} (default: all)", {"nargs": "*", "metavar": "REGISTRY"}),
        _JSON,
        ("--load", "import and check every backend (runs plugin code)", _FLAG),
    ),
    "show": (
        "one backend in detail, with every claimant",
        """One backend in every registry that has it: its path, origin, built-in default,
        kernel availability and every plugin that claims its name.""",
        ("name", "the backend's name, e.g. FLASH_ATTN", {"metavar": "NAME"}),
        ("--load", "import and check the backend (runs plugin code)", _FLAG),
    ),
    "doctor": (
        "check installed plugins and print a fix for each problem",
        """Check the installed plugins and the registries' environment variables; print one
        finding per problem with its fix. Exit 1 when a problem is found.""",
        ("--load", "also import every backend (runs plugin code)", _FLAG),
        ("--json", "print one JSON object (for CI) instead of text", _FLAG),
        (
            "--against",
            """instead, compare this environment with a state saved by '{root} state save
            FILE' ('-': stdin); exit 1 when a backend resolves differently""",
            {"metavar": "FILE"},
        ),
    ),
    "select": (
        "choose a registry's backend for a configuration, with every candidate's verdict",
        """Try the registry's candidates in order for the settings given and print each
        verdict with its reasons; the first valid one is chosen.""",
        (
            "registry",
            f"{_REGISTRY} (may be left out when the command knows one registry only)",
            {"nargs": "?", "metavar": "REGISTRY"},
        ),
        (
            "--set",
            """a setting (repeatable); VALUE is read as JSON when it is JSON (head_size=128,
            'capability=[9,0]' quoted for the shell, use_mla=true), else as a string
            (device=cuda)""",
            {"action": "append", "default": [], "metavar": "KEY=VALUE", "dest": "settings"},
        ),
        ("--backend", "try this backend alone", {"metavar": "NAME"}),
        _JSON,
    ),
    "state": (
        "save what every backend resolves to here, for 'doctor --against FILE'",
        """Save the resolved backends of this environment (every name: origin, path,
        distribution and version) as JSON, to compare another node with it using '{root}
        doctor --against FILE'.""",
        ("file", "where to write the state ('-': stdout)", {"metavar": "FILE"}),
    ),
}


class UsageError(Exception):
    """Bad arguments: exit 2, with a hint to the help of *prog*."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


def is_registry(obj: object) -> bool:
    return isinstance(obj, BackendEnumMeta) and "_attn_state" in vars(obj)


def _imported(value: str, prog: str, err: IO[str]) -> BackendEnumMeta:
    """The registry ``MODULE:CLASS`` names, imported: the user asked for it."""
    module, _, qualname = (part.strip() for part in value.partition(":"))
    try:
        path = parse_path(value)
    except InvalidPathError as exc:
        reason = f"no {'class after' if module else 'module before'} ':'"
        reason = exc.reason if module and qualname else reason
        msg = f"invalid registry {value!r}: {reason}; expected MODULE:CLASS, such as "
        raise UsageError(msg + "'attn.backends:AttentionBackendEnum'", prog) from None
    try:
        with plugin_output_to(err):  # what it prints stays out of --json
            obj = attribute(path)
    except BaseException as exc:
        if passes_through(exc):
            raise
        failed = f"cannot import registry {value!r}: {describe(exc)}"
        if isinstance(exc, PluginProblemError):  # strict mode at import: no usage error, exit 1
            raise AttnError(failed) from None
        raise UsageError(failed, prog) from None
    if not is_registry(obj):
        msg = f"invalid registry {value!r}: it is {shown(obj)}, not a BackendEnum with a group"
        raise UsageError(msg, prog)
    return cast("BackendEnumMeta", obj)


def selected_registries(args: argparse.Namespace, *named: str | None) -> list[BackendEnumMeta]:
    """The registries *named* and ``--registry`` pick; by default, all the command knows."""
    names = args.selected = [*(n for n in named if n is not None), *args.selected]  # for hints
    imported = {name: _imported(name, args.prog, args.err) for name in names if ":" in name}
    if args.known is None:
        from attn.backends import AttentionBackendEnum, MLAPrefillBackendEnum  # noqa: PLC0415

        args.known = [AttentionBackendEnum, MLAPrefillBackendEnum]
    known = list(dict.fromkeys([*args.known, *imported.values()]))
    pairs = [(s, r) for r in known for s in dict.fromkeys((r.__name__, r.group))]
    spellings = {s: [r for t, r in pairs if t == s] for s, _ in pairs}
    spellings |= {name: [r] for name, r in imported.items()}
    for name in names:
        if name not in spellings:
            valid = ", ".join(f"{r.__name__} ({r.group})" for r in known) + ", or another host's"
            msg = f"unknown registry {name!r}; valid registries are: {valid} as MODULE:CLASS"
            # Declared beside a MODULE:CLASS named, but not named: that one, not a near spelling.
            near = {r.__module__ for r in imported.values()}
            here = {f"{r.__module__}:{r.__qualname__}": r for r in declared_registries()}
            if declared := [
                k for k, r in here.items() if r.__module__ in near and name in (r.__name__, r.group)
            ]:
                raise UsageError(f"{msg}; name it as {joined(declared, 'or')}", args.prog)
            raise UsageError(msg + did_you_mean(name, spellings), args.prog)
        if len(found := spellings[name]) > 1:  # two hosts' registries of one class name
            paths = joined([f"{r.__module__}:{r.__qualname__}" for r in found], "or")
            raise UsageError(f"registry {name!r} is ambiguous; name {paths}", args.prog)
    return list(dict.fromkeys(spellings[name][0] for name in names)) if names else known


def command(args: argparse.Namespace, registry: BackendEnumMeta | None, words: str) -> str:
    """``'attn WORDS'``, quoted, with the same ``--registry``; else the registry's own command."""
    if registry is None or registry in args.known:  # None: the registries the user named
        again = "" if registry else "".join(f" --registry {r}" for r in args.selected)
        return f"'{args.root} {words}{again}'"
    return registry._attn_state.config.command(words, args.root)  # with --registry MODULE:CLASS


def did_you_mean(name: str, options: Iterable[str]) -> str:
    return "".join(f". Did you mean {c!r}?" for c in close_matches(name, options, 1, 0.6))


class Style:
    """Colour for terminals; plain text for pipes, files and ``NO_COLOR``."""

    def __init__(self, stream: IO[str]) -> None:
        plain = os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb"
        self.color = stream.isatty() and not plain

    def __call__(self, text: str, code: str | None = None) -> str:
        code = code or _COLOURS.get(text)
        return f"\033[{code}m{text}\033[0m" if self.color and text and code else text


def wrap(text: str, first: str = "    ", indent: str = "    ") -> str:
    """*text* wrapped to `WIDTH` after *first*, then *indent*; never in ``'a b'`` or ``unset X``."""
    from textwrap import TextWrapper  # noqa: PLC0415 - attn list --json wraps nothing

    wrapper = TextWrapper(WIDTH, first, indent, break_long_words=False, break_on_hyphens=False)
    words = re.findall(r"(?:(?:export|unset) (?=[A-Z]))?(?:[^\s']+|(?<!\w)'[^']*'(?!\w)|')+", text)
    return wrapper.fill(" ".join(w.replace(" ", "\ufdd0") for w in words)).replace("\ufdd0", " ")


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 group``, ``2 groups``; ``2 registries`` with *nouns*."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


class _Help(Exception):  # noqa: N818 - not an error: --help was asked for
    """The help text, for the command's stdout writer (so that a failed write counts)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises instead of exiting the process."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)

    def print_help(self, file: object = None) -> None:  # noqa: ARG002
        raise _Help(self.format_help())


def _parser(command: str | None, prog: str) -> _Parser:
    """The parser: *command*'s arguments, and only the names of the other commands."""
    about = "List and diagnose backends and the plugins that provide them."
    codes = "Exit status: 0 success, 1 a problem was found, 2 a usage error."
    parser = _Parser(prog=prog, description=about, epilog=codes)
    parser.add_argument("--version", help="print attn's version and the Python in use", **_FLAG)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (summary, description, *arguments) in _COMMANDS.items():
        cmd = sub.add_parser(name, help=summary, description=description.replace("{root}", prog))
        if name != command:  # only the command run needs its arguments
            continue
        if name == "state":
            actions = cmd.add_subparsers(dest="action", metavar="ACTION", required=True)
            about = "Write this environment's resolved backends to FILE as JSON ('-' for stdout)."
            save = "write the state to FILE ('-' for stdout)"
            cmd = actions.add_parser("save", help=save, description=about)
        cmd.set_defaults(prog=cmd.prog)  # what the command's messages call it (``attn list``)
        for flags, text, options in (_REGISTRIES, *arguments):
            cmd.add_argument(flags, help=text.replace("{root}", prog), **options)
    return parser


def _run(argv: list[str], err: IO[str], known: object, prog: str) -> int:
    out = cast("IO[str]", _Stdout(sys.stdout))
    # The command *argv* names: attn's own message, as argparse's varies by Python.
    word = next((a for a in argv if not a.startswith("-")), None)
    if word is not None and word not in _COMMANDS:
        msg = f"unknown command {word!r}; the commands are: {', '.join(_COMMANDS)}"
        raise UsageError(msg + did_you_mean(word, _COMMANDS), prog)
    parser = _parser(word, prog)
    parser.set_defaults(known=known, root=prog, err=err)  # what every command reads, besides argv
    try:
        args, extra = parser.parse_known_args(argv)
    except _Help as exc:
        out.write(str(exc))
        return 0
    if extra and args.command == "list" and not any(a.startswith("-") for a in extra):
        args.registry, extra = [*args.registry, *extra], []  # REGISTRY values after an option
    if extra:  # argparse blames the top-level parser, not the command's (attn state save)
        after = args.command is not None and extra[0] in argv[argv.index(args.command) + 1 :]
        raise UsageError(f"unrecognized arguments: {' '.join(extra)}", args.prog if after else prog)
    if args.version:
        out.write(f"attn {_version()} (Python {sys.version.split()[0]}, {sys.executable})\n")
        return 0
    if args.command is None:
        err.write(parser.format_help())
        return 2
    module = importlib.import_module(f"{__name__}.{_MODULES.get(args.command, args.command)}")
    try:
        return int(getattr(module, f"run_{args.command}")(args, out, err))
    except PluginProblemError as exc:  # the fixes: this command's doctor, on the same registries
        doctor = command(args, None, "doctor")
        err.write(f"Error: {exc._render(exc.heading, exc.problems, doctor)}\n")
        return 1


class _Stderr:
    r"""A stream that writes control characters as escapes (``\x1b``); plugins' prints too."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream, self._tty = stream, False  # _tty: whether attn's colours pass

    def write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a full disk: the exit code stays the same
            self._stream.write(_CONTROLS.sub(self._escape, text))

    def _escape(self, match: re.Match[str]) -> str:
        return (self._tty and match[1]) or match[0].encode("unicode_escape").decode("ascii")

    def writelines(self, lines: Iterable[str]) -> None:
        self.write("".join(lines))

    def __getattr__(self, name: str) -> object:  # flush, fileno, isatty, encoding
        # Not close: under --load this is plugin code's sys.stdout, which it may close.
        return (lambda: None) if name == "close" else getattr(self._stream, name)


class _Stdout(_Stderr):
    """``sys.stdout``, flushed at each write; a refused write is an `AttnError` (exit 1)."""

    def __init__(self, stream: IO[str] | None) -> None:
        super().__init__(cast("IO[str]", stream))
        self._piece = sys.maxsize  # characters per write; to a pipe, fewer (see write())
        with contextlib.suppress(AttributeError, OSError, ValueError):  # closed, or no isatty
            self._tty = self._stream.isatty()
            if stat.S_ISFIFO(os.fstat(self._stream.fileno()).st_mode):
                self._piece = 1024

    def isatty(self) -> bool:
        return self._tty

    def write(self, text: str) -> None:
        if self._stream is None:
            raise AttnError("cannot write the output: stdout is closed")
        try:  # a pipe takes up to PIPE_BUF (4096 bytes) whole, or fails: never cut short unseen
            text = _CONTROLS.sub(self._escape, text)
            for start in range(0, len(text), self._piece):
                self._stream.write(text[start : start + self._piece])
                self._stream.flush()
        except BrokenPipeError:  # `attn list | head`: the reader left, `main` ends quietly
            raise
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            msg = f"output: stdout's encoding ({exc.encoding}) cannot encode {bad!r}"
            raise AttnError(f"cannot write the {msg}; export PYTHONIOENCODING=utf-8") from exc
        except (OSError, ValueError) as exc:  # ValueError: a closed file object
            reason = getattr(exc, "strerror", None) or exc
            raise AttnError(f"cannot write the output: {reason}") from exc


def main(
    argv: Sequence[str] | None = None,
    *,
    registries: Sequence[BackendEnumMeta] | None = None,
    prog: str | None = None,
) -> int:
    """Run the ``attn`` command with *argv* (default ``sys.argv[1:]``); return the exit code.

    A host passes its own *registries* (instead of attn's two; ``--registry MODULE:CLASS`` adds
    others) and *prog*, the command's name in usage lines and hints (``"tinyinfer plugins"``).

    Raises:
        TypeError: an item of *registries* is not a registry class.
    """
    listed = None if registries is None else [*registries]  # an iterator is read once
    if listed is not None and not (listed and all(map(is_registry, listed))):
        raise TypeError(f"main(registries=...) expects registry classes, got {registries!r}")
    argv = sys.argv[1:] if argv is None else list(argv)
    stderr = sys.stderr or open(os.devnull, "w", encoding="utf-8")  # noqa: PTH123, SIM115
    err = cast("IO[str]", _Stderr(stderr))  # `2>&-`: dropped, and plugins' writes to fd 1 too
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", AttnWarning)
            warnings.simplefilter("ignore", RejectedPluginWarning)  # rows show them; not select's
            try:  # a fork meanwhile waits: the command imports modules, plugins' too
                with _fork.importing():
                    return _run(argv, err, listed, prog or "attn")
            finally:
                messages = dict.fromkeys(str(w.message) for w in caught)
                err.writelines(f"Warning: {t}\n" for t in messages)
    except UsageError as exc:
        err.write(f"Error: {exc}\nTry '{exc.prog} --help' for help.\n")
        return 2
    except AttnError as exc:
        err.write(f"Error: {exc}\n")
        return 2 if isinstance(exc, AttnConfigError) else 1
    except KeyboardInterrupt:
        err.write("Aborted.\n")
        return 130
    except BrokenPipeError:
        # Exit 1 quietly, as Python's SIGPIPE notes say; fd 1 on /dev/null: the last flush passes.
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stdout, devnull = sys.stdout.fileno(), os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout)  # fileno() first: no devnull for a stdout without one
            os.close(devnull)
        return 1
    finally:
        if stderr is not sys.stderr:
            stderr.close()
