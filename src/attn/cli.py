"""The ``attn`` command: ``list``, ``show`` and ``doctor``.

Usage::

    attn list [REGISTRY ...] [--json] [--load]
    attn show NAME [--registry REGISTRY]
    attn doctor [--load]
    attn --version

REGISTRY is a registry's class name (``AttentionBackendEnum``) or its
entry-point group (``attn.backends``), spelled exactly.

Exit codes, as click and httpx use them:

- 0: success (``doctor``: no problem found);
- 1: a problem was found: ``show`` of an unknown name, ``doctor`` found a
  problem, or, under ``ATTN_STRICT=1``, a plugin has a problem (discovery
  raises :class:`attn.PluginProblemError`, or ``list --load`` finds a backend
  that cannot be loaded);
- 2: the invocation is wrong: bad arguments, no command at all (the help is
  printed on stderr), or an ``ATTN_*`` variable with an invalid value.

Errors go to stderr as ``Error: ...``; usage errors add a hint to ``--help``.
Warnings that attn issues while a command runs (a conflict between plugins,
an ``ATTN_PLUGINS`` name that matches nothing) are printed on stderr as
``Warning: ...`` instead of Python's default warning format.

Output is plain text unless stdout is a terminal, ``NO_COLOR`` is unset or
empty and ``TERM`` is not ``dumb``; then statuses are coloured. Tables are
laid out for 100 columns whatever the terminal's width, so the output is the
same in a terminal, a pipe and a log. docs/cli.md records these choices.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import textwrap
import warnings
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from .registry.discovery import DiscoveryResult
    from .registry.enum import BackendEnumMeta
    from .registry.report import BackendRow, Finding, PluginRecord, RegistryReport

__all__ = ["main"]

#: The width the human output is laid out for.
WIDTH = 100

_EXIT_OK = 0
_EXIT_PROBLEM = 1
_EXIT_USAGE = 2


class UsageError(Exception):
    """Bad arguments: exit 2, with a hint to the help of *prog*."""

    def __init__(self, message: str, prog: str = "attn") -> None:
        """Record the *message* and the (sub)command whose help to point to."""
        super().__init__(message)
        self.prog = prog


class _Exit(Exception):  # noqa: N818 - not an error: argparse asked to stop (--help)
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises instead of exiting the process."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


# -- registries -----------------------------------------------------------------


def _registries() -> list[BackendEnumMeta]:
    from .backends import AttentionBackendEnum, MLAPrefillBackendEnum  # noqa: PLC0415

    return [AttentionBackendEnum, MLAPrefillBackendEnum]


def _group(registry: BackendEnumMeta) -> str:
    return registry._attn_state.config.group


def _select(names: Sequence[str]) -> list[BackendEnumMeta]:
    """The registries *names* pick (class names or groups, spelled exactly); all if none."""
    registries = _registries()
    if not names:
        return registries
    spellings = {r.__name__: r for r in registries} | {_group(r): r for r in registries}
    chosen: list[BackendEnumMeta] = []
    for name in names:
        registry = spellings.get(name)
        if registry is None:
            valid = ", ".join(f"{r.__name__} ({_group(r)})" for r in registries)
            msg = f"unknown registry {name!r}; valid registries are: {valid}"
            close = difflib.get_close_matches(name, list(spellings), n=1, cutoff=0.6)
            if close:
                msg += f". Did you mean {close[0]!r}?"
            raise UsageError(msg, "attn")
        if registry not in chosen:
            chosen.append(registry)
    return chosen


# -- rendering helpers ------------------------------------------------------------


_COLOURS = {
    "ok": "32",
    "used": "32",
    "yes": "32",
    "unregistered": "33",
    "disabled": "33",
    "shadowed": "33",
    "note": "33",
    "broken": "31",
    "invalid": "31",
    "incompatible": "31",
    "problem": "31",
}


class _Style:
    """Colour for terminals; plain text for pipes, files and ``NO_COLOR``."""

    def __init__(self, stream: IO[str]) -> None:
        isatty = getattr(stream, "isatty", None)
        self.color = (
            not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb"
            and callable(isatty)
            and bool(isatty())
        )

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self.paint(text, "1")

    def word(self, text: str) -> str:
        """*text* in the colour of the status or verdict it names."""
        code = _COLOURS.get(text)
        return self.paint(text, code) if code else text


def _wrap(text: str, indent: str, *, first: str | None = None) -> str:
    """*text* wrapped to :data:`WIDTH`, indented; words are never broken."""
    return textwrap.fill(
        " ".join(text.split()),
        width=WIDTH,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def _version_label() -> str:
    from . import _version  # noqa: PLC0415

    return _version()


def _host_label(report: RegistryReport) -> str:
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


def _from(row: BackendRow, report: RegistryReport) -> str:
    """Where a backend in effect comes from: a distribution, or the registering module."""
    if row.origin == "builtin":
        return report.host or "attn"
    if row.origin == "runtime":
        return row.registered_by or "unknown module"
    if row.distribution_version:
        return f"{row.distribution} {row.distribution_version}"
    return row.distribution or "unknown distribution"


def _available(row: BackendRow) -> str:
    if row.path is None:
        return "-"
    if row.available is None:
        return "unknown"
    return "yes" if row.available else "no"


# -- attn list --------------------------------------------------------------------

_HEADERS = ("NAME", "ORIGIN", "FROM", "OVERRIDDEN", "STATUS", "AVAILABLE")
_FROM = _HEADERS.index("FROM")
_STATUS = _HEADERS.index("STATUS")
_MIN_FROM = 12


def _table(report: RegistryReport, style: _Style) -> list[str]:
    rows = [
        [
            row.name,
            row.origin,
            _from(row, report),
            "yes" if row.overridden else "no",
            row.status,
            _available(row),
        ]
        for row in report.backends
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]
    others = sum(w for i, w in enumerate(widths) if i != _FROM) + 2 * (len(_HEADERS) - 1)
    widths[_FROM] = max(len(_HEADERS[_FROM]), min(widths[_FROM], max(WIDTH - others, _MIN_FROM)))
    for r in rows:
        r[_FROM] = _fit(r[_FROM], widths[_FROM])

    def line(cells: Sequence[str], painted: Sequence[str]) -> str:
        padded = [p + " " * (w - len(c)) for c, p, w in zip(cells, painted, widths, strict=True)]
        return "  ".join(padded).rstrip()

    lines = [line(_HEADERS, [style.bold(h) for h in _HEADERS])]
    for r in rows:
        painted = list(r)
        painted[_STATUS] = style.word(r[_STATUS])
        lines.append(line(r, painted))
    return lines


def _render_list(report: RegistryReport, selection: str | None, style: _Style) -> list[str]:
    lines = [style.bold(f"{report.registry} (entry-point group {report.group})")]
    lines += _table(report, style)
    for row in report.backends:
        if row.status == "unregistered":
            lines.append(
                _wrap(
                    f"{row.name}: unregistered (no built-in default); "
                    f"'attn show {row.name}' says how to register one.",
                    "    ",
                    first="  ",
                )
            )
        elif row.status == "broken" and row.reason:
            lines.append(
                _wrap(
                    f"{row.name} is {style.word('broken')}: {row.reason}",
                    "    ",
                    first="  ",
                )
            )
    if report.plugins_disabled:
        lines.append(
            f"Plugins are disabled ({report.disable_variable} is set): only built-ins and "
            "runtime registrations are in effect."
        )
        return lines
    if selection is not None:
        lines.append(f"Plugins are limited to the distributions in {selection}.")
    rejected = [p for p in report.plugins if p.status != "used"]
    if rejected:
        lines.append("Plugins not in effect:")
        for p in rejected:
            lines.append(f"  {p.name} = {p.value!r} from {p.origin_label}: {style.word(p.status)}")
            if p.reason:
                lines.append(_wrap(p.reason, "    "))
    return lines


def _selection_label(registry: BackendEnumMeta) -> str | None:
    controls = registry._attn_state.controls()
    if controls.only is None:
        return None
    return f"{controls.plugins_variable}={','.join(controls.only_as_written)}"


def _cmd_list(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .registry import build_report  # noqa: PLC0415

    registries = _select(args.registry)
    reports = [build_report(r, load=args.load) for r in registries]
    if args.json:
        payload = {
            "attn_version": _version_label(),
            "registries": [r.to_json() for r in reports],
        }
        json.dump(payload, out, indent=2)
        out.write("\n")
    else:
        style = _Style(out)
        selection = _selection_label(registries[0])
        blocks = ["\n".join(_render_list(r, selection, style)) for r in reports]
        out.write("\n\n".join(blocks) + "\n")
    controls = registries[0]._attn_state.controls()
    broken = [
        f"{r.registry}.{row.name}" for r in reports for row in r.backends if row.status == "broken"
    ]
    if controls.strict and broken:
        err.write(
            f"Error: {controls.strict_variable}=1 and {len(broken)} backend(s) cannot be "
            f"loaded: {', '.join(broken)}\n"
        )
        return _EXIT_PROBLEM
    return _EXIT_OK


# -- attn show --------------------------------------------------------------------


_VALUE_COLUMN = 17


def _field(label: str, value: str, indent: int = 2) -> str:
    """``label:  value``, values aligned at :data:`_VALUE_COLUMN` and wrapped under it."""
    first = " " * indent + f"{label + ':':<{_VALUE_COLUMN - indent}}"
    return _wrap(value, " " * _VALUE_COLUMN, first=first)


def _kernel(row: BackendRow) -> str:
    if row.path is None:
        return "unknown until a backend is registered"
    if row.available is None:
        return "unknown: attn does not import a plugin's code to describe it"
    if not row.requires:
        return "needs no kernel package"
    missing = set(row.missing)
    if row.available is False and not missing:
        return f"needs {', '.join(row.requires)}; not available"
    needs = ", ".join(
        f"{package} ({'not installed' if package in missing else 'installed'})"
        for package in row.requires
    )
    return f"needs {needs}"


def _default(row: BackendRow | None, name: str, builtin: bool) -> str:
    if row is not None and row.default_path is not None:
        return f"{row.default_path} (built-in)"
    if builtin:
        return f"none: {name} has no built-in default"
    return f"none: {name} is not a built-in"


def _origin(row: BackendRow, report: RegistryReport) -> str:
    if row.origin == "runtime":
        return f"runtime, registered by {_from(row, report)}"
    if row.origin == "plugin":
        return f"plugin, from {_from(row, report)}"
    return f"builtin, from {_host_label(report)}"


def _claimant(p: PluginRecord, style: _Style) -> list[str]:
    requirement = (
        ", ".join(p.requirements)
        if p.requirements
        else "none declared (compatibility cannot be checked)"
    )
    lines = [
        f"  - {p.origin_label}: {style.word(p.status)}",
        _field("value", repr(p.value), 6),
        _field("metadata", p.location, 6),
        _field("requires", requirement, 6),
    ]
    if p.reason:
        lines.append(_field("reason", p.reason, 6))
    return lines


def _render_show(
    report: RegistryReport, name: str, builtin: bool, style: _Style
) -> list[str] | None:
    row = next((b for b in report.backends if b.name == name), None)
    claimants = [p for p in report.plugins if p.name == name]
    if row is None and not claimants:
        return None
    lines = [style.bold(f"{name} in {report.registry} (entry-point group {report.group})")]
    if row is None:
        lines.append(_field("status", "not in effect: no claimant is used"))
    else:
        lines.append(_field("path", row.path or "none: not registered"))
        lines.append(_field("origin", _origin(row, report)))
    lines.append(_field("default", _default(row, name, builtin)))
    if row is not None:
        lines.append(_field("overridden", "yes" if row.overridden else "no"))
        status = style.word(row.status) + (f": {row.reason}" if row.reason else "")
        lines.append(_field("status", status))
        lines.append(_field("kernel", _kernel(row)))
    if report.plugins_disabled:
        lines.append(_field("claimants", f"not read: {report.disable_variable} is set"))
    elif claimants:
        count = f"{len(claimants)} entry point{'s' if len(claimants) > 1 else ''}"
        lines.append(_field("claimants", f"{count} named {name!r} in {report.group}"))
        for p in claimants:
            lines += _claimant(p, style)
    else:
        lines.append(_field("claimants", f"none: no plugin declares {name!r}"))
    return lines


def _suggestions(name: str, reports: Sequence[RegistryReport]) -> list[str]:
    from .registry.enum import close_matches  # noqa: PLC0415

    names = [
        n
        for report in reports
        for n in [*(b.name for b in report.backends), *(p.name for p in report.plugins)]
    ]
    return close_matches(name, names, cutoff=0.6)


def _or(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"


def _cmd_show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .registry import build_report  # noqa: PLC0415

    registries = _select([args.registry] if args.registry else [])
    reports = [build_report(r) for r in registries]
    style = _Style(out)
    blocks = []
    for registry, report in zip(registries, reports, strict=True):
        lines = _render_show(report, args.name, args.name in registry._attn_defaults, style)
        if lines is not None:
            blocks.append("\n".join(lines))
    if blocks:
        out.write("\n\n".join(blocks) + "\n")
        return _EXIT_OK
    where = _or([r.registry for r in reports])
    message = f"Error: unknown backend {args.name!r} in {where}.\n"
    close = _suggestions(args.name, reports)
    if close:
        message += f"Did you mean {_or([repr(c) for c in close])}?\n"
    message += "'attn list' shows every backend.\n"
    err.write(message)
    return _EXIT_PROBLEM


# -- attn doctor ------------------------------------------------------------------

#: Findings about the environment as a whole, not about one registry's group.
_GLOBAL_KINDS = frozenset({"empty-metadata", "duplicate-metadata", "unmatched-selection"})


@dataclass(frozen=True, slots=True)
class _Checked:
    """What doctor found in one registry."""

    registry: BackendEnumMeta
    result: DiscoveryResult
    findings: tuple[Finding, ...]


def _load_findings(registry: BackendEnumMeta, result: DiscoveryResult) -> Iterator[Finding]:
    """Import every built-in default and every merged plugin of *registry*; report failures."""
    from .registry.enum import _interface, load_context  # noqa: PLC0415
    from .registry.errors import BackendLoadError  # noqa: PLC0415
    from .registry.listing import one_line  # noqa: PLC0415
    from .registry.loading import load_class  # noqa: PLC0415
    from .registry.report import Finding  # noqa: PLC0415
    from .registry.table import Entry  # noqa: PLC0415

    config = registry._attn_state.config
    interface = _interface(registry)
    for name, default in registry._attn_defaults.items():
        if default is None:
            continue
        try:
            load_class(default, interface, load_context(registry, name, None))
        except BackendLoadError as exc:
            yield Finding(
                "load-failure",
                name,
                f"the built-in {config.noun} {name!r} ({default.dotted}) cannot be loaded: "
                f"{one_line(exc.detail)}",
                f"reinstall {config.host} (pip install --force-reinstall {config.host}); "
                "if that does not help, report a bug",
            )
    for plugin in result.used:
        entry = Entry.from_plugin(plugin)
        try:
            load_class(entry.path, interface, load_context(registry, plugin.name, entry))
        except BackendLoadError as exc:
            yield Finding(
                "load-failure",
                plugin.name,
                f"{plugin.origin_label} provides {plugin.name!r} = {plugin.value!r}, which "
                f"cannot be loaded: {one_line(exc.detail)}",
                f"fix or uninstall {plugin.distribution}, or leave it out with "
                f"{config.env_prefix}_PLUGINS (or {config.env_prefix}_DISABLE_PLUGINS=1)",
            )


def _check(registry: BackendEnumMeta, *, load: bool) -> _Checked:
    """Run discovery for *registry* as the environment sets it, without merging or raising."""
    result = registry._attn_state.diagnose()
    findings = list(result.findings)
    if load:
        findings += _load_findings(registry, result)
    return _Checked(registry, result, tuple(findings))


def _collect(checked: Sequence[_Checked]) -> list[tuple[Finding, str | None]]:
    """Every finding once, with the group it concerns (``None``: the whole environment)."""
    seen: set[tuple[str, str, str | None]] = set()
    collected: list[tuple[Finding, str | None]] = []
    for c in checked:
        for finding in c.findings:
            scope = None if finding.kind in _GLOBAL_KINDS else _group(c.registry)
            key = (finding.kind, finding.message, scope)
            if key not in seen:
                seen.add(key)
                collected.append((finding, scope))
    return collected


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _cmd_doctor(args: argparse.Namespace, out: IO[str]) -> int:
    checked = [_check(r, load=args.load) for r in _registries()]
    collected = _collect(checked)
    style = _Style(out)
    problems = [(f, s) for f, s in collected if f.is_problem]
    notes = [(f, s) for f, s in collected if not f.is_problem]
    for verdict, items in (("problem", problems), ("note", notes)):
        for finding, scope in items:
            where = f", {scope}" if scope else ""
            out.write(
                _wrap(
                    f"{style.word(verdict)} ({finding.kind}{where}): {finding.message}",
                    "    ",
                    first="",
                )
                + "\n"
                + _wrap(f"fix: {finding.fix}", "    ", first="  ")
                + "\n"
            )
    controls = checked[0].registry._attn_state.controls()
    if all(c.result.plugins_disabled for c in checked):
        out.write(
            f"Plugins are disabled ({controls.disable_variable} is set): no plugin was checked.\n"
        )
    entry_points = sum(len(c.result.plugins) for c in checked)
    scope = f"{_plural(len(checked), 'group')}, {_plural(entry_points, 'plugin entry point')}"
    if args.load:
        scope += ", every backend imported"
    if problems:
        summary = f"attn doctor: {_plural(len(problems), 'problem')}"
        if notes:
            summary += f" and {_plural(len(notes), 'note')}"
        out.write(f"{summary} ({scope}).\n")
        return _EXIT_PROBLEM
    notes_label = f", {_plural(len(notes), 'note')}" if notes else ""
    out.write(f"attn doctor: no problems found{notes_label} ({scope}).\n")
    return _EXIT_OK


# -- the command ------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="attn",
        description="List and diagnose attn's backends and the plugins that provide them.",
        epilog="Exit status: 0 success, 1 a problem was found, 2 a usage error.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print attn's version and the Python in use"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    p_list = sub.add_parser(
        "list",
        help="the backends in effect and every plugin not in effect",
        description="One table per registry: every backend in effect, then every "
        "discovered plugin that is not in effect, with its status and reason.",
    )
    p_list.add_argument(
        "registry",
        nargs="*",
        metavar="REGISTRY",
        help="a registry's class name or entry-point group, spelled exactly (default: all)",
    )
    p_list.add_argument("--json", action="store_true", help="print one JSON object")
    p_list.add_argument(
        "--load", action="store_true", help="import and check every backend (runs plugin code)"
    )
    p_show = sub.add_parser(
        "show",
        help="one backend in detail, with every claimant",
        description="One backend in every registry that has it: its path, origin, built-in "
        "default, kernel availability and every plugin that claims its name.",
    )
    p_show.add_argument("name", metavar="NAME", help="the backend's name, e.g. FLASH_ATTN")
    p_show.add_argument(
        "--registry", metavar="REGISTRY", help="a registry's class name or entry-point group"
    )
    p_doctor = sub.add_parser(
        "doctor",
        help="check installed plugins and print a fix for each problem",
        description="Check the installed plugins and attn's environment variables; print "
        "one finding per problem with its fix. Exit 1 when a problem is found.",
    )
    p_doctor.add_argument(
        "--load", action="store_true", help="also import every backend (runs plugin code)"
    )
    return parser


_COMMANDS = ("list", "show", "doctor")


def _check_command(argv: Sequence[str]) -> None:
    """Refuse an unknown command with attn's own message (argparse's varies by Python)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is None or command in _COMMANDS:
        return
    msg = f"unknown command {command!r}; the commands are: {', '.join(_COMMANDS)}"
    close = difflib.get_close_matches(command, _COMMANDS, n=1, cutoff=0.6)
    if close:
        msg += f". Did you mean {close[0]!r}?"
    raise UsageError(msg, "attn")


