"""Turning a registry's state into the records that listing renders."""

from __future__ import annotations

import functools
import sys

from ._records import Record, final, set_field
from .backend import same_modules
from .enum import _entry_or_default, _get_class, valid_names
from .errors import AttnError, BackendLoadError
from .loading import describe, passes_through
from .report import BackendRow, Finding, RegistryReport

# Not typing.TYPE_CHECKING: the commands do not import typing at run time.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping

    from .enum import BackendEnumMeta
    from .report import BackendStatus
    from .table import Entry

__all__ = ["build_report", "one_line"]


@final
class _Availability(Record):
    __slots__ = ("available", "missing", "problem", "requires")

    available: bool | None
    """``None``: cannot tell."""
    requires: tuple[str, ...]
    missing: tuple[str, ...]
    problem: str | None
    """Why the class's ``requires`` or ``missing_requirements()`` failed."""

    def __init__(
        self,
        available: bool | None,
        requires: tuple[str, ...] = (),
        missing: tuple[str, ...] = (),
        problem: str | None = None,
    ) -> None:
        set_field(self, "available", available)
        set_field(self, "requires", requires)
        set_field(self, "missing", missing)
        set_field(self, "problem", problem)


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


def _row(
    registry: BackendEnumMeta,
    name: str,
    *,
    load: bool,
    loads: Mapping[str, Callable[[], type]],
    before: Mapping[str, _Availability],
) -> tuple[BackendRow, Finding | None]:
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
    known = before.get(name, _UNKNOWN)
    loaded = _UNKNOWN
    finding = None
    if load and path is not None:
        try:
            loaded = _availability(loads[name]() if name in loads else _get_class(registry, name))
        except BackendLoadError as exc:
            status, reason = "broken", one_line(exc.detail)
            finding = Finding("load-failure", name, str(exc), "see the message for the fix")
        if loaded.problem is not None:
            status, reason = "broken", loaded.problem
            finding = Finding(
                "load-failure",
                name,
                f"{registry.__name__}.{name} ({path}) loads, but {loaded.problem}",
                "fix the backend class (or uninstall the plugin that provides it)",
            )
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
            available=known.available,
            requires=known.requires,
            registered_by=None if entry is None else entry.registered_by,
            missing=known.missing,
            loaded_available=loaded.available,
        ),
        finding,
    )


def _known_availability(registry: BackendEnumMeta, name: str) -> _Availability:
    entry = registry._attn_state.lookup(name)
    try:
        _entry_or_default(registry, name)
    except AttnError:
        return _UNKNOWN
    return _availability(_class_without_plugin_code(registry, name, entry))


def _load_all(
    registry: BackendEnumMeta, load: bool | Collection[str]
) -> dict[str, Callable[[], type]]:
    """Import every backend once, before any row is made.

    Plugin code may register other names while it is imported; the rows then
    show the table as it is after every import. Each value returns the class
    or raises the load failure again, without importing a second time.
    """
    outcomes: dict[str, Callable[[], type]] = {}
    for name in valid_names(registry):
        if not isinstance(load, bool) and name not in load:
            continue
        try:
            cls = _get_class(registry, name)
        except BackendLoadError as exc:
            outcomes[name] = functools.partial(_reraise, exc)
        except AttnError:
            continue  # unregistered: the row says so
        else:
            outcomes[name] = functools.partial(_same, cls)
    return outcomes


def _same(cls: type) -> type:
    return cls


def _reraise(exc: BackendLoadError) -> type:
    raise exc


def build_report(
    registry: BackendEnumMeta, *, load: bool | Collection[str] = False
) -> RegistryReport:
    """Everything listing shows about *registry*.

    With *load* true, every backend is imported and checked; with a collection
    of names, only those.
    """
    state = registry._attn_state
    result = state.ensure()
    rows = []
    findings = list(result.findings)
    # Availability as it is known without importing plugin code, before --load
    # imports anything: --load changes only status and reason.
    with same_modules():
        before = {name: _known_availability(registry, name) for name in valid_names(registry)}
    loads = _load_all(registry, load) if load else {}
    for name in valid_names(registry):
        wanted = load if isinstance(load, bool) else name in load
        row, finding = _row(registry, name, load=wanted, loads=loads, before=before)
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
