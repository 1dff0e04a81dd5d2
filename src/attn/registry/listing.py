"""Turning a registry's state into the records that listing renders."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING, Literal, NamedTuple, TypeAlias

from .backend import same_modules
from .enum import valid_names
from .errors import AttnError, BackendLoadError, Code, describe, passes_through
from .loading import resolve, try_load
from .report import Finding, PluginRecord, replace_fields
from .table import Entry

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

    from .enum import BackendEnumMeta
    from .paths import ClassPath
    from .report import DiscoveryResult, Origin

__all__ = [
    "BackendRow",
    "RegistryReport",
    "availability_problem",
    "build_report",
    "diagnose",
    "one_line",
]

_Outcome = tuple[type | None, BackendLoadError | None]
BackendStatus: TypeAlias = Literal["ok", "unregistered", "broken"]


@dataclass(frozen=True, slots=True)
class BackendRow:
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
    registered_by: str | None = None
    """For a runtime registration, the module that made it."""
    missing: tuple[str, ...] = ()
    """The entries of `requires` that are not installed."""

    replace = replace_fields

    def to_json(self) -> dict[str, object]:
        """The row of ``backends`` in ``attn list --json``."""
        return {
            "name": self.name,
            "path": self.path,
            "default_path": self.default_path,
            "origin": self.origin,
            "overridden": self.overridden,
            "distribution": self.distribution,
            "distribution_version": self.distribution_version,
            "status": self.status,
            "reason": self.reason,
            "available": self.available,
            "requires": list(self.requires),
        }


@dataclass(frozen=True, slots=True)
class RegistryReport:
    """Everything known about one registry: backends in effect, plugins, findings."""

    registry: str
    group: str
    backends: tuple[BackendRow, ...]
    plugins: tuple[PluginRecord, ...]
    findings: tuple[Finding, ...]
    plugins_disabled: bool
    """Discovery was turned off (``<PREFIX>_DISABLE_PLUGINS``)."""
    disable_variable: str
    host: str | None = None
    """The host distribution's name (``attn``), which provides the built-ins."""
    host_version: str | None = None
    """The installed host distribution's version, if its metadata was found."""
    misgrouped: tuple[tuple[str, str, str], ...] = ()
    """``(name, distribution label, group)`` declared in a group that looks like a typo."""
    unreadable: tuple[Finding, ...] = ()
    """Metadata that could not be read at all (also among `findings`)."""

    replace = replace_fields

    def to_json(self) -> dict[str, object]:
        """The registry object of ``attn list --json``."""
        return {
            "registry": self.registry,
            "group": self.group,
            "plugins_disabled": self.plugins_disabled,
            "backends": [row.to_json() for row in self.backends],
            "plugins": [row.to_json() for row in self.plugins],
            # Not in the contract's schema; consumers ignore fields they do not know.
            "unreadable": [
                {"subject": f.subject, "reason": f.message, "fix": f.fix} for f in self.unreadable
            ],
        }


class _Availability(NamedTuple):
    """Whether a backend's kernel packages are installed (an internal record)."""

    available: bool | None
    """``None``: cannot tell."""
    requires: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    problem: str | None = None
    """Why the class's ``requires`` or ``missing_requirements()`` failed."""


_UNKNOWN = _Availability(None)


def _availability(cls: type | None) -> _Availability:
    """What a backend class says about its kernel packages; unknown without a class."""
    if cls is None:
        return _UNKNOWN
    try:
        requires = tuple(str(r) for r in getattr(cls, "requires", ()) or ())
    except BaseException as exc:
        if passes_through(exc):
            raise
        return _Availability(None, problem=f"its 'requires' raised {describe(exc)}")
    check = getattr(cls, "missing_requirements", None)
    if not callable(check):
        return _Availability(None, requires)
    try:
        missing = tuple(str(r) for r in check())
    except BaseException as exc:
        if passes_through(exc):
            raise
        return _Availability(
            None, requires, problem=f"its missing_requirements() raised {describe(exc)}"
        )
    return _Availability(not missing, requires, missing)


