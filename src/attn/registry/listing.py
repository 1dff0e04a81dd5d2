"""Turning a registry's state into the records that listing renders."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from .backend import same_modules
from .enum import valid_names
from .errors import AttnError, BackendLoadError, Code, describe, passes_through
from .loading import resolve, try_load
from .report import BackendRow, BackendStatus, Finding, RegistryReport

if TYPE_CHECKING:
    from collections.abc import Collection

    from .enum import BackendEnumMeta
    from .paths import ClassPath

__all__ = ["availability_problem", "build_report", "one_line"]

_Outcome = tuple[type | None, BackendLoadError | None]


@dataclass(frozen=True, slots=True)
class _Availability:
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
