"""``attn list`` (the backends in effect, per registry) and ``attn show NAME`` (one in detail)."""

from __future__ import annotations

import json
from functools import partial
from typing import IO, TYPE_CHECKING

from attn import _version
from attn.registry.codes import READER_CODES, Code
from attn.registry.enum import BackendEnumMeta, close_matches, valid_names
from attn.registry.errors import joined
from attn.registry.listing import BackendRow, RegistryReport, build_report
from attn.registry.loading import plugin_output_to

from . import BOLD, WIDTH, Style, command, plural, selected_registries, wrap

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping, Sequence

    from attn.registry.controls import Controls
    from attn.registry.report import PluginRecord

_HEADERS = ("NAME", "ORIGIN", "FROM", "OVERRIDDEN", "STATUS", "AVAILABLE")
_MAX_NAME = 32  # a longer name has a line of its own, not a wider column
_YES = {None: "unknown", True: "yes", False: "no"}
_NO_REQUIRES = ("none declared (compatibility cannot be checked)", "unknown: metadata unread")


def _source(row: BackendRow, report: RegistryReport) -> str:
    """Where a backend in effect comes from: a distribution, or the registering module."""
    if row.origin == "builtin":
        return report.host or "attn"
    if row.origin == "runtime":
        return row.registered_by or "unknown module"
    name = row.distribution or "unknown distribution"
    return f"{name} {row.distribution_version}" if row.distribution_version else name


def _table(report: RegistryReport, style: Style, say: Callable[[str], str]) -> list[str]:
    rows, notes = [], []
    for b in report.backends:
        available = "-" if b.path is None else _YES[b.available]
        text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in _source(b, report))
        rows.append([b.name, b.origin, text, _YES[b.overridden], b.status, available])
        if b.status == "unregistered":
            how = f"{say(f'show {b.name}')} says how to register one."
            notes.append(wrap(f"{b.name}: unregistered (no built-in default); {how}", "  "))
        elif b.status == "broken" and b.reason:
            fix = f"{say('doctor --load')} says how to fix it"  # plain: colour moves no break
            note = wrap(f"{b.name} is broken: {b.reason}; {fix}", "  ")
            notes.append(note.replace("broken:", f"{style('broken')}:", 1))  # a name has no ':'
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(_HEADERS)]
    widths[0] = min(widths[0], _MAX_NAME)
    # FROM takes what the other columns leave, at least 12 characters; longer ones end in "...".
    others = sum(widths) - widths[2] + 2 * (len(_HEADERS) - 1)
    widths[2] = max(len("FROM"), min(widths[2], max(WIDTH - others, 12)))
    for r in rows:
        r[2] = r[2] if len(r[2]) <= widths[2] else r[2][: max(widths[2] - 3, 1)] + "..."

    def line(cells: Sequence[str], painted: Sequence[str]) -> str:
        if len(cells[0]) > widths[0]:  # an over-long name has a line of its own
            return painted[0] + "\n" + line(["", *cells[1:]], ["", *painted[1:]])
        padded = (p + " " * (w - len(c)) for c, p, w in zip(cells, painted, widths, strict=True))
        return "  ".join(padded).rstrip()

    head = style(f"{report.registry} (entry-point group {report.group})", BOLD)
    body = [line(r, [*r[:4], style(r[4]), r[5]]) for r in rows]
    return [head, line(_HEADERS, [style(h, BOLD) for h in _HEADERS]), *body, *notes]


def _listing(
    report: RegistryReport, controls: Controls, style: Style, say: Callable[[str], str]
) -> str:
    """*say*: the quoted command line that does its argument for this registry."""
    lines = _table(report, style, say)
    if report.plugins_disabled:  # then no plugin, typo or unreadable file either: none was read
        only = "only built-ins and runtime registrations apply."  # 99 columns with ATTN
        lines.append(wrap(f"Plugins are disabled ({report.disable_variable} is set): {only}", ""))
    elif controls.only is not None:
        selection = f"{controls.plugins_variable}={','.join(controls.only_as_written)}"
        lines.append(wrap(f"Plugins are limited to the distributions in {selection}.", ""))
    rejected = [p for p in report.plugins if p.status != "used"]
    lines += ["Plugins not in effect:"] if rejected else []
    for p in rejected:
        row = wrap(f"{p.name} = {p.value!r} from {p.origin_label}: {p.status}", "  ", "      ")
        lines.append(row.removesuffix(p.status) + style(p.status))  # plain while wrapped
        lines += [wrap(p.reason, "    ")] if p.reason else []
    if report.misgrouped:  # not this registry's plugins, but meant to be: say so here too
        lines.append(f"Not read (misspelt entry-point group, a typo of {report.group!r}):")
        for n, by, g, v in report.misgrouped:
            lines.append(wrap(f"{n} = {v!r} from {by}, in group {g!r}", "  "))
        lines.append(f"  {say('doctor')} says how to fix it.")
    if report.unreadable:
        lines.append("Metadata that cannot be read (plugins in it may be missing above):")
        lines += [wrap(f.message, "  ") for f in report.unreadable]
        lines.append(f"  {say('doctor')} says how to fix each.")
    return "\n".join(lines)


