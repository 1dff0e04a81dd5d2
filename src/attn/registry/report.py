"""The records of one discovery, rendered as a table, JSON or findings, and cached as tuples."""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .codes import NOTE_CODES, Code
from .errors import ClassPath

if TYPE_CHECKING:
    from dataclasses import dataclass as _record  # what the records are to type checkers
else:  # frozen=True, slots=True: with _Fields, which makes them frozen
    _record = lambda **_: dataclass(init=False, repr=False, eq=False, slots=True)  # noqa: E731

Origin: TypeAlias = Literal["builtin", "plugin", "runtime"]
PluginStatus: TypeAlias = Literal["used", "incompatible", "shadowed", "invalid", "disabled"]


class _Fields:
    """The methods dataclass() compiles for each frozen record class, written once (3.2 ms)."""

    __slots__ = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        names, n = [f.name for f in fields(self)], len(args)  # type: ignore[arg-type]
        values = {f.name: f.default for f in fields(self) if f.default is not MISSING}  # type: ignore[arg-type]
        values |= {**dict(zip(names, args, strict=False)), **kwargs}
        if n > len(names) or kwargs.keys() & names[:n] or values.keys() != {*names}:
            raise TypeError(f"{type(self).__name__}{tuple(names)} given {args} and {kwargs}")
        for name in names:
            object.__setattr__(self, name, values[name])
        getattr(self, "__post_init__", lambda: None)()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), self._values()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))  # type: ignore[arg-type]

    def __repr__(self) -> str:
        pairs = (f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))  # type: ignore[arg-type]
        return f"{type(self).__qualname__}({', '.join(pairs)})"

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if type(other) is type(self) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())


@_record(frozen=True, slots=True)
class PluginRecord(_Fields):
    """One discovered entry point of a registry's group, with its verdict."""

    name: str
    value: str
    distribution: str  # its Name field, as written there
    distribution_key: str  # the canonical (PEP 503) name
    distribution_version: str | None
    location: str  # the metadata folder the entry point was read from
    path_index: int
    requirements: tuple[str, ...]  # the Requires-Dist entries that name the host
    status: PluginStatus
    reason: str | None
    path: ClassPath | None  # the parsed value, when it is valid
    won_because: str | None = None  # for the winner of a conflict, why it won
    code: Code | None = None  # what reason says, as a code (None on a used row)

    @property
    def origin_label(self) -> str:
        """``dist version``, as messages name a distribution."""
        version = self.distribution_version
        return self.distribution if version is None else f"{self.distribution} {version}"

    def about(self, group: str) -> tuple[str, str | None, str, str]:
        """The distribution, version, group and value a finding about this entry point holds."""
        return self.distribution, self.distribution_version, group, self.value

    def to_json(self) -> dict[str, object]:
        """The row of ``plugins`` in ``attn list --json``."""
        keys = ("name", "value", "distribution", "distribution_version", "status", "reason")
        return {key: getattr(self, key) for key in keys}


@_record(frozen=True, slots=True)
class Finding(_Fields):
    """Something about the environment that a user should know, with its fix."""

    kind: Code
    subject: str  # the backend or distribution the finding is about
    message: str
    fix: str
    distribution: str | None = None
    version: str | None = None  # of distribution
    group: str | None = None  # the entry-point group concerned
    value: str | None = None  # the entry point's value or the class path concerned
    plugin_code: bool = False  # whether plugin code did it (raised at import, registered)

    @property
    def is_problem(self) -> bool:
        """Whether this finding makes ``doctor`` fail."""
        return self.kind not in NOTE_CODES


@_record(frozen=True, slots=True)
class Conflict(_Fields):
    """Several distributions claim one backend name; the first one is used."""

    name: str
    claimants: tuple[PluginRecord, ...]


@_record(frozen=True, slots=True)
class DiscoveryResult(_Fields):
    """What one discovery found for one group."""

    group: str
    host_version: str | None
    plugins: tuple[PluginRecord, ...]
    conflicts: tuple[Conflict, ...]
    findings: tuple[Finding, ...]
    plugins_disabled: bool = False
    misgrouped: tuple[tuple[str, str, str, str], ...] = ()  # (name, dist label, typo, value)
    unreadable: tuple[Finding, ...] = ()  # what could not be read at all; also in findings

    @property
    def used(self) -> tuple[PluginRecord, ...]:
        """The entry points merged into the table."""
        return tuple(p for p in self.plugins if p.status == "used")


def plain(value: object) -> Any:  # noqa: ANN401 - tuples nested as deep as the records
    """*value* as the cache stores it: a record as the tuple of its fields, a code as text."""
    if isinstance(value, Code):
        return value.value  # marshal stores plain strings, not the str subclass
    if isinstance(value, _Fields):  # a discovery record
        value = value._values()
    return tuple(map(plain, value)) if isinstance(value, tuple) else value  # or a Record


def _plugin_from(data: tuple[Any, ...]) -> PluginRecord:
    record, path, code = PluginRecord(*data), data[10], data[12]
    return replace(record, path=path and ClassPath(*path), code=code and Code(code))


def result_from(data: tuple[Any, ...]) -> DiscoveryResult:
    """The discovery result that `plain` made *data* of (a cached outcome's result)."""
    group, version, plugins, conflicts, findings, disabled, misgrouped, unreadable = data
    return DiscoveryResult(
        *(group, version, tuple(map(_plugin_from, plugins))),
        tuple(Conflict(name, tuple(map(_plugin_from, c))) for name, c in conflicts),
        *(tuple(Finding(Code(kind), *f) for kind, *f in findings), disabled, misgrouped),
        tuple(Finding(Code(kind), *f) for kind, *f in unreadable),
    )
