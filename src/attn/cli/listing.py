"""``attn list [REGISTRY ...] [--json] [--load]``: the backends in effect, per registry."""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING

from attn.registry.listing import build_report

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    REGISTRY_HELP,
    SUMMARIES,
    WIDTH,
    Style,
    add_registry_option,
    available,
    fit,
    selected_registries,
    source,
    version_label,
    wrap,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from attn.registry.controls import Controls
    from attn.registry.listing import RegistryReport

_HEADERS = ("NAME", "ORIGIN", "FROM", "OVERRIDDEN", "STATUS", "AVAILABLE")
_FROM = _HEADERS.index("FROM")
_STATUS = _HEADERS.index("STATUS")
_MIN_FROM = 12
#: A longer name widens only its own row, not every row of the table.
_MAX_NAME = 32


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``attn list`` and its arguments."""
    parser = sub.add_parser(
        "list",
        help=SUMMARIES["list"],
        description="One table per registry: every backend in effect, then every "
        "discovered plugin that is not in effect, with its status and reason.",
    )
    parser.add_argument(
        "registry", nargs="*", metavar="REGISTRY", help=f"{REGISTRY_HELP} (default: all)"
    )
    add_registry_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--load", action="store_true", help="import and check every backend (runs plugin code)"
    )


def _table(report: RegistryReport, style: Style) -> list[str]:
    rows = [
        [
            row.name,
            row.origin,
            source(row, report),
            "yes" if row.overridden else "no",
            row.status,
            available(row),
        ]
        for row in report.backends
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]
    widths[0] = min(widths[0], _MAX_NAME)
    others = sum(w for i, w in enumerate(widths) if i != _FROM) + 2 * (len(_HEADERS) - 1)
    widths[_FROM] = max(len(_HEADERS[_FROM]), min(widths[_FROM], max(WIDTH - others, _MIN_FROM)))
    for r in rows:
        r[_FROM] = fit(r[_FROM], widths[_FROM])

    def line(cells: Sequence[str], painted: Sequence[str]) -> str:
        padded = [p + " " * (w - len(c)) for c, p, w in zip(cells, painted, widths, strict=True)]
        if len(cells[0]) > widths[0]:
            # An over-long name keeps its own line; the row continues below it.
            return painted[0] + "\n" + line(["", *cells[1:]], ["", *painted[1:]])
        return "  ".join(padded).rstrip()

    lines = [line(_HEADERS, [style.bold(h) for h in _HEADERS])]
    for r in rows:
        painted = list(r)
        painted[_STATUS] = style.word(r[_STATUS])
        lines.append(line(r, painted))
    return lines


def _render(report: RegistryReport, controls: Controls, style: Style, *, root: str) -> list[str]:
    lines = [style.bold(f"{report.registry} (entry-point group {report.group})")]
    lines += _table(report, style)
    for row in report.backends:
        if row.status == "unregistered":
            lines.append(
                wrap(
                    f"{row.name}: unregistered (no built-in default); "
                    f"'{root} show {row.name}' says how to register one.",
                    "    ",
                    first="  ",
                )
            )
        elif row.status == "broken" and row.reason:
            lines.append(
                wrap(
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
    if controls.only is not None:
        selection = f"{controls.plugins_variable}={','.join(controls.only_as_written)}"
        lines.append(f"Plugins are limited to the distributions in {selection}.")
    rejected = [p for p in report.plugins if p.status != "used"]
    if rejected:
        lines.append("Plugins not in effect:")
        for p in rejected:
            lines.append(f"  {p.name} = {p.value!r} from {p.origin_label}: {style.word(p.status)}")
            if p.reason:
                lines.append(wrap(p.reason, "    "))
    if report.misgrouped:
        # Not plugins of this registry, but almost certainly meant to be: say so
        # where users look first, not only in doctor.
        lines.append(f"Not read (misspelt entry-point group, a typo of {report.group!r}):")
        lines += [
            f"  {name} from {label}, in group {group!r}" for name, label, group in report.misgrouped
        ]
        lines.append(f"  '{root} doctor' says how to fix it.")
    lines += _unreadable_note(report, root)
    return lines


def _unreadable_note(report: RegistryReport, root: str) -> list[str]:
    """The note about metadata nobody can read, pointing at doctor; empty when there is none."""
    if not report.unreadable:
        return []
    return [
        "Metadata that cannot be read (plugins in it may be missing above):",
        *(wrap(f.message, "    ", first="  ") for f in report.unreadable),
        f"  '{root} doctor' says how to fix each.",
    ]


def _attn_version(reports: Sequence[RegistryReport]) -> str:
    """The installed attn: the version the plugins were checked against, if discovery read it."""
    scanned = (r.host_version for r in reports if r.host == "attn" and r.host_version)
    return next(scanned, None) or version_label()


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print the listing of the registries *args* name; return the exit code."""
    registries = selected_registries(args, [*args.registry, *args.selected])
    reports = [build_report(r, load=args.load, output=err) for r in registries]
    controls = [r._attn_state.controls() for r in registries]
    if args.json:
        payload = {
            "attn_version": _attn_version(reports),
            # Not in the contract's schema; consumers ignore fields they do not know.
            # Each host's variables, by name.
            "controls": {k: v for c in controls for k, v in c.to_json().items()},
            "registries": [r.to_json() for r in reports],
        }
        # One write: json.dump writes each token, one system call apiece when
        # stdout is unbuffered (PYTHONUNBUFFERED=1, as many container images set).
        out.write(json.dumps(payload, indent=2) + "\n")
    else:
        style = Style(out)
        blocks = [
            "\n".join(_render(r, c, style, root=args.root))
            for r, c in zip(reports, controls, strict=True)
        ]
        out.write("\n\n".join(blocks) + "\n")
    # Under strict mode (of the backend's host), a backend --load finds broken.
    broken = {
        f"{r.registry}.{row.name}": c.strict_variable
        for r, c in zip(reports, controls, strict=True)
        if c.strict
        for row in r.backends
        if row.status == "broken"
    }
    if broken:
        variables = "=1, ".join(dict.fromkeys(broken.values()))
        err.write(
            f"Error: {variables}=1 and {len(broken)} backend(s) cannot be "
            f"loaded: {', '.join(broken)}\n"
        )
        return EXIT_PROBLEM
    return EXIT_OK
