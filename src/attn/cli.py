"""The ``attn`` command: ``list``, ``show`` and ``doctor``.

Exit codes: 0 success, 1 a problem was found (an unknown name for ``show``,
a problem for ``doctor``, a plugin problem under ``ATTN_STRICT=1``), 2 a
usage error. Errors go to stderr as ``Error: ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from typing import IO, TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .registry.enum import BackendEnumMeta
    from .registry.report import BackendRow, Finding, PluginRecord, RegistryReport

__all__ = ["main"]


class UsageError(Exception):
    """Bad arguments: exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _registries() -> list[BackendEnumMeta]:
    from .backends import AttentionBackendEnum, MLAPrefillBackendEnum  # noqa: PLC0415

    return [AttentionBackendEnum, MLAPrefillBackendEnum]


def _select(names: Sequence[str]) -> list[BackendEnumMeta]:
    registries = _registries()
    if not names:
        return registries
    chosen: list[BackendEnumMeta] = []
    for name in names:
        match = [r for r in registries if name in (r.__name__, r._attn_state.config.group)]
        if not match:
            valid = ", ".join(f"{r.__name__} ({r._attn_state.config.group})" for r in registries)
            msg = f"unknown registry {name!r}; valid registries are: {valid}"
            raise UsageError(msg)
        chosen.extend(m for m in match if m not in chosen)
    return chosen


class _Style:
    def __init__(self, stream: IO[str]) -> None:
        self.color = (
            not os.environ.get("NO_COLOR")
            and hasattr(stream, "isatty")
            and stream.isatty()
            and os.environ.get("TERM") != "dumb"
        )

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def status(self, text: str) -> str:
        code = {
            "ok": "32",
            "used": "32",
            "unregistered": "33",
            "disabled": "33",
            "shadowed": "33",
        }.get(text, "31")
        return self.paint(text, code)


def _version_label() -> str:
    from . import _version  # noqa: PLC0415

    return _version()


def _from(row: BackendRow) -> str:
    if row.origin == "builtin":
        return "built-in"
    if row.origin == "runtime":
        return f"runtime ({row.registered_by})" if row.registered_by else "runtime"
    if row.distribution_version:
        return f"{row.distribution} {row.distribution_version}"
    return row.distribution or ""


def _available(row: BackendRow) -> str:
    if row.available is None:
        return "?"
    if row.available:
        return "yes"
    return "no"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _render_table(report: RegistryReport, out: IO[str], style: _Style) -> None:
    out.write(f"{report.registry} (entry-point group {report.group})\n")
    headers = ("NAME", "ORIGIN", "FROM", "OVERRIDDEN", "STATUS", "AVAILABLE")
    rows = [
        (
            row.name,
            row.origin,
            _fit(_from(row), 34),
            "yes" if row.overridden else "no",
            row.status,
            _available(row),
        )
        for row in report.backends
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=True)]
        cells[4] = style.status(r[4]) + " " * (widths[4] - len(r[4]))
        out.write("  ".join(cells).rstrip() + "\n")
    for row in report.backends:
        if row.status != "ok" and row.reason:
            out.write(f"  {row.name}: {row.status}: {row.reason.splitlines()[0]}\n")
    if report.plugins_disabled:
        out.write(f"Plugins are disabled ({report.disable_variable}=1).\n")
        return
    rejected = [p for p in report.plugins if p.status != "used"]
    if rejected:
        out.write("Plugins not in effect:\n")
        for p in rejected:
            out.write(
                f"  {p.name} = {p.value!r} from {p.origin_label}: "
                f"{style.status(p.status)}: {p.reason}\n"
            )


def _reports(registries: Sequence[BackendEnumMeta], *, load: bool) -> list[RegistryReport]:
    from .registry import build_report  # noqa: PLC0415

    return [build_report(r, load=load) for r in registries]


def _cmd_list(args: argparse.Namespace, out: IO[str]) -> int:
    registries = _select(args.registry)
    reports = _reports(registries, load=args.load)
    if args.json:
        payload = {
            "attn_version": _version_label(),
            "registries": [r.to_json() for r in reports],
        }
        json.dump(payload, out, indent=2)
        out.write("\n")
    else:
        style = _Style(out)
        for i, report in enumerate(reports):
            if i:
                out.write("\n")
            _render_table(report, out, style)
    strict = registries[0]._attn_state.controls().strict
    broken = any(row.status == "broken" for r in reports for row in r.backends)
    return 1 if strict and broken else 0


def _claimant_lines(p: PluginRecord) -> list[str]:
    requirement = ", ".join(p.requirements) if p.requirements else "none declared"
    return [
        f"  - {p.origin_label}: {p.value!r}, {p.status}" + (f" ({p.reason})" if p.reason else ""),
        f"      metadata: {p.location}",
        f"      requires: {requirement}",
    ]


