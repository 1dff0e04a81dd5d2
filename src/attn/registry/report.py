"""The records that discovery produces and listing, JSON and doctor render.

They are immutable (plain classes with ``__slots__``, not dataclasses, which
``attn list`` would pay for importing) and hold plain values only, so one discovery can be rendered
as a table, as JSON (:meth:`RegistryReport.to_json`) or as doctor findings
without anything being recomputed.
"""

from __future__ import annotations

from ._records import Record, final, set_field
from .errors import NOTE_CODES
from .paths import ClassPath

# Not typing.TYPE_CHECKING: listing from the discovery cache must not import
# typing. The Literal aliases below exist for the type checker, and at run time
# on first use (module __getattr__), built from the tuples that follow.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    from .controls import Controls

    Origin: TypeAlias = Literal["builtin", "plugin", "runtime"]
    BackendStatus: TypeAlias = Literal["ok", "unregistered", "broken"]
    PluginStatus: TypeAlias = Literal["used", "incompatible", "shadowed", "invalid", "disabled"]
    FindingKind: TypeAlias = Literal[
        "invalid",
        "incompatible",
        "shadowed",
        "preferred",
        "undeclared-requirement",
        "typo-group",
        "empty-metadata",
        "unreadable-metadata",
        "duplicate-metadata",
        "unmatched-selection",
        "case-collision",
        "load-failure",
        "registered-by-plugin",
    ]

__all__ = [
    "BackendRow",
    "BackendStatus",
    "Conflict",
    "DiscoveryResult",
    "Finding",
    "FindingKind",
    "Origin",
    "PluginRecord",
    "PluginStatus",
    "RegistryReport",
]

_FINDING_KINDS: tuple[FindingKind, ...] = (
    "invalid",
    "incompatible",
    "shadowed",
    "preferred",
    "undeclared-requirement",
    "typo-group",
    "empty-metadata",
    "unreadable-metadata",
    "duplicate-metadata",
    "unmatched-selection",
    "case-collision",
    "load-failure",
    "registered-by-plugin",
)

#: The values of each Literal alias, in the order the aliases list them.
_VALUES: dict[str, tuple[str, ...]] = {
    "Origin": ("builtin", "plugin", "runtime"),
    "BackendStatus": ("ok", "unregistered", "broken"),
    "PluginStatus": ("used", "incompatible", "shadowed", "invalid", "disabled"),
    "FindingKind": _FINDING_KINDS,
}

#: Kinds that are worth knowing but do not make ``doctor`` fail (defined with the codes).
NOTE_KINDS: frozenset[FindingKind] = NOTE_CODES  # type: ignore[assignment]
#: Kinds that make ``doctor`` exit 1: every other kind.
PROBLEM_KINDS: frozenset[FindingKind] = frozenset(_FINDING_KINDS) - NOTE_KINDS


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """``Origin``, ``BackendStatus``, ``PluginStatus``, ``FindingKind`` as Literal types."""
        values = _VALUES.get(name)
        if values is None:
            msg = f"module {__name__!r} has no attribute {name!r}"
            raise AttributeError(msg)
        from typing import Literal  # noqa: PLC0415 - only when an alias is asked for

        alias = Literal[values]
        globals()[name] = alias
        return alias