def run_list(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print the listing of the registries *args* name; return the exit code."""
    registries = selected_registries(args, *args.registry)
    reports = [build_report(r, load=args.load, output=err) for r in registries]
    controls = [r._attn_state.controls() for r in registries]
    if args.json:
        scanned = (r.host_version for r in reports if r.host == "attn" and r.host_version)
        payload = {
            "attn_version": next(scanned, None) or _version(),  # the attn discovery checked with
            # Each host's variables by name (not in the schema: consumers ignore it).
            "controls": {k: v for c in controls for k, v in c.to_json().items()},
            "registries": [r.to_json() for r in reports],
        }
        out.write(json.dumps(payload, indent=2) + "\n")  # one write; json.dump writes per token
    else:
        blocks = [
            _listing(report, c, Style(out), partial(command, args, registry))
            for registry, report, c in zip(registries, reports, controls, strict=True)
        ]
        out.write("\n\n".join(blocks) + "\n")
    broken = {  # under strict mode (of the backend's host), a backend --load finds broken
        f"{r.registry}.{row.name} ({row.path}, from {_source(row, r)})": c.strict_variable
        for r, c in zip(reports, controls, strict=True)
        for row in r.backends
        if c.strict and row.status == "broken"
    }
    if broken:
        count = f"{len(broken)} backend(s) cannot be loaded: {', '.join(broken)}. Run "
        count += f"{command(args, None, 'doctor --load')} for the fixes."
        err.write(f"Error: {'=1, '.join(dict.fromkeys(broken.values()))}=1 and {count}\n")
    return 1 if broken else 0


def _fields(fields: Mapping[str, str | None], indent: int = 2) -> list[str]:
    """``label:  value`` for each value given, aligned at column 17 and wrapped under it."""
    return [wrap(v, f"{' ' * indent + k + ':':<17}", " " * 17) for k, v in fields.items() if v]


def _kernel(row: BackendRow) -> str:
    if row.path is None:
        return "unknown until a backend is registered"
    if row.status == "broken":
        return "unknown (see status)"
    if row.available is None:
        return "unknown: attn does not import a backend's code to describe it (--load does)"
    if not row.requires and not row.missing:
        return "needs no kernel package"
    needs = [f"{p} ({'not installed' if p in row.missing else 'installed'})" for p in row.requires]
    needs += [f"{p} (missing)" for p in row.missing if p not in row.requires]  # its own check's
    return f"needs {', '.join(needs)}"


def _origin(row: BackendRow, report: RegistryReport, root: str | None) -> str:
    by = "registered by" if row.origin == "runtime" else "from"
    origin, version = f"{row.origin}, {by} {_source(row, report)}", report.host_version
    if row.origin != "builtin":
        return origin
    if version is None:  # discovery did not scan (plugins disabled): ask the metadata
        from attn.registry._metadata import installed_version  # noqa: PLC0415

        version = installed_version(report.host or "attn", root)  # the copy its code is from
    return f"{origin} {version}" if version else origin


def _claimant(p: PluginRecord, style: Style, controls: Controls, choice: bool) -> list[str]:
    by = {Code.BLOCKED: controls.block_variable, Code.NOT_SELECTED: controls.plugins_variable}
    status = style(p.status) + (f" by {by[p.code]}" if p.code in by else "")
    fields = {
        "value": repr(p.value),
        "metadata": p.location,
        "requires": ", ".join(p.requirements) or _NO_REQUIRES[p.code in READER_CODES],
        "reason": p.reason,
        "wins": p.won_because
        and p.won_because + choice * f"; {controls.prefer_variable} chooses another",
    }
    return [f"  - {p.origin_label}: {status}", *_fields(fields, 6)]


def _detail(
    report: RegistryReport, registry: BackendEnumMeta, style: Style, args: argparse.Namespace
) -> str | None:
    name = args.name
    row = next((b for b in report.backends if b.name == name), None)
    claimants = [p for p in report.plugins if p.name == name]
    if row is None and not claimants:
        return None
    no = "has no built-in default" if name in registry._attn_defaults else "is not a built-in"
    default = f"{row.default_path} (built-in)" if row and row.default_path else f"none: {name} {no}"
    controls = registry._attn_state.controls()
    if row is None:
        fix = f"{command(args, registry, 'doctor')} says how to fix it"
        if all(p.status == "disabled" for p in claimants):  # doctor checks none of them
            from attn.registry.discovery import held_back  # noqa: PLC0415 - show only

            h, v = registry._attn_state.config.host, report.host_version  # the first usable one
            why, first = max(((held_back(p, h, v), p) for p in claimants), key=lambda w: not w[0])
            bad = {f.subject for f in report.findings if f.kind is Code.UNMATCHED_SELECTION}
            fix = f"let in, {first.origin_label} would be rejected too: {why}" if why else ""
            fix = fix or f"{controls.letting_in(first.distribution, bad)} to use it"
        fields = {"status": f"not in effect: no claimant is used; {fix}", "default": default}
    else:
        status = style(row.status) + (f": {row.reason}" if row.reason else "")
        if row.status == "ok" and not args.load and row.origin == "plugin":
            load = command(args, registry, f"show {name} --load")
            status += f" (not imported: {load} imports and checks it)"
        elif row.status == "broken":  # its fix is a finding of doctor --load
            status += f"; {command(args, registry, 'doctor --load')} says how to fix it"
        fields = {
            "path": row.path or "none: not registered",
            "origin": _origin(row, report, registry._attn_state.config.host_root),
            "default": default,
            "overridden": "yes" if row.overridden else "no",
            "status": status,
            "kernel": _kernel(row),
        }
    if report.plugins_disabled:  # no entry point read: claimants is empty
        fields["claimants"] = f"not read: {report.disable_variable} is set"
    elif claimants:
        count = plural(len(claimants), "entry point")
        fields["claimants"] = f"{count} named {name!r} in {report.group}"
    else:
        fields["claimants"] = f"none: no plugin declares {name!r}"
    for _, by, g, v in (m for m in report.misgrouped if m[0] == name):  # doctor: typo-group
        fields["claimants"] += f"; not read: {by} declares it ({v!r}) in {g!r}, a typo of the group"
    head = style(f"{name} in {report.registry} (entry-point group {report.group})", BOLD)
    choice = len({p.distribution_key for p in claimants}) > 1  # else ATTN_PREFER has none
    rows = (line for p in claimants for line in _claimant(p, style, controls, choice))
    return "\n".join([head, *_fields(fields), *rows])


def run_show(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print the backend *args* names in every registry that has it; return the exit code."""
    name, registries = args.name, selected_registries(args)
    with plugin_output_to(err):
        reports = [build_report(r, load=(name,) if args.load else False) for r in registries]
    blocks = [_detail(rep, r, Style(out), args) for r, rep in zip(registries, reports, strict=True)]
    if any(blocks):
        out.write("\n\n".join(filter(None, blocks)) + "\n")
        return 0
    message = f"Error: unknown backend {name!r} in {joined([r.registry for r in reports], 'or')}.\n"
    typos = [(r, label, g, v) for r in reports for n, label, g, v in r.misgrouped if n == name]
    for r, label, g, v in typos:
        message += f"{name!r} = {v!r} is declared by {label} in entry-point group {g!r}, which "
        message += f"looks like a typo of {r.group!r}; attn does not read that group.\n"
    names = [row.name for r in reports for row in r.backends + r.plugins]
    if others := [r for r in args.known if r not in registries and name in valid_names(r)]:
        message += f"{name!r} is a backend of {', '.join(r.__name__ for r in others)}: "
        message += f"{command(args, others[0], f'show {name}')} shows it.\n"  # every one with it
    elif not typos and (close := close_matches(name, names, cutoff=0.6)):  # typos say where
        message += f"Did you mean {joined([repr(c) for c in close], 'or')}?\n"
    if off := {r.disable_variable for r in reports if r.plugins_disabled}:  # doctor checks none
        fix = f"Plugins are disabled by {', '.join(sorted(off))}; unset it to use installed plugins"
    else:
        doctor = command(args, registries[0] if len(registries) == 1 else None, "doctor")
        fix = f"{doctor} checks the installed plugins and says how to fix what it finds"
    err.write(f"{message}{fix}.\n")
    return 1
