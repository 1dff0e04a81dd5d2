"""The commands that check: ``attn doctor``, ``attn state save`` and ``attn select``."""

from __future__ import annotations

import json
import sys
import warnings
from contextlib import nullcontext
from dataclasses import asdict
from typing import IO, TYPE_CHECKING

from attn import _version
from attn.registry.codes import ENVIRONMENT_CODES, Code
from attn.registry.controls import shell_word
from attn.registry.errors import RejectedPluginWarning, SelectionError, StateMismatchError
from attn.registry.loading import plugin_output_to

from . import Style, UsageError, command, plural, selected_registries, wrap

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from attn.registry.enum import BackendEnumMeta
    from attn.registry.report import DiscoveryResult, Finding
    from attn.registry.workers import WorkerState

#: A hundred times the state of a host with a thousand backends (``--against /dev/zero`` ends).
MAX_STATE_CHARS = 64 * 1024 * 1024
#: How many lists and objects a ``--set`` value may nest (``capability=[9,0]`` nests 1).
MAX_DEPTH = 100


def _controls_note(checked: Sequence[tuple[BackendEnumMeta, DiscoveryResult]]) -> str:
    """What each host's controls keep out of the check: every plugin, or the blocked ones."""
    text = ""
    for prefix, controls in {r.env_prefix: r._attn_state.controls() for r, _ in checked}.items():
        results = [result for r, result in checked if r.env_prefix == prefix]
        groups = " or ".join(result.group for result in results)  # this host's, the ones checked
        if all(result.plugins_disabled for result in results):  # another host's may be checked
            note = f"Plugins are disabled ({controls.disable_variable} is set): no plugin in "
            text += wrap(f"{note}{groups} was checked.", "") + "\n"
        elif controls.block:
            setting = f"{controls.block_variable}={','.join(controls.block_as_written)}"
            blocked = [p.origin_label for r in results for p in r.plugins if p.code is Code.BLOCKED]
            names = ", ".join(dict.fromkeys(blocked))
            note = f"Blocked by {setting}: {names} (disabled; their code is never imported)."
            text += wrap(note if blocked else f"{setting} blocks no plugin in {groups}.", "") + "\n"
    return text


