"""``attn show NAME [--registry REGISTRY ...]``: one backend in detail, with every claimant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn.registry import build_report
from attn.registry.enum import close_matches
from attn.registry.errors import Code

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    SUMMARIES,
    Style,
    add_registry_option,
    either,
    host_label,
    plugin_output_to,
    selected_registries,
    source,
    wrap,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO

    from attn.registry.controls import Controls
    from attn.registry.listing import BackendRow, RegistryReport
    from attn.registry.report import PluginRecord

_VALUE_COLUMN = 17


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``attn show`` and its arguments."""
    parser = sub.add_parser(
        "show",
        help=SUMMARIES["show"],
        description="One backend in every registry that has it: its path, origin, built-in "
        "default, kernel availability and every plugin that claims its name.",
    )
    parser.add_argument("name", metavar="NAME", help="the backend's name, e.g. FLASH_ATTN")
    add_registry_option(parser)
    parser.add_argument(
        "--load", action="store_true", help="import and check the backend (runs plugin code)"
    )


def _field(label: str, value: str, indent: int = 2) -> str:
    """``label:  value``, values aligned at `_VALUE_COLUMN` and wrapped under it."""
    first = " " * indent + f"{label + ':':<{_VALUE_COLUMN - indent}}"
    return wrap(value, " " * _VALUE_COLUMN, first=first)


def _kernel(row: BackendRow) -> str:
    if row.path is None:
        return "unknown until a backend is registered"
    if row.status == "broken":
        return "unknown: the class cannot be loaded (see status)"
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
        return f"runtime, registered by {source(row, report)}"
    if row.origin == "plugin":
        return f"plugin, from {source(row, report)}"
    return f"builtin, from {host_label(report)}"


def _claimant(p: PluginRecord, style: Style, controls: Controls) -> list[str]:
    requirement = (
        ", ".join(p.requirements)
        if p.requirements
        else "none declared (compatibility cannot be checked)"
    )
    status = style.word(p.status)
    if p.code is Code.BLOCKED:
        status += f" by {controls.block_variable}"
    elif p.code is Code.NOT_SELECTED:
        status += f" by {controls.plugins_variable}"
    lines = [
        f"  - {p.origin_label}: {status}",
        _field("value", repr(p.value), 6),
        _field("metadata", p.location, 6),
        _field("requires", requirement, 6),
    ]
    if p.reason:
        lines.append(_field("reason", p.reason, 6))
    if p.won_because:
        lines.append(
            _field("wins", f"{p.won_because}; {controls.prefer_variable} chooses another", 6)
        )
    return lines


def _render(
    report: RegistryReport,
    name: str,
    builtin: bool,
    style: Style,
    controls: Controls,
    *,
    loaded: bool,
    root: str,
) -> list[str] | None:
    row = next((b for b in report.backends if b.name == name), None)
    claimants = [p for p in report.plugins if p.name == name]
    if row is None and not claimants:
        return None
    lines = [style.bold(f"{name} in {report.registry} (entry-point group {report.group})")]
    if row is None:
        lines.append(
            _field(
                "status", f"not in effect: no claimant is used; '{root} doctor' says how to fix it"
            )
        )
    else:
        lines.append(_field("path", row.path or "none: not registered"))
        lines.append(_field("origin", _origin(row, report)))
    lines.append(_field("default", _default(row, name, builtin)))
    if row is not None:
        lines.append(_field("overridden", "yes" if row.overridden else "no"))
        status = style.word(row.status) + (f": {row.reason}" if row.reason else "")
        if row.status == "ok" and not loaded and row.origin == "plugin":
            status += f" (not imported: '{root} show {name} --load' imports and checks it)"
        lines.append(_field("status", status))
        lines.append(_field("kernel", _kernel(row)))
    if report.plugins_disabled:
        lines.append(_field("claimants", f"not read: {report.disable_variable} is set"))
    elif claimants:
        count = f"{len(claimants)} entry point{'s' if len(claimants) > 1 else ''}"
        lines.append(_field("claimants", f"{count} named {name!r} in {report.group}"))
        for p in claimants:
            lines += _claimant(p, style, controls)
    else:
        lines.append(_field("claimants", f"none: no plugin declares {name!r}"))
    return lines


def _suggestions(name: str, reports: Sequence[RegistryReport]) -> list[str]:
    names = [
        n
        for report in reports
        for n in [*(b.name for b in report.backends), *(p.name for p in report.plugins)]
    ]
    return close_matches(name, names, cutoff=0.6)


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print the backend *args* names in every registry that has it; return the exit code."""
    registries = selected_registries(args, args.selected)
    with plugin_output_to(err):
        reports = [build_report(r, load=(args.name,) if args.load else False) for r in registries]
    style = Style(out)
    blocks = []
    for registry, report in zip(registries, reports, strict=True):
        builtin = args.name in registry._attn_defaults
        controls = registry._attn_state.controls()
        lines = _render(
            report, args.name, builtin, style, controls, loaded=args.load, root=args.root
        )
        if lines is not None:
            blocks.append("\n".join(lines))
    if blocks:
        out.write("\n\n".join(blocks) + "\n")
        return EXIT_OK
    where = either([r.registry for r in reports])
    message = f"Error: unknown backend {args.name!r} in {where}.\n"
    for report in reports:
        message += "".join(
            f"{args.name!r} is declared by {label} in entry-point group {misspelt!r}, which "
            f"looks like a typo of {report.group!r}; attn does not read that group.\n"
            for name, label, misspelt in report.misgrouped
            if name == args.name
        )
    close = _suggestions(args.name, reports)
    if close:
        message += f"Did you mean {either([repr(c) for c in close])}?\n"
    message += (
        f"'{args.root} doctor' checks the installed plugins and says how to fix what it finds.\n"
    )
    err.write(message)
    return EXIT_PROBLEM