@final
class PluginRecord(Record):
    """One discovered entry point of a registry's group, with its verdict."""

    __slots__ = (
        "distribution",
        "distribution_key",
        "distribution_version",
        "location",
        "name",
        "path",
        "path_index",
        "reason",
        "requirements",
        "status",
        "value",
        "won_because",
    )

    name: str
    value: str
    distribution: str
    """The distribution's ``Name`` field, as written there."""
    distribution_key: str
    """The canonical (PEP 503) distribution name."""
    distribution_version: str | None
    location: str
    """The metadata folder the entry point was read from."""
    path_index: int
    requirements: tuple[str, ...]
    """The distribution's ``Requires-Dist`` entries that name the host."""
    status: PluginStatus
    reason: str | None
    path: ClassPath | None
    """The parsed value, when it is valid."""
    won_because: str | None
    """For the winner of a conflict: why it won (not in the JSON)."""

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        name: str,
        value: str,
        distribution: str,
        distribution_key: str,
        distribution_version: str | None,
        location: str,
        path_index: int,
        requirements: tuple[str, ...],
        status: PluginStatus,
        reason: str | None,
        path: ClassPath | None,
        won_because: str | None = None,
    ) -> None:
        """Hold one entry point and its verdict."""
        set_field(self, "name", name)
        set_field(self, "value", value)
        set_field(self, "distribution", distribution)
        set_field(self, "distribution_key", distribution_key)
        set_field(self, "distribution_version", distribution_version)
        set_field(self, "location", location)
        set_field(self, "path_index", path_index)
        set_field(self, "requirements", requirements)
        set_field(self, "status", status)
        set_field(self, "reason", reason)
        set_field(self, "path", path)
        set_field(self, "won_because", won_because)

    @property
    def origin_label(self) -> str:
        """``dist version``, as messages name a distribution."""
        if self.distribution_version is None:
            return self.distribution
        return f"{self.distribution} {self.distribution_version}"

    def to_json(self) -> dict[str, object]:
        """The row of ``plugins`` in ``attn list --json``."""
        return {
            "name": self.name,
            "value": self.value,
            "distribution": self.distribution,
            "distribution_version": self.distribution_version,
            "status": self.status,
            "reason": self.reason,
        }


@final
class Finding(Record):
    """Something about the environment that a user should know, with its fix."""

    __slots__ = ("fix", "kind", "message", "subject")

    kind: FindingKind
    subject: str
    """The backend or distribution the finding is about."""
    message: str
    fix: str

    def __init__(self, kind: FindingKind, subject: str, message: str, fix: str) -> None:
        """Hold one finding and its fix."""
        set_field(self, "kind", kind)
        set_field(self, "subject", subject)
        set_field(self, "message", message)
        set_field(self, "fix", fix)

    @property
    def is_problem(self) -> bool:
        """Whether this finding makes ``doctor`` fail."""
        return self.kind in PROBLEM_KINDS


@final
class BackendRow(Record):
    """One backend in effect in a registry."""

    __slots__ = (
        "available",
        "default_path",
        "distribution",
        "distribution_version",
        "loaded_available",
        "missing",
        "name",
        "origin",
        "overridden",
        "path",
        "reason",
        "registered_by",
        "requires",
        "status",
    )

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
    registered_by: str | None
    """For a runtime registration, the module that made it."""
    missing: tuple[str, ...]
    """The entries of :attr:`requires` that are not installed."""
    loaded_available: bool | None
    """With ``--load``: availability as the imported class reports it (plugins too).

    Not in the JSON, where ``--load`` changes only ``status`` and ``reason``.
    """

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        name: str,
        path: str | None,
        default_path: str | None,
        origin: Origin,
        overridden: bool,
        distribution: str | None,
        distribution_version: str | None,
        status: BackendStatus,
        reason: str | None,
        available: bool | None,
        requires: tuple[str, ...],
        registered_by: str | None = None,
        missing: tuple[str, ...] = (),
        loaded_available: bool | None = None,
    ) -> None:
        """Hold one backend's row."""
        set_field(self, "name", name)
        set_field(self, "path", path)
        set_field(self, "default_path", default_path)
        set_field(self, "origin", origin)
        set_field(self, "overridden", overridden)
        set_field(self, "distribution", distribution)
        set_field(self, "distribution_version", distribution_version)
        set_field(self, "status", status)
        set_field(self, "reason", reason)
        set_field(self, "available", available)
        set_field(self, "requires", requires)
        set_field(self, "registered_by", registered_by)
        set_field(self, "missing", missing)
        set_field(self, "loaded_available", loaded_available)

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


