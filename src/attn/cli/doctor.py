"""``attn doctor [--load] [--json]``: check the environment and print a fix for each problem.

``attn doctor --against FILE`` instead compares this environment with a state
saved by ``attn state save FILE`` (or ``attn.capture_state()``) elsewhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn.registry.errors import Code, StateMismatchError
from attn.registry.listing import availability_problem, one_line
from attn.registry.loading import try_load
from attn.registry.report import Finding
from attn.registry.table import Entry
from attn.registry.workers import apply_state

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
from .state import load, registries_label

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator, Sequence
    from typing import IO

    from attn.registry.discovery import DiscoveryResult
    from attn.registry.enum import BackendEnumMeta

#: Where a finding is shown: these are about the environment as a whole, every
#: other one about one registry's group (whether it is a problem or a note is
#: :data:`attn.registry.errors.NOTE_CODES`'s to say).
_ENVIRONMENT_WIDE = frozenset(
    {
        Code.EMPTY_METADATA,
        Code.UNREADABLE_METADATA,
        Code.DUPLICATE_METADATA,
        Code.NON_PLUGIN_COPY,
        Code.UNMATCHED_SELECTION,
    }
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


@dataclass(frozen=True, slots=True)
class _Checked:
    """What doctor found in one registry."""

    registry: BackendEnumMeta
    result: DiscoveryResult
    findings: tuple[Finding, ...]


def _load_findings(registry: BackendEnumMeta, result: DiscoveryResult) -> Iterator[Finding]:
    """Import every built-in default and every merged plugin of *registry*; report failures."""
    state = registry._attn_state
    config, block = state.config, state.controls().block_variable
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
            f"fix or uninstall {plugin.distribution}, or block it with "
            f"{block}={plugin.distribution}",
            distribution=plugin.distribution,
            version=plugin.distribution_version,
            value=plugin.value,
            plugin_code=True,
        )


def _registration_findings(registry: BackendEnumMeta, result: DiscoveryResult) -> Iterator[Finding]:
    """Registrations plugin code made while doctor imported it, for names it does not declare."""
    state = registry._attn_state
    noun, block = state.config.noun, state.controls().block_variable
    declared = {(p.name, p.distribution) for p in result.plugins}
    for name, entry in state.snapshot().runtime.items():
        distribution = entry.plugin_distribution
        if distribution is None or (name, distribution) in declared:
            continue
        yield Finding(
            "registered-by-plugin",
            name,
            f"plugin code of {entry.plugin_label} registered {name!r} = {entry.path.colon!r} at "
            f"import, but {distribution} does not declare {name!r}: it replaces the {noun} "
            "past attn's conflict checks and controls",
            f"report it to {distribution}'s authors, and uninstall {distribution} or block it "
            f"with {block}={distribution} until it is fixed",
            distribution=distribution,
            version=entry.plugin_version,
            value=entry.path.colon,
            plugin_code=True,
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
    """Every finding once, problems first, with its group (``None``: the whole environment)."""
    collected: dict[tuple[str, str, str | None], tuple[Finding, str | None]] = {}
    for c in checked:
        for finding in c.findings:
            scope = None if finding.kind in _ENVIRONMENT_WIDE else group(c.registry)
            collected.setdefault((finding.kind, finding.message, scope), (finding, scope))
    return sorted(collected.values(), key=lambda item: not item[0].is_problem)


def _not_imported(checked: Sequence[_Checked]) -> tuple[int, int]:
    """How many built-in and plugin backends ``--load`` would import."""
    builtin = sum(d is not None for c in checked for d in c.registry._attn_defaults.values())
    return builtin, sum(len(c.result.used) for c in checked)


def _to_json(
    checked: Sequence[_Checked], collected: Sequence[tuple[Finding, str | None]], *, load: bool
) -> dict[str, object]:
    builtin, plugin = (0, 0) if load else _not_imported(checked)
    problems = sum(f.is_problem for f, _ in collected)
    return {
        "attn_version": version_label(),
        "loaded": load,
        "plugins_disabled": all(c.result.plugins_disabled for c in checked),
        "groups": [group(c.registry) for c in checked],
        "plugin_entry_points": sum(len(c.result.plugins) for c in checked),
        "not_imported": {"builtin": builtin, "plugin": plugin},
        "problems": problems,
        "notes": len(collected) - problems,
        "findings": [
            {
                "severity": "problem" if f.is_problem else "note",
                "kind": f.kind,
                "group": scope,
                "subject": f.subject,
                "message": f.message,
                "fix": f.fix,
            }
            for f, scope in collected
        ],
    }


def _against(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Compare this environment with the state saved in ``--against``; print the verdict."""
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


def _controls_note(checked: Sequence[_Checked]) -> str:
    """What the controls keep out of the check: every plugin, or the blocked ones."""
    controls = checked[0].registry._attn_state.controls()
    if all(c.result.plugins_disabled for c in checked):
        return (
            f"Plugins are disabled ({controls.disable_variable} is set): no plugin was checked.\n"
        )
    if not controls.block:
        return ""
    setting = f"{controls.block_variable}={','.join(controls.block_as_written)}"
    blocked = {
        p.origin_label: None for c in checked for p in c.result.plugins if p.code is Code.BLOCKED
    }
    if not blocked:
        return f"{setting} blocks no installed plugin.\n"
    text = f"Blocked by {setting}: {', '.join(blocked)} (disabled; their code is never imported)."
    return wrap(text, "    ", first="") + "\n"


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print every finding with its fix and a summary; return the exit code."""
    if args.against is not None:
        return _against(args, out, err)
    with plugin_output_to(err):
        checked = [_check(r, load=args.load) for r in registries()]
    collected = _collect(checked)
    problems = sum(f.is_problem for f, _ in collected)
    status = EXIT_PROBLEM if problems else EXIT_OK
    if args.json:
        # One write: json.dump writes each token, one system call apiece when
        # stdout is unbuffered (PYTHONUNBUFFERED=1, as many container images set).
        out.write(json.dumps(_to_json(checked, collected, load=args.load), indent=2) + "\n")
        return status
    style = Style(out)
    for finding, scope in collected:
        verdict = style.word("problem" if finding.is_problem else "note")
        where = f", {scope}" if scope else ""
        heading = f"{verdict} ({finding.kind}{where}): {finding.message}"
        out.write(wrap(heading, "    ", first="") + "\n")
        out.write(wrap(f"fix: {finding.fix}", "    ", first="  ") + "\n")
    out.write(_controls_note(checked))
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
    notes = len(collected) - problems
    if problems:
        also = f" and {plural(notes, 'note')}" if notes else ""
        out.write(f"attn doctor: {plural(problems, 'problem')}{also} ({scope}).\n")
    else:
        also = f", {plural(notes, 'note')}" if notes else ""
        out.write(f"attn doctor: no problems found{also} ({scope}).\n")
    return status
