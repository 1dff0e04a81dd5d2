"""The records that discovery produces and listing, JSON and doctor render.

They are frozen and hold plain values only, so one discovery can be rendered
as a table, as JSON (:meth:`RegistryReport.to_json`) or as doctor findings
without anything being recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias, final, get_args

if TYPE_CHECKING:
    from .paths import ClassPath

__all__ = [
    "BackendRow",
    "BackendStatus",
    "Finding",
    "FindingKind",
    "Origin",
    "PluginRecord",
    "PluginStatus",
    "RegistryReport",
]

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

#: Kinds that are worth knowing but do not make ``doctor`` fail.
NOTE_KINDS: frozenset[FindingKind] = frozenset({"case-collision", "preferred"})
#: Kinds that make ``doctor`` exit 1: every other kind.
PROBLEM_KINDS: frozenset[FindingKind] = frozenset(get_args(FindingKind)) - NOTE_KINDS


@final
@dataclass(frozen=True, slots=True)
class PluginRecord:
    """One discovered entry point of a registry's group, with its verdict."""

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
    won_because: str | None = None
    """For the winner of a conflict: why it won (not in the JSON)."""

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
@dataclass(frozen=True, slots=True)
class Finding:
    """Something about the environment that a user should know, with its fix."""

    kind: FindingKind
    subject: str
    """The backend or distribution the finding is about."""
    message: str
    fix: str

    @property
    def is_problem(self) -> bool:
        """Whether this finding makes ``doctor`` fail."""
        return self.kind in PROBLEM_KINDS


@final
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
    """The entries of :attr:`requires` that are not installed."""
    loaded_available: bool | None = None
    """With ``--load``: availability as the imported class reports it (plugins too).

    Not in the JSON, where ``--load`` changes only ``status`` and ``reason``.
    """

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
@dataclass(frozen=True, slots=True)
class RegistryReport:
    """Everything known about one registry: backends in effect, plugins, findings."""

    registry: str
    group: str
    noun: str
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
    """Metadata that could not be read at all (also among :attr:`findings`)."""

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