@final
class RegistryReport(Record):
    """Everything known about one registry: backends in effect, plugins, findings."""

    __slots__ = (
        "backends",
        "disable_variable",
        "findings",
        "group",
        "host",
        "host_version",
        "misgrouped",
        "noun",
        "plugins",
        "plugins_disabled",
        "registry",
        "unreadable",
    )

    registry: str
    group: str
    noun: str
    backends: tuple[BackendRow, ...]
    plugins: tuple[PluginRecord, ...]
    findings: tuple[Finding, ...]
    plugins_disabled: bool
    """Discovery was turned off (``<PREFIX>_DISABLE_PLUGINS``)."""
    disable_variable: str
    host: str | None
    """The host distribution's name (``attn``), which provides the built-ins."""
    host_version: str | None
    """The installed host distribution's version, if its metadata was found."""
    misgrouped: tuple[tuple[str, str, str], ...]
    """``(name, distribution label, group)`` declared in a group that looks like a typo."""
    unreadable: tuple[Finding, ...]
    """Metadata that could not be read at all (also among :attr:`findings`)."""

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        registry: str,
        group: str,
        noun: str,
        backends: tuple[BackendRow, ...],
        plugins: tuple[PluginRecord, ...],
        findings: tuple[Finding, ...],
        plugins_disabled: bool,
        disable_variable: str,
        host: str | None = None,
        host_version: str | None = None,
        misgrouped: tuple[tuple[str, str, str], ...] = (),
        unreadable: tuple[Finding, ...] = (),
    ) -> None:
        """Hold everything known about one registry."""
        set_field(self, "registry", registry)
        set_field(self, "group", group)
        set_field(self, "noun", noun)
        set_field(self, "backends", backends)
        set_field(self, "plugins", plugins)
        set_field(self, "findings", findings)
        set_field(self, "plugins_disabled", plugins_disabled)
        set_field(self, "disable_variable", disable_variable)
        set_field(self, "host", host)
        set_field(self, "host_version", host_version)
        set_field(self, "misgrouped", misgrouped)
        set_field(self, "unreadable", unreadable)

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


@final
class Conflict(Record):
    """Several distributions claim one backend name; the first one is used."""

    __slots__ = ("claimants", "name")

    name: str
    claimants: tuple[PluginRecord, ...]

    def __init__(self, name: str, claimants: tuple[PluginRecord, ...]) -> None:
        """Hold one conflict over *name*."""
        set_field(self, "name", name)
        set_field(self, "claimants", claimants)

    @property
    def within_one_distribution(self) -> bool:
        """Whether one distribution declares the name several times (no one to choose)."""
        return len({c.distribution_key for c in self.claimants}) == 1

    def preferred(self, controls: Controls) -> bool:
        """Whether ``<PREFIX>_PREFER`` decided this conflict."""
        winner, runner_up = self.claimants[0], self.claimants[1]
        return controls.preference(winner.distribution) < controls.preference(
            runner_up.distribution
        )


@final
class DiscoveryResult(Record):
    """What one discovery found for one group."""

    __slots__ = (
        "conflicts",
        "findings",
        "group",
        "host_version",
        "misgrouped",
        "plugins",
        "plugins_disabled",
        "unreadable",
    )

    group: str
    host_version: str | None
    plugins: tuple[PluginRecord, ...]
    conflicts: tuple[Conflict, ...]
    findings: tuple[Finding, ...]
    plugins_disabled: bool
    misgrouped: tuple[tuple[str, str, str], ...]
    """``(name, distribution label, group)`` of entry points declared in a group that
    looks like a typo of this one (not read; messages about an unknown name cite them)."""
    unreadable: tuple[Finding, ...]
    """What could not be read at all (the listing's note); also in :attr:`findings`."""

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        group: str,
        host_version: str | None,
        plugins: tuple[PluginRecord, ...],
        conflicts: tuple[Conflict, ...],
        findings: tuple[Finding, ...],
        plugins_disabled: bool,
        misgrouped: tuple[tuple[str, str, str], ...] = (),
        unreadable: tuple[Finding, ...] = (),
    ) -> None:
        """Hold what one discovery found."""
        set_field(self, "group", group)
        set_field(self, "host_version", host_version)
        set_field(self, "plugins", plugins)
        set_field(self, "conflicts", conflicts)
        set_field(self, "findings", findings)
        set_field(self, "plugins_disabled", plugins_disabled)
        set_field(self, "misgrouped", misgrouped)
        set_field(self, "unreadable", unreadable)

    @property
    def used(self) -> tuple[PluginRecord, ...]:
        """The entry points merged into the table."""
        return tuple(p for p in self.plugins if p.status == "used")


