"""Turning a registry's state into the records that listing renders."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .enum import _entry_or_default, _get_class, valid_names
from .errors import AttnError, BackendLoadError
from .report import BackendRow, BackendStatus, Finding, RegistryReport

if TYPE_CHECKING:
    from .enum import BackendEnumMeta
    from .table import Entry

__all__ = ["build_report", "one_line"]


def _availability(cls: type | None) -> tuple[bool | None, tuple[str, ...], tuple[str, ...]]:
    """``(available, requires, missing)`` of a backend class; ``None``: cannot tell."""
    if cls is None:
        return None, (), ()
    requires = tuple(str(r) for r in getattr(cls, "requires", ()) or ())
    check = getattr(cls, "missing_requirements", None)
    if not callable(check):
        return None, requires, ()
    try:
        missing = tuple(str(r) for r in check())
    except Exception:  # noqa: BLE001 - a failing check means "cannot tell"
        return None, requires, ()
    return not missing, requires, missing


def one_line(text: str) -> str:
    """*text* on one line: its lines joined with spaces, blank ones dropped."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _class_without_plugin_code(
    registry: BackendEnumMeta, name: str, entry: Entry | None
) -> type | None:
    """The backend class, if it can be had without running plugin code."""
    if entry is not None and entry.origin == "plugin":
        return None
    if entry is not None and entry.path.module not in sys.modules:
        return None  # a runtime registration whose module nobody imported yet
    try:
        return _get_class(registry, name)
    except AttnError:
        return None


def _row(registry: BackendEnumMeta, name: str, *, load: bool) -> tuple[BackendRow, Finding | None]:
    state = registry._attn_state
    entry = state.lookup(name)
    default = registry._attn_defaults.get(name)
    builtin = name in registry._attn_defaults
    status: BackendStatus = "ok"
    reason: str | None = None
    path: str | None
    try:
        _, effective = _entry_or_default(registry, name)
        path = effective.dotted
    except AttnError as exc:
        path = None
        status, reason = "unregistered", str(exc)
    # Availability first: importing the class below must not change it, since
    # --load changes only status and reason.
    cls = None if path is None else _class_without_plugin_code(registry, name, entry)
    available, requires, missing = _availability(cls)
    finding = None
    if load and path is not None:
        try:
            _get_class(registry, name)
        except BackendLoadError as exc:
            status, reason = "broken", one_line(exc.detail)
            finding = Finding("load-failure", name, str(exc), "see the message for the fix")
    origin = "builtin" if entry is None else entry.origin
    return (
        BackendRow(
            name=name,
            path=path,
            default_path=None if default is None else default.dotted,
            origin=origin,
            overridden=(entry is not None)
            if builtin
            else (entry is not None and origin == "runtime"),
            distribution=None if entry is None else entry.distribution,
            distribution_version=None if entry is None else entry.version,
            status=status,
            reason=reason,
            available=available,
            requires=requires,
            registered_by=None if entry is None else entry.registered_by,
            missing=missing,
        ),
        finding,
    )


def build_report(registry: BackendEnumMeta, *, load: bool = False) -> RegistryReport:
    """Everything listing shows about *registry*; with *load*, import every backend."""
    state = registry._attn_state
    result = state.ensure()
    rows = []
    findings = list(result.findings)
    for name in valid_names(registry):
        row, finding = _row(registry, name, load=load)
        rows.append(row)
        if finding is not None:
            findings.append(finding)
    config = state.config
    return RegistryReport(
        registry=config.registry,
        group=config.group,
        noun=config.noun,
        backends=tuple(rows),
        plugins=result.plugins,
        findings=tuple(findings),
        plugins_disabled=result.plugins_disabled,
        disable_variable=f"{config.env_prefix}_DISABLE_PLUGINS",
        host=config.host,
        host_version=result.host_version,
    )