def _run(argv: Sequence[str] | None, out: IO[str], err: IO[str]) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    _check_command(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        out.write(f"attn {_version_label()} (Python {sys.version.split()[0]}, {sys.executable})\n")
        return _EXIT_OK
    if args.command is None:
        parser.print_help(err)
        return _EXIT_USAGE
    if args.command == "list":
        return _cmd_list(args, out, err)
    if args.command == "show":
        return _cmd_show(args, out, err)
    return _cmd_doctor(args, out)


def _report_warnings(caught: Sequence[warnings.WarningMessage], err: IO[str]) -> None:
    shown: set[str] = set()
    for w in caught:
        text = str(w.message)
        if text not in shown:
            shown.add(text)
            err.write(f"Warning: {text}\n")


def main(argv: Sequence[str] | None = None) -> int:  # noqa: PLR0911 - one return per outcome
    """Run the ``attn`` command with *argv* (default ``sys.argv[1:]``); return the exit code."""
    from .registry import AttnConfigError, AttnError, AttnWarning  # noqa: PLC0415

    out, err = sys.stdout, sys.stderr
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", AttnWarning)
            try:
                return _run(argv, out, err)
            finally:
                _report_warnings(caught, err)
    except _Exit as exc:
        return exc.status
    except UsageError as exc:
        err.write(f"Error: {exc}\nTry '{exc.prog} --help' for help.\n")
        return _EXIT_USAGE
    except AttnConfigError as exc:
        err.write(f"Error: {exc}\n")
        return _EXIT_USAGE
    except AttnError as exc:
        err.write(f"Error: {exc}\n")
        return _EXIT_PROBLEM
    except KeyboardInterrupt:
        err.write("Aborted.\n")
        return 130
    except BrokenPipeError:
        # `attn list | head`: the reader left; stop quietly, as other CLIs do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return _EXIT_PROBLEM
