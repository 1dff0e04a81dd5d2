"""What ``attn list`` shows (`build_report`) and ``attn doctor`` finds (`diagnose`)."""

from __future__ import annotations

import sys
from dataclasses import fields, replace
from typing import IO, TYPE_CHECKING, Literal, TypeAlias, cast

from .codes import Code
from .enum import BackendEnumMeta, valid_names
from .errors import AttnError, BackendLoadError, Record, describe, passes_through, reinstalling
from .loading import interface_of, missing_of, resolve, same_modules, try_load
from .report import DiscoveryResult, Finding, Origin, PluginRecord, _Fields, _record  # type: ignore[attr-defined]
from .table import Entry

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from .errors import ClassPath

BackendStatus: TypeAlias = Literal["ok", "unregistered", "broken"]
_Outcome: TypeAlias = "tuple[type | None, BackendLoadError | None]"


@_record(frozen=True, slots=True)
class BackendRow(_Fields):
    """One backend in effect in a registry."""

    name: str
    path: str | None
    default_path: str | None
    origin: Origin
    overridden: bool
    distribution: str | None
    distribution_version: str | None
    status: BackendStatus
    reason: str | None
    available: bool | None
    requires: tuple[str, ...]
    registered_by: str | None = None  # for a runtime registration, the module that made it
    missing: tuple[str, ...] = ()  # the entries of requires that are not installed

    def to_json(self) -> dict[str, object]:
        """The row of ``backends`` in ``attn list --json``: every field up to `requires`."""
        row = {f.name: getattr(self, f.name) for f in fields(self)[:-2]}
        return {**row, "requires": list(self.requires)}


@_record(frozen=True, slots=True)
class RegistryReport(_Fields):
    """Everything known about one registry: backends in effect, plugins, findings."""

    registry: str
    group: str
    backends: tuple[BackendRow, ...]
    plugins: tuple[PluginRecord, ...]
    findings: tuple[Finding, ...]
    plugins_disabled: bool  # discovery was turned off (<PREFIX>_DISABLE_PLUGINS)
    disable_variable: str
    host: str | None = None  # the host distribution's name (attn), which provides the built-ins
    host_version: str | None = None  # its installed version, if its metadata was found
    misgrouped: tuple[tuple[str, str, str, str], ...] = ()  # as DiscoveryResult.misgrouped
    unreadable: tuple[Finding, ...] = ()  # metadata that could not be read at all; in findings

    def to_json(self) -> dict[str, object]:
        """The registry object of ``attn list --json``."""
        return {
            **{key: getattr(self, key) for key in ("registry", "group", "plugins_disabled")},
            "backends": [row.to_json() for row in self.backends],
            "plugins": [row.to_json() for row in self.plugins],
            # Not in the contract's schema; consumers ignore fields they do not know.
            "unreadable": [
                {"subject": f.subject, "reason": f.message, "fix": f.fix} for f in self.unreadable
            ],
            "misgrouped": [
                {"name": n, "value": v, "from": by, "group": g} for n, by, g, v in self.misgrouped
            ],
        }


class _Availability(Record):
    available: bool | None = None  # None: cannot tell (all the defaults: nothing is known)
    requires: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    problem: str | None = None  # why the class's requires or missing_requirements() raised


def _availability(cls: type | None) -> _Availability:
    """What a backend class says about its kernel packages; unknown without a class."""
    if cls is None:
        return _Availability()
    requires, what = tuple[str, ...](), "'requires'"
    try:
        requires = tuple(str(r) for r in getattr(cls, "requires", ()) or ())
        what = "missing_requirements()"
        missing = missing_of(cls)
    except BaseException as exc:
        if passes_through(exc):
            raise
        return _Availability(None, requires, problem=f"its {what} raised {describe(exc)}")
    return _Availability(None if missing is None else not missing, requires, missing or ())


def one_line(text: str) -> str:
    """*text* on one line: its lines joined with spaces, blank ones dropped."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _known_availability(registry: BackendEnumMeta, name: str) -> _Availability:
    """Availability as known without running plugin code (nor importing a registration)."""
    try:
        entry, path = resolve(registry, name)
    except AttnError:
        return _Availability()
    if entry is not None and (entry.origin == "plugin" or path.module not in sys.modules):
        return _Availability()
    return _availability(try_load(registry, name, entry)[0])


def _row(
    registry: BackendEnumMeta, name: str, known: _Availability, outcome: _Outcome | None
) -> tuple[BackendRow, Finding | None]:
    """*name*'s row, and with *outcome* (``--load``: what importing it gave), its finding."""
    config = registry._attn_state.config
    entry, default = registry._attn_state.lookup(name), registry._attn_defaults.get(name)
    status: BackendStatus = "ok"
    reason = effective = finding = None
    try:
        effective = resolve(registry, name)[1]
    except AttnError as exc:
        status, reason = "unregistered", str(exc)
    if outcome is not None and effective is not None:
        cls, error = outcome
        if cls is not None:  # the imported class says (DESIGN 6: table and JSON agree)
            known = _availability(cls)
        plugin = entry if entry is not None and entry.origin == "plugin" else None
        if error is not None:
            reason, message, fix = one_line(error.detail), str(error), "see the message for the fix"
        elif known.problem is not None:  # the class's (without a class, error is set)
            reason = known.problem
            message = f"{config.registry}.{name} ({effective.dotted}) loads, but {reason}"
            fix = "fix the backend class (or uninstall the plugin that provides it)"
        if reason is not None:
            status = "broken"
            where = (plugin.distribution, plugin.version) if plugin else (None, None)
            about = (*where, config.group, plugin.value if plugin else effective.colon)
            finding = Finding(Code.LOAD_FAILURE, name, message, fix, *about, bool(plugin))
    origin = "builtin" if entry is None else entry.origin
    overridden = entry is not None and (name in registry._attn_defaults or origin == "runtime")
    dist, version, by = (getattr(entry, k, None) for k in ("distribution", "version", "registrant"))
    path, default_path = (p and p.dotted for p in (effective, default))
    return BackendRow(
        *(name, path, default_path, origin, overridden, dist, version, status, reason),
        *(known.available, known.requires, by, known.missing),
    ), finding