def availability_problem(cls: type) -> str | None:
    """Why a loaded backend class cannot say whether its kernel is available, if it cannot."""
    return _availability(cls).problem


def one_line(text: str) -> str:
    """*text* on one line: its lines joined with spaces, blank ones dropped."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _known_availability(registry: BackendEnumMeta, name: str) -> _Availability:
    """Availability as known without running plugin code (nor importing a registration)."""
    try:
        entry, path = resolve(registry, name)
    except AttnError:
        return _UNKNOWN
    if entry is not None and (entry.origin == "plugin" or path.module not in sys.modules):
        return _UNKNOWN
    cls, _ = try_load(registry, name, entry)
    return _availability(cls)


def _load_finding(
    registry: BackendEnumMeta, name: str, path: ClassPath, outcome: _Outcome
) -> tuple[_Availability, str | None, Finding | None]:
    """What importing *name* gave: the class's availability, and why it is broken, if it is."""
    cls, error = outcome
    loaded = _availability(cls)
    config = registry._attn_state.config
    if error is not None:
        reason, message, fix = one_line(error.detail), str(error), "see the message for the fix"
    elif loaded.problem is not None:
        reason = loaded.problem
        message = f"{config.registry}.{name} ({path.dotted}) loads, but {reason}"
        fix = "fix the backend class (or uninstall the plugin that provides it)"
    else:
        return loaded, None, None
    entry = registry._attn_state.lookup(name)
    if entry is None or entry.origin != "plugin":
        finding = Finding(
            Code.LOAD_FAILURE, name, message, fix, group=config.group, value=path.colon
        )
    else:
        found = (entry.distribution, entry.version, config.group, entry.value)
        finding = Finding(Code.LOAD_FAILURE, name, message, fix, *found, plugin_code=True)
    return loaded, reason, finding


def _row(
    registry: BackendEnumMeta, name: str, known: _Availability, outcome: _Outcome | None
) -> tuple[BackendRow, Finding | None]:
    """*name*'s row, and with *outcome* (``--load``: what importing it gave), its finding."""
    entry = registry._attn_state.lookup(name)
    default = registry._attn_defaults.get(name)
    status: BackendStatus = "ok"
    reason = effective = None
    try:
        effective = resolve(registry, name)[1]
    except AttnError as exc:
        status, reason = "unregistered", str(exc)
    finding = None
    if outcome is not None and effective is not None:
        loaded, reason, finding = _load_finding(registry, name, effective, outcome)
        status = "ok" if reason is None else "broken"
        if outcome[0] is not None:  # the imported class says (DESIGN 6: table and JSON agree)
            known = loaded
    origin = "builtin" if entry is None else entry.origin
    row = BackendRow(
        name=name,
        path=None if effective is None else effective.dotted,
        default_path=None if default is None else default.dotted,
        origin=origin,
        overridden=entry is not None and (name in registry._attn_defaults or origin == "runtime"),
        distribution=None if entry is None else entry.distribution,
        distribution_version=None if entry is None else entry.version,
        status=status,
        reason=reason,
        available=known.available,
        requires=known.requires,
        registered_by=None if entry is None else entry.registrant,
        missing=known.missing,
    )
    return row, finding