def run_doctor(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Print every finding with its fix and a summary; return the exit code."""
    if args.against is not None:
        return _against(args, out, err)
    from attn.registry.listing import diagnose  # noqa: PLC0415 - each command imports its own

    with plugin_output_to(err):
        checked = [(r, diagnose(r, load=args.load)) for r in selected_registries(args)]
    # Every finding once, problems first, with its group (None: the whole environment).
    collected: dict[tuple[str, str, str | None], tuple[Finding, str | None]] = {}
    for registry, result in checked:
        for finding in result.findings:
            scope = None if finding.kind in ENVIRONMENT_CODES else registry.group
            collected.setdefault((finding.kind, finding.message, scope), (finding, scope))
    findings = sorted(collected.values(), key=lambda item: not item[0].is_problem)
    problems = sum(f.is_problem for f, _ in findings)
    notes = len(findings) - problems
    entry_points = sum(len(result.plugins) for _, result in checked)
    builtin = plugin = 0  # what --load would import: built-in defaults, plugin backends in effect
    if not args.load:
        builtin = sum(d is not None for r, _ in checked for d in r._attn_defaults.values())
        plugin = sum(len(result.used) for _, result in checked)
    if args.json:
        document = {
            "attn_version": _version(),
            "loaded": args.load,
            "plugins_disabled": all(result.plugins_disabled for _, result in checked),
            "groups": [registry.group for registry, _ in checked],
            "plugin_entry_points": entry_points,
            "not_imported": {"builtin": builtin, "plugin": plugin},
            "problems": problems,
            "notes": notes,
            "findings": [
                {"severity": "problem" if f.is_problem else "note", "kind": f.kind, "group": scope}
                | {"subject": f.subject, "message": f.message, "fix": f.fix}
                for f, scope in findings
            ],
        }
        out.write(json.dumps(document, indent=2) + "\n")
        return 1 if problems else 0
    style = Style(out)
    for finding, scope in findings:
        where = f", {scope}" if scope else ""
        verdict = "problem" if finding.is_problem else "note"  # coloured once laid out
        text = wrap(f"{verdict} ({finding.kind}{where}): {finding.message}", "")
        out.write(f"{style(verdict)}{text[len(verdict) :]}\n")
        out.write(wrap(f"fix: {finding.fix}", "  ") + "\n")
    out.write(_controls_note(checked))
    if not args.load:
        again = command(args, None, "doctor --load")  # over the same registries
        out.write(f"Not imported: {builtin} built-in and {plural(plugin, 'plugin backend')} ")
        out.write("(import failures are not checked).\n")
        out.write(wrap(f"Run {again} to import every backend (it runs plugin code).", "") + "\n")
    scope = f"{plural(len(checked), 'group')}, {plural(entry_points, 'plugin entry point')}"
    scope += ", every backend imported" if args.load else ""
    found = plural(problems, "problem") if problems else "no problems found"
    also = f"{' and' if problems else ','} {plural(notes, 'note')}" if notes else ""
    out.write(f"{args.prog}: {found}{also} ({scope}).\n")
    return 1 if problems else 0


def _summary(state: WorkerState) -> str:
    backends = plural(sum(len(r.backends) for r in state.registries), "backend")
    return f"{backends} of {plural(len(state.registries), 'registry', 'registries')}"


def run_state(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Write the state of the registries *args* name to the file (or stdout); say so on stderr."""
    from attn.registry.workers import WorkerState, _capture  # noqa: PLC0415

    with plugin_output_to(err):
        state = WorkerState(tuple(_capture(r) for r in selected_registries(args)))
    text = json.dumps({"attn_version": _version(), **state.to_json()}, indent=2) + "\n"
    if args.file == "-":
        out.write(text)
        return 0
    try:
        with open(args.file, "w", encoding="utf-8") as handle:  # noqa: PTH123 - os-level path
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {args.file}: {exc.strerror or exc}", args.prog) from exc
    check = command(args, None, f"doctor --against {shell_word(args.file)}")  # to be pasted
    err.write(f"Saved {_summary(state)} to {args.file}; check another environment with {check}.\n")
    return 0


def _against(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Compare with the state in ``--against``, validated JSON: nothing in it runs or unpickles."""
    from attn.registry.workers import WorkerState, apply_state  # noqa: PLC0415

    if args.load or args.json:
        msg = "--against compares with a saved state; it cannot be combined with --load or --json"
        raise UsageError(msg, args.prog)
    path, name = args.against, "stdin" if args.against == "-" else args.against
    not_state = f"{name} is not a saved attn state"
    try:
        with open(path, encoding="utf-8") if path != "-" else nullcontext(sys.stdin) as handle:  # noqa: PTH123 - os-level path
            if handle is None:  # `attn doctor --against - <&-`
                raise UsageError("cannot read stdin: stdin is closed", args.prog)
            text = handle.read(MAX_STATE_CHARS + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}", args.prog) from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{not_state}: not UTF-8 text ({exc.reason})", args.prog) from exc
    if len(text) > MAX_STATE_CHARS:  # /dev/zero, or a file that is no state
        raise UsageError(f"{not_state}: longer than {MAX_STATE_CHARS:,} characters", args.prog)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise UsageError(f"{not_state}: not JSON ({exc})", args.prog) from exc
    try:
        state = WorkerState.from_json(data)
    except ValueError as exc:
        msg = f"{name} is {exc}; write it with '{args.root} state save FILE'"
        raise UsageError(msg, args.prog) from exc
    selected_registries(args)  # declare the registries, as a worker importing them does
    try:
        with plugin_output_to(err):
            apply_state(state)
    except StateMismatchError as exc:
        out.write(f"{exc}\n{args.prog}: this environment differs from the state in {name}.\n")
        return 1
    summary = _summary(state)
    out.write(f"{args.prog}: this environment resolves all {summary} like the state in {name}.\n")
    return 0


def _depth(value: object) -> int:
    value = list(value.values()) if isinstance(value, dict) else value
    return 1 + max(map(_depth, value), default=0) if isinstance(value, list) else 0


def _finite(word: str) -> float:
    if not abs(number := float(word)) < float("inf"):  # NaN, Infinity, 1e400: not JSON's
        raise ValueError(f"{word} is not a JSON number Python reads")
    return number


def parse_settings(pairs: Sequence[str], prog: str) -> dict[str, object]:
    """``KEY=VALUE`` pairs as settings, VALUE as JSON when it is JSON; a later KEY wins."""
    settings: dict[str, object] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key.isidentifier():
            raise UsageError(f"--set expects KEY=VALUE with KEY an identifier, got {pair!r}", prog)
        if key == "backend":
            raise UsageError(f"--set {pair!r}: choose the backend with --backend NAME", prog)
        try:  # NaN and Infinity are Python's, not JSON literals: strings, as written
            value = json.loads(text, parse_constant=_finite, parse_float=_finite)
            deep = _depth(value) > MAX_DEPTH
        except RecursionError:  # nested too deeply for the parser, or for _depth
            deep = True
        except ValueError:
            value, deep = text, False
        if deep:
            msg = f"--set {key}: the value is JSON nested more than {MAX_DEPTH} deep"
            raise UsageError(msg, prog)
        settings[key] = value
    return settings


def run_select(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    """Choose the backend of the registry *args* names; 0 when one is chosen, 1 when none is."""
    from attn.registry.selection import Candidate, Selection, frozen, select  # noqa: PLC0415

    settings = parse_settings(args.settings, args.prog)
    try:  # selection's own rule, before any registry is imported
        for key, value in settings.items():
            frozen(value, key)
    except TypeError as exc:  # a JSON object: no setting holds one
        raise UsageError(f"--set {exc}", args.prog) from None
    if len(registries := selected_registries(args, args.registry)) != 1:
        spelt = ("{0.__module__}:{0.__qualname__} ({0.group})", "{0.__name__} ({0.group})")
        names = ", ".join(spelt[r in args.known].format(r) for r in registries)
        raise UsageError(f"select needs one registry; name one of: {names}", args.prog)
    (registry,) = registries
    warnings.simplefilter("always", RejectedPluginWarning)  # its rows name no rejected plugin
    try:
        with plugin_output_to(err):
            outcome: Selection | SelectionError = select(registry, args.backend, **settings)
    except SelectionError as exc:
        outcome = exc
    chosen = outcome.name if isinstance(outcome, Selection) else None
    rows = [
        {"name": row.name, "origin": row.origin, "distribution": row.distribution}
        | {"distribution_version": row.version, "path": row.path, "verdict": row.verdict}
        | {"fallback": row.fallback, "reasons": [asdict(r) for r in row.reasons]}
        for row in outcome.tried
        if isinstance(row, Candidate)
    ]
    head = {"attn_version": _version(), "registry": registry.__name__, "settings": settings}
    payload = head | {"explicit": outcome.explicit, "chosen": chosen, "tried": rows}
    out.write(f"{json.dumps(payload, indent=2, default=str) if args.json else outcome}\n")
    return 0 if chosen is not None else 1