# -- a discovery result as plain data (what the discovery cache stores) -------


def _plugin_data(plugin: PluginRecord) -> tuple[object, ...]:
    path = None if plugin.path is None else (plugin.path.module, plugin.path.qualname)
    return (
        plugin.name,
        plugin.value,
        plugin.distribution,
        plugin.distribution_key,
        plugin.distribution_version,
        plugin.location,
        plugin.path_index,
        plugin.requirements,
        plugin.status,
        plugin.reason,
        path,
        plugin.won_because,
    )


def _finding_data(finding: Finding) -> tuple[str, str, str, str]:
    return (finding.kind, finding.subject, finding.message, finding.fix)


def result_data(result: DiscoveryResult) -> tuple[object, ...]:
    """*result* as plain tuples, strings, numbers and booleans (for :mod:`marshal`)."""
    return (
        result.group,
        result.host_version,
        tuple(_plugin_data(p) for p in result.plugins),
        tuple((c.name, tuple(_plugin_data(p) for p in c.claimants)) for c in result.conflicts),
        tuple(_finding_data(f) for f in result.findings),
        result.plugins_disabled,
        result.misgrouped,
        tuple(_finding_data(f) for f in result.unreadable),
    )


def _items(value: object, length: int | None = None) -> tuple[object, ...]:
    if type(value) is not tuple or (length is not None and len(value) != length):
        raise ValueError(value)
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise ValueError(value)
    return value


def _opt(value: object) -> str | None:
    return None if value is None else _str(value)


def _texts(value: object) -> tuple[str, ...]:
    return tuple(_str(item) for item in _items(value))


def _plugin_from(data: object) -> PluginRecord:
    (name, value, dist, key, version, location, index, requires, status, reason, path, why) = (
        _items(data, 12)
    )
    if type(index) is not int or status not in _VALUES["PluginStatus"]:
        raise ValueError(data)
    class_path = None
    if path is not None:
        module, qualname = _items(path, 2)
        class_path = ClassPath(_str(module), _str(qualname))
    return PluginRecord(
        _str(name),
        _str(value),
        _str(dist),
        _str(key),
        _opt(version),
        _str(location),
        index,
        _texts(requires),
        status,  # type: ignore[arg-type]
        _opt(reason),
        class_path,
        _opt(why),
    )


def _finding_from(data: object) -> Finding:
    kind, subject, message, fix = (_str(part) for part in _items(data, 4))
    if kind not in _FINDING_KINDS:
        raise ValueError(data)
    return Finding(kind, subject, message, fix)


def result_from(data: object) -> DiscoveryResult:
    """The result :func:`result_data` gave *data* for.

    Raises:
        ValueError: *data* is not what :func:`result_data` returns.
    """
    group, version, plugins, conflicts, findings, disabled, misgrouped, unreadable = _items(data, 8)
    if type(disabled) is not bool:
        raise ValueError(data)
    parsed_conflicts = []
    for conflict in _items(conflicts):
        name, claimants = _items(conflict, 2)
        parsed_conflicts.append(
            Conflict(_str(name), tuple(_plugin_from(c) for c in _items(claimants)))
        )
    parsed_misgrouped = [_texts(_items(item, 3)) for item in _items(misgrouped)]
    return DiscoveryResult(
        _str(group),
        _opt(version),
        tuple(_plugin_from(p) for p in _items(plugins)),
        tuple(parsed_conflicts),
        tuple(_finding_from(f) for f in _items(findings)),
        plugins_disabled=disabled,
        misgrouped=tuple(parsed_misgrouped),  # type: ignore[arg-type]
        unreadable=tuple(_finding_from(f) for f in _items(unreadable)),
    )