def build_report(
    registry: BackendEnumMeta,
    *,
    load: bool | Collection[str] = False,
    output: IO[str] | None = None,
) -> RegistryReport:
    """Everything listing shows about *registry*.

    With *load* true, every backend is imported and checked; with a collection
    of names, only those. What plugin code prints meanwhile goes to *output*
    when given.
    """
    state = registry._attn_state
    result = state.ensure()

    def wanted(name: str) -> bool:
        return load if isinstance(load, bool) else name in load

    # Availability as it is known without importing plugin code, before --load
    # imports anything: the rows of classes --load imported then take the class's.
    with same_modules():
        known = {name: _known_availability(registry, name) for name in valid_names(registry)}

    def attempt(name: str) -> _Outcome | None:
        try:
            return try_load(registry, name, output=output)
        except AttnError:
            return None  # unregistered: the row says so

    # Import every backend before any row is made: plugin code may register
    # other names while it is imported, and the rows show the table after it.
    outcomes = {name: attempt(name) for name in valid_names(registry) if wanted(name)}
    rows, findings = [], list(result.findings)
    for name in valid_names(registry):
        outcome = outcomes.get(name) or (attempt(name) if wanted(name) else None)
        row, finding = _row(registry, name, known.get(name, _UNKNOWN), outcome)
        rows.append(row)
        if finding is not None:
            findings.append(finding)
    config = state.config
    return RegistryReport(
        registry=config.registry,
        group=config.group,
        backends=tuple(rows),
        plugins=result.plugins,
        findings=tuple(findings),
        plugins_disabled=result.plugins_disabled,
        disable_variable=f"{config.env_prefix}_DISABLE_PLUGINS",
        host=config.host,
        host_version=result.host_version,
        misgrouped=result.misgrouped,
        unreadable=result.unreadable,
    )


# -- doctor ---------------------------------------------------------------------------


def _load_findings(
    registry: BackendEnumMeta, result: DiscoveryResult, output: IO[str] | None
) -> Iterator[Finding]:
    """Import every built-in default and every merged plugin of *registry*; report failures."""
    state = registry._attn_state
    config, block = state.config, state.controls().block_variable
    for name, default in registry._attn_defaults.items():
        if default is None:
            continue
        _, exc = try_load(registry, name, None, output=output)
        if exc is not None:
            yield Finding(
                Code.LOAD_FAILURE,
                name,
                f"the built-in {config.noun} {name!r} ({default.dotted}) cannot be loaded: "
                f"{one_line(exc.detail)}",
                f"reinstall {config.host} (pip install --force-reinstall {config.host}); "
                "if that does not help, report a bug",
            )
    for plugin in result.used:
        cls, exc = try_load(registry, plugin.name, Entry.from_plugin(plugin), output=output)
        problem = availability_problem(cls) if cls is not None else None
        if exc is None and problem is None:
            continue
        what = f"cannot be loaded: {one_line(exc.detail)}" if exc else f"loads, but {problem}"
        yield Finding(
            Code.LOAD_FAILURE,
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
    """Registrations plugin code made while it was imported, for names it does not declare."""
    state = registry._attn_state
    noun, block = state.config.noun, state.controls().block_variable
    declared = {(p.name, p.distribution) for p in result.plugins}
    for name, entry in state.snapshot().runtime.items():
        distribution = entry.plugin_distribution
        if distribution is None or (name, distribution) in declared:
            continue
        yield Finding(
            Code.REGISTERED_BY_PLUGIN,
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


def diagnose(
    registry: BackendEnumMeta, *, load: bool = False, output: IO[str] | None = None
) -> DiscoveryResult:
    """What ``doctor`` finds about *registry*: its plugins, and every finding with its fix.

    Discovery runs as the environment sets it (``<PREFIX>_PLUGINS``,
    ``<PREFIX>_BLOCK_PLUGINS``, ...), without merging, warning or raising:
    ``<PREFIX>_STRICT`` does not stop it at the first problem. Only metadata is
    read, unless *load* is true: then every built-in default and every plugin
    in effect is imported, and each import failure (and each registration
    plugin code made at import for a name it does not declare) is a finding
    too. What plugin code prints meanwhile goes to *output* when given.

    The result's ``findings`` are `Finding`
    records (``is_problem`` tells problems from notes), its ``plugins`` every
    entry point of the registry's group with its status.
    """
    result = registry._attn_state.diagnose()
    if not load:
        return result
    found = [*_load_findings(registry, result, output), *_registration_findings(registry, result)]
    return replace(result, findings=(*result.findings, *found))
