"""``attn doctor [--load] [--json]``: check the environment and print a fix for each problem.

``attn doctor --against FILE`` instead compares this environment with a state
saved by ``attn state save FILE`` (or ``attn.capture_state()``) elsewhere.
"""

from __future__ import annotations

import json

from attn.registry._records import Record, set_field

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    SUMMARIES,
    Style,
    UsageError,
    group,
    plugin_output_to,
    plural,
    registries,
    version_label,
    wrap,
)

# Not typing.TYPE_CHECKING: the commands do not import typing at run time.
TYPE_CHECKING = False

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator, Sequence
    from typing import IO

    from attn.registry.discovery import DiscoveryResult
    from attn.registry.enum import BackendEnumMeta
    from attn.registry.report import Finding

#: Findings about the environment as a whole, not about one registry's group.
_GLOBAL_KINDS = frozenset(
    {"empty-metadata", "unreadable-metadata", "duplicate-metadata", "unmatched-selection"}
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``attn doctor`` and its arguments."""
    parser = sub.add_parser(
        "doctor",
        help=SUMMARIES["doctor"],
        description="Check the installed plugins and attn's environment variables; print "
        "one finding per problem with its fix. Exit 1 when a problem is found.",
    )
    parser.add_argument(
        "--load", action="store_true", help="also import every backend (runs plugin code)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object (for CI) instead of text"
    )
    parser.add_argument(
        "--against",
        metavar="FILE",
        help="instead, compare this environment with a state saved by 'attn state save FILE' "
        "('-': stdin); exit 1 when a backend resolves differently",
    )


class _Checked(Record):
    """What doctor found in one registry."""

    __slots__ = ("findings", "registry", "result")

    registry: BackendEnumMeta
    result: DiscoveryResult
    findings: tuple[Finding, ...]

    def __init__(
        self, registry: BackendEnumMeta, result: DiscoveryResult, findings: tuple[Finding, ...]
    ) -> None:
        """Hold what doctor found in *registry*."""
        set_field(self, "registry", registry)
        set_field(self, "result", result)
        set_field(self, "findings", findings)


def _load_findings(registry: BackendEnumMeta, result: DiscoveryResult) -> Iterator[Finding]:
    """Import every built-in default and every merged plugin of *registry*; report failures."""
    from attn.registry.listing import availability_problem, one_line  # noqa: PLC0415
    from attn.registry.loading import try_load  # noqa: PLC0415
    from attn.registry.report import Finding  # noqa: PLC0415
    from attn.registry.table import Entry  # noqa: PLC0415

    config = registry._attn_state.config
    for name, default in registry._attn_defaults.items():
        if default is None:
            continue
        _, exc = try_load(registry, name, None)
        if exc is not None:
            yield Finding(
                "load-failure",
                name,
                f"the built-in {config.noun} {name!r} ({default.dotted}) cannot be loaded: "
                f"{one_line(exc.detail)}",
                f"reinstall {config.host} (pip install --force-reinstall {config.host}); "
                "if that does not help, report a bug",
            )
    for plugin in result.used:
        cls, exc = try_load(registry, plugin.name, Entry.from_plugin(plugin))
        problem = availability_problem(cls) if cls is not None else None
        if exc is None and problem is None:
            continue
        what = f"cannot be loaded: {one_line(exc.detail)}" if exc else f"loads, but {problem}"
        yield Finding(
            "load-failure",
            plugin.name,
            f"{plugin.origin_label} provides {plugin.name!r} = {plugin.value!r}, which {what}",
            f"fix or uninstall {plugin.distribution}, or leave it out with "
            f"{config.env_prefix}_PLUGINS (or {config.env_prefix}_DISABLE_PLUGINS=1)",
            distribution=plugin.distribution,
            version=plugin.distribution_version,
            value=plugin.value,
            plugin_code=True,
        )


def _registration_findings(registry: BackendEnumMeta, result: DiscoveryResult) -> Iterator[Finding]:
    """Registrations plugin code made while doctor imported it, for names it does not declare."""
    from attn.registry.report import Finding  # noqa: PLC0415

    state = registry._attn_state
    config = state.config
    declared = {(p.name, p.distribution) for p in result.plugins}
    for name, entry in state.snapshot().runtime.items():
        by = entry.registered_by or ""
        if " (plugin code of " not in by:
            continue
        label = by.split(" (plugin code of ", 1)[1].rstrip(")")
        distribution = label.split(" ", 1)[0]
        if (name, distribution) in declared:
            continue
        yield Finding(
            "registered-by-plugin",
            name,
            f"plugin code of {label} registered {name!r} = {entry.path.colon!r} at import, "
            f"but {distribution} does not declare {name!r}: it replaces the {config.noun} past "
            "attn's conflict checks and controls",
            f"report it to {distribution}'s authors, and uninstall {distribution} or leave it "
            f"out with {config.env_prefix}_DISABLE_PLUGINS=1 (or {config.env_prefix}_PLUGINS "
            "naming the plugins to keep) until it is fixed",
        )


def _check(registry: BackendEnumMeta, *, load: bool) -> _Checked:
    """Run discovery for *registry* as the environment sets it, without merging or raising."""
    result = registry._attn_state.diagnose()
    findings = list(result.findings)
    if load:
        findings += _load_findings(registry, result)
        findings += _registration_findings(registry, result)
    return _Checked(registry, result, tuple(findings))


def _collect(checked: Sequence[_Checked]) -> list[tuple[Finding, str | None]]:
    """Every finding once, with the group it concerns (``None``: the whole environment)."""
    seen: set[tuple[str, str, str | None]] = set()
    collected: list[tuple[Finding, str | None]] = []
    for c in checked:
        for finding in c.findings:
            scope = None if finding.kind in _GLOBAL_KINDS else group(c.registry)
            key = (finding.kind, finding.message, scope)
            if key not in seen:
                seen.add(key)
                collected.append((finding, scope))
    return collected


def _not_imported(checked: Sequence[_Checked]) -> tuple[int, int]:
    """How many built-in and plugin backends ``--load`` would import."""
    builtin = sum(
        sum(1 for d in c.registry._attn_defaults.values() if d is not None) for c in checked
    )
    return builtin, sum(len(c.result.used) for c in checked)


def _to_json(
    checked: Sequence[_Checked], collected: Sequence[tuple[Finding, str | None]], *, load: bool
) -> dict[str, object]:
    builtin, plugin = (0, 0) if load else _not_imported(checked)
    return {
        "attn_version": version_label(),
        "loaded": load,
        "plugins_disabled": all(c.result.plugins_disabled for c in checked),
        "groups": [group(c.registry) for c in checked],
        "plugin_entry_points": sum(len(c.result.plugins) for c in checked),
        "not_imported": {"builtin": builtin, "plugin": plugin},
        "problems": sum(1 for f, _ in collected if f.is_problem),
        "notes": sum(1 for f, _ in collected if not f.is_problem),
        "findings": [
            {
                "severity": "problem" if finding.is_problem else "note",
                "kind": finding.kind,
                "group": scope,
                "subject": finding.subject,
                "message": finding.message,
                "fix": finding.fix,
            }
            for verdict in (True, False)
            for finding, scope in collected
            if finding.is_problem is verdict
        ],
    }


def _against(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Compare this environment with the state saved in ``--against``; print the verdict."""
    from attn.registry.errors import StateMismatchError  # noqa: PLC0415
    from attn.registry.workers import apply_state  # noqa: PLC0415

    from .state import load, registries_label  # noqa: PLC0415

    if args.load or args.json:
        msg = "--against compares with a saved state; it cannot be combined with --load or --json"
        raise UsageError(msg, "attn doctor")
    path = args.against
    state = load(path, "attn doctor")
    registries()  # declare attn's own registries, as a worker importing attn does
    try:
        with plugin_output_to(err):
            apply_state(state)
    except StateMismatchError as exc:
        out.write(f"{exc}\n")
        out.write(f"attn doctor: this environment differs from the state in {path}.\n")
        return EXIT_PROBLEM
    backends = sum(len(r.backends) for r in state.registries)
    out.write(
        f"attn doctor: this environment resolves all {plural(backends, 'backend')} of "
        f"{registries_label(len(state.registries))} like the state in {path}.\n"
    )
    return EXIT_OK


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print every finding with its fix and a summary; return the exit code."""
    if args.against is not None:
        return _against(args, out, err)
    with plugin_output_to(err):
        checked = [_check(r, load=args.load) for r in registries()]
    collected = _collect(checked)
    problems = [(f, s) for f, s in collected if f.is_problem]
    notes = [(f, s) for f, s in collected if not f.is_problem]
    status = EXIT_PROBLEM if problems else EXIT_OK
    if args.json:
        # One write: json.dump writes each token, one system call apiece when
        # stdout is unbuffered (PYTHONUNBUFFERED=1, as many container images set).
        out.write(json.dumps(_to_json(checked, collected, load=args.load), indent=2) + "\n")
        return status
    style = Style(out)
    for verdict, items in (("problem", problems), ("note", notes)):
        for finding, scope in items:
            where = f", {scope}" if scope else ""
            out.write(
                wrap(
                    f"{style.word(verdict)} ({finding.kind}{where}): {finding.message}",
                    "    ",
                    first="",
                )
                + "\n"
                + wrap(f"fix: {finding.fix}", "    ", first="  ")
                + "\n"
            )
    controls = checked[0].registry._attn_state.controls()
    if all(c.result.plugins_disabled for c in checked):
        out.write(
            f"Plugins are disabled ({controls.disable_variable} is set): no plugin was checked.\n"
        )
    if not args.load:
        builtin, plugin = _not_imported(checked)
        out.write(
            f"Not imported: {builtin} built-in and {plural(plugin, 'plugin backend')} "
            "(import failures are not checked).\n"
            "Run 'attn doctor --load' to import every backend (it runs plugin code).\n"
        )
    entry_points = sum(len(c.result.plugins) for c in checked)
    scope = f"{plural(len(checked), 'group')}, {plural(entry_points, 'plugin entry point')}"
    if args.load:
        scope += ", every backend imported"
    if problems:
        summary = f"attn doctor: {plural(len(problems), 'problem')}"
        if notes:
            summary += f" and {plural(len(notes), 'note')}"
        out.write(f"{summary} ({scope}).\n")
        return status
    notes_label = f", {plural(len(notes), 'note')}" if notes else ""
    out.write(f"attn doctor: no problems found{notes_label} ({scope}).\n")
    return status