def _cmd_show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from .registry import AttnError, build_report  # noqa: PLC0415

    registries = _select([args.registry] if args.registry else [])
    found = False
    messages = []
    for registry in registries:
        report = build_report(registry)
        row = next((b for b in report.backends if b.name == args.name), None)
        claimants = [p for p in report.plugins if p.name == args.name]
        if row is None and not claimants:
            try:
                registry[args.name]
            except AttnError as exc:
                messages.append(str(exc))
            continue
        if found:
            out.write("\n")
        found = True
        out.write(f"{args.name} in {report.registry} (entry-point group {report.group})\n")
        if row is not None:
            out.write(f"  path:       {row.path or '(none: not registered)'}\n")
            out.write(f"  origin:     {row.origin} ({_from(row)})\n")
            out.write(f"  default:    {row.default_path or '(none)'}\n")
            out.write(f"  overridden: {'yes' if row.overridden else 'no'}\n")
            out.write(
                f"  status:     {row.status}" + (f" ({row.reason})" if row.reason else "") + "\n"
            )
            needs = ", ".join(row.requires) if row.requires else "nothing listed"
            out.write(f"  available:  {_available(row)} (needs {needs})\n")
        else:
            out.write("  not in effect\n")
        if claimants:
            out.write("  claimants:\n")
            for p in claimants:
                out.write("\n".join(_claimant_lines(p)) + "\n")
    if not found:
        err.write("Error: " + "\n".join(messages[:1] or [f"unknown backend {args.name!r}"]) + "\n")
        return 1
    return 0


def _diagnose(registry: BackendEnumMeta, *, load: bool) -> list[Finding]:
    from .registry.discovery import discover  # noqa: PLC0415
    from .registry.enum import load_context  # noqa: PLC0415
    from .registry.errors import BackendLoadError  # noqa: PLC0415
    from .registry.loading import load_class  # noqa: PLC0415
    from .registry.report import Finding  # noqa: PLC0415
    from .registry.table import Entry  # noqa: PLC0415

    state = registry._attn_state
    config = state.config
    controls = replace(state.controls(), strict=False)
    result = discover(
        group=config.group,
        host=config.host,
        controls=controls,
        builtin_names=tuple(registry._attn_defaults),
        sibling_groups=tuple(r._attn_state.config.group for r in _registries()),
    )
    findings = list(result.findings)
    if load:
        from .registry.enum import _interface  # noqa: PLC0415

        interface = _interface(registry)
        for plugin in result.used:
            entry = Entry.from_plugin(plugin)
            try:
                load_class(entry.path, interface, load_context(registry, plugin.name, entry))
            except BackendLoadError as exc:
                findings.append(
                    Finding(
                        "load-failure",
                        plugin.name,
                        str(exc).split(". Fix", 1)[0],
                        f"fix or uninstall {plugin.distribution}, or leave it out with "
                        f"{controls.plugins_variable}",
                    )
                )
    return findings


def _cmd_doctor(args: argparse.Namespace, out: IO[str]) -> int:
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    checked = 0
    for registry in _registries():
        for finding in _diagnose(registry, load=args.load):
            key = (finding.kind, finding.message)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
        checked += 1
    problems = [f for f in findings if f.is_problem]
    notes = [f for f in findings if not f.is_problem]
    for f in problems:
        out.write(f"problem [{f.kind}] {f.message}\n  fix: {f.fix}\n")
    for f in notes:
        out.write(f"note [{f.kind}] {f.message}\n  fix: {f.fix}\n")
    if problems:
        out.write(f"attn doctor: {len(problems)} problem(s) found.\n")
        return 1
    out.write(f"attn doctor: no problems found in {checked} registries.\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="attn",
        description="List and diagnose attn's backends and the plugins that provide them.",
    )
    parser.add_argument("--version", action="store_true", help="print attn's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    p_list = sub.add_parser("list", help="the backends in effect and every discovered plugin")
    p_list.add_argument(
        "registry", nargs="*", metavar="REGISTRY", help="a registry's class name or group"
    )
    p_list.add_argument("--json", action="store_true", help="print one JSON object")
    p_list.add_argument("--load", action="store_true", help="import and check every backend")
    p_show = sub.add_parser("show", help="one backend in detail, with every claimant")
    p_show.add_argument("name", metavar="NAME")
    p_show.add_argument("--registry", metavar="REGISTRY", help="a registry's class name or group")
    p_doctor = sub.add_parser("doctor", help="check installed plugins and print fixes")
    p_doctor.add_argument("--load", action="store_true", help="also import every plugin")
    return parser


def main(argv: Sequence[str] | None = None) -> int:  # noqa: PLR0911 - one exit per outcome
    """Run the ``attn`` command with *argv* (default ``sys.argv[1:]``); return the exit code."""
    from .registry import AttnConfigError, AttnError  # noqa: PLC0415

    out, err = sys.stdout, sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.version:
            out.write(
                f"attn {_version_label()} (Python {sys.version.split()[0]}, {sys.executable})\n"
            )
            return 0
        if args.command is None:
            parser.print_help(out)
            return 2
        if args.command == "list":
            return _cmd_list(args, out)
        if args.command == "show":
            return _cmd_show(args, out, err)
        return _cmd_doctor(args, out)
    except UsageError as exc:
        err.write(f"Error: {exc}\nTry 'attn --help' for help.\n")
        return 2
    except AttnConfigError as exc:
        err.write(f"Error: {exc}\n")
        return 2
    except AttnError as exc:
        err.write(f"Error: {exc}\n")
        return 1
    except BrokenPipeError:
        # `attn list | head`: the reader left; stop quietly, as other CLIs do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