def build_report(
    registry: BackendEnumMeta,
    *,
    load: bool | Collection[str] = False,
    output: IO[str] | None = None,
) -> RegistryReport:
    """Everything listing shows about *registry*; *load* (all, or some names) imports backends.

    What plugin code prints meanwhile goes to *output* when given.
    """
    result = registry._attn_state.ensure()
    # Known before --load imports anything; the rows of classes it imports take the class's.
    with same_modules():
        known = {name: _known_availability(registry, name) for name in valid_names(registry)}

    def attempt(name: str) -> _Outcome | None:
        if not (load if isinstance(load, bool) else name in load):
            return None
        try:
            return try_load(registry, name, output=output)
        except AttnError:
            return None  # unregistered: the row says so

    # Import every backend before any row; one that plugin code registers meanwhile, again.
    tried = {n: (registry._attn_state.lookup(n), attempt(n)) for n in valid_names(registry)}
    outcomes = {n: out for n, (was, out) in tried.items() if was == registry._attn_state.lookup(n)}
    rows = [
        _row(registry, name, known.get(name, _Availability()), outcomes.get(name) or attempt(name))
        for name in valid_names(registry)
    ]
    config, findings = registry._attn_state.config, (finding for _, finding in rows if finding)
    return RegistryReport(
        *(config.registry, config.group, tuple(row for row, _ in rows), result.plugins),
        (*result.findings, *findings),
        *(result.plugins_disabled, f"{config.env_prefix}_DISABLE_PLUGINS", config.host),
        *(result.host_version, result.misgrouped, result.unreadable),
    )


def diagnose(
    registry: BackendEnumMeta, *, load: bool = False, output: IO[str] | None = None
) -> DiscoveryResult:
    """What ``doctor`` finds about *registry*, without merging, warning or raising.

    Only metadata is read, unless *load*: then every default and plugin in effect is imported
    and checked. What plugin code prints meanwhile goes to *output* when given.
    """
    result = registry._attn_state.diagnose()
    found = _load_findings(registry, result, output) if load else ()
    return replace(result, findings=(*result.findings, *found))


def _failed(cls: type | None, error: BackendLoadError | None) -> str | None:
    """What importing and checking a class found wrong (``cannot be loaded: ...``), if anything."""
    if error is not None:
        return f"cannot be loaded: {one_line(error.detail)}"
    return None if (problem := _availability(cls).problem) is None else f"loads, but {problem}"


def _load_findings(
    registry: BackendEnumMeta, result: DiscoveryResult, output: IO[str] | None
) -> Iterator[Finding]:
    """Import every built-in default and plugin in effect; report failures, and registrations."""
    state = registry._attn_state
    config, controls = state.config, state.controls()
    host = (config.host, result.host_version, config.group)  # findings about the host's own code
    try:
        interface_of(registry)
    except BaseException as exc:  # every load would fail alike: one finding, the host's fix
        if passes_through(exc):
            raise
        why = f"{config.registry}'s interface {registry._attn_interface!r} cannot be imported"
        fix = f"fix the interface= of {config.registry} ({config.host}'s code)"
        yield Finding(Code.LOAD_FAILURE, config.registry, f"{why}: {describe(exc)}", fix, *host)
        return
    for name, default in registry._attn_defaults.items():
        if default and (what := _failed(*try_load(registry, name, None, output=output))):
            message = f"the built-in {config.noun} {name!r} ({default.dotted}) {what}"
            fix = f"reinstall {config.host} ({reinstalling(config.host, result.host_version)}); "
            fix += "if that does not help, report a bug"
            yield Finding(Code.LOAD_FAILURE, name, message, fix, *host, default.colon)
    for plugin in result.used:  # a used entry point's value is a valid class path
        dist, path = plugin.distribution, cast("ClassPath", plugin.path)
        entry = Entry(plugin.name, path, "plugin", dist, plugin.distribution_version, plugin.value)
        if (what := _failed(*try_load(registry, plugin.name, entry, output=output))) is None:
            continue
        message = f"{plugin.origin_label} provides {plugin.name!r} = {plugin.value!r}, which {what}"
        fix = f"fix or uninstall {dist}, or block it with {controls.adding(dist)}"
        about = plugin.about(config.group)
        yield Finding(Code.LOAD_FAILURE, plugin.name, message, fix, *about, plugin_code=True)
    declared = {(p.name, p.distribution) for p in result.plugins}
    for name, entry in state.snapshot().runtime.items():
        if (by := entry.plugin_distribution) is None or (name, by) in declared:  # in effect
            outcome = try_load(registry, name, entry, output=output)
            if finding := _row(registry, name, _Availability(), outcome)[1]:  # list --load's
                yield finding
        else:
            message = f"plugin code of {entry.plugin_label} registered {name!r} = "
            message += f"{entry.path.colon!r} at import, but {by} does not declare {name!r}: it "
            message += f"replaces the {config.noun} past attn's conflict checks and controls"
            fix = f"report it to {by}'s authors, and uninstall {by} or block it "
            fix += f"with {controls.adding(by)} until it is fixed"
            culprit = (by, entry.plugin_version, config.group, entry.path.colon, True)
            yield Finding(Code.REGISTERED_BY_PLUGIN, name, message, fix, *culprit)
