"""``attn doctor [--load] [--json]``: check the environment and print a fix for each problem.

``attn doctor --against FILE`` instead compares this environment with a state
saved by ``attn state save FILE`` (or ``attn.capture_state()``) elsewhere.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypeAlias

from attn.registry.errors import ENVIRONMENT_CODES, Code, StateMismatchError
from attn.registry.listing import diagnose
from attn.registry.workers import apply_state

from ._common import (
    EXIT_OK,
    EXIT_PROBLEM,
    SUMMARIES,
    Style,
    UsageError,
    add_registry_option,
    plugin_output_to,
    plural,
    selected_registries,
    version_label,
    wrap,
)
from .state import load, registries_label

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO

    from attn.registry.enum import BackendEnumMeta
    from attn.registry.report import DiscoveryResult, Finding


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``attn doctor`` and its arguments."""
    parser = sub.add_parser(
        "doctor",
        help=SUMMARIES["doctor"],
        description="Check the installed plugins and the registries' environment variables; print "
        "one finding per problem with its fix. Exit 1 when a problem is found.",
    )
    add_registry_option(parser)
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


#: What doctor found in one registry.
_Checked: TypeAlias = "tuple[BackendEnumMeta, DiscoveryResult]"


def _collect(checked: Sequence[_Checked]) -> list[tuple[Finding, str | None]]:
    """Every finding once, problems first, with its group (``None``: the whole environment)."""
    collected: dict[tuple[str, str, str | None], tuple[Finding, str | None]] = {}
    for registry, result in checked:
        for finding in result.findings:
            scope = None if finding.kind in ENVIRONMENT_CODES else registry.group
            collected.setdefault((finding.kind, finding.message, scope), (finding, scope))
    return sorted(collected.values(), key=lambda item: not item[0].is_problem)


def _not_imported(checked: Sequence[_Checked]) -> tuple[int, int]:
    """How many built-in and plugin backends ``--load`` would import."""
    builtin = sum(d is not None for r, _ in checked for d in r._attn_defaults.values())
    return builtin, sum(len(result.used) for _, result in checked)


def _to_json(
    checked: Sequence[_Checked], collected: Sequence[tuple[Finding, str | None]], *, load: bool
) -> dict[str, object]:
    builtin, plugin = (0, 0) if load else _not_imported(checked)
    problems = sum(f.is_problem for f, _ in collected)
    return {
        "attn_version": version_label(),
        "loaded": load,
        "plugins_disabled": all(result.plugins_disabled for _, result in checked),
        "groups": [registry.group for registry, _ in checked],
        "plugin_entry_points": sum(len(result.plugins) for _, result in checked),
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
        raise UsageError(msg, args.prog)
    path = args.against
    state = load(path, args.prog)
    selected_registries(
        args, args.selected
    )  # declare the registries, as a worker importing them does
    try:
        with plugin_output_to(err):
            apply_state(state)
    except StateMismatchError as exc:
        out.write(f"{exc}\n")
        out.write(f"{args.prog}: this environment differs from the state in {path}.\n")
        return EXIT_PROBLEM
    backends = sum(len(r.backends) for r in state.registries)
    out.write(
        f"{args.prog}: this environment resolves all {plural(backends, 'backend')} of "
        f"{registries_label(len(state.registries))} like the state in {path}.\n"
    )
    return EXIT_OK


def _controls_note(checked: Sequence[_Checked]) -> str:
    """What each host's controls keep out of the check: every plugin, or the blocked ones."""
    text = ""
    for prefix, controls in {r.env_prefix: r._attn_state.controls() for r, _ in checked}.items():
        results = [result for r, result in checked if r.env_prefix == prefix]
        if all(result.plugins_disabled for result in results):
            text += f"Plugins are disabled ({controls.disable_variable} is set): "
            text += "no plugin was checked.\n"
            continue
        if not controls.block:
            continue
        setting = f"{controls.block_variable}={','.join(controls.block_as_written)}"
        blocked = {
            p.origin_label: None for r in results for p in r.plugins if p.code is Code.BLOCKED
        }
        if not blocked:
            text += f"{setting} blocks no installed plugin.\n"
            continue
        note = (
            f"Blocked by {setting}: {', '.join(blocked)} (disabled; their code is never imported)."
        )
        text += wrap(note, "    ", first="") + "\n"
    return text


def run(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print every finding with its fix and a summary; return the exit code."""
    if args.against is not None:
        return _against(args, out, err)
    registries = selected_registries(args, args.selected)
    with plugin_output_to(err):
        checked = [(r, diagnose(r, load=args.load)) for r in registries]
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
            f"Run '{args.prog} --load' to import every backend (it runs plugin code).\n"
        )
    entry_points = sum(len(result.plugins) for _, result in checked)
    scope = f"{plural(len(checked), 'group')}, {plural(entry_points, 'plugin entry point')}"
    if args.load:
        scope += ", every backend imported"
    notes = len(collected) - problems
    if problems:
        also = f" and {plural(notes, 'note')}" if notes else ""
        out.write(f"{args.prog}: {plural(problems, 'problem')}{also} ({scope}).\n")
    else:
        also = f", {plural(notes, 'note')}" if notes else ""
        out.write(f"{args.prog}: no problems found{also} ({scope}).\n")
    return status
