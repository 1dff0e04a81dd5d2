"""The override table of one registry and the state object that owns it.

Each registry has exactly one :class:`RegistryState`. It holds two layers,
the entries that discovery merged (plugins) and the registrations made at
runtime, and the table in effect, which is the plugin layer with the runtime
layer on top. Lookups read the table first and fall back to the built-in
default. Writers hold one lock, so two threads that touch a registry for the
first time at once scan once and see the same table.

Every change builds a new :class:`_Layers` record and publishes it with one
assignment, so a reader (or a process forked at any moment) sees the state
before or after a change, never half of one. A forked child gets fresh locks
(:func:`os.register_at_fork`): a lock that another thread of the parent held
at the fork would otherwise stay held in the child forever.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, final

from ._cache import forget, shared_records
from .controls import Controls, read_controls
from .discovery import Conflict, DiscoveryResult, discover, scan_host
from .errors import ConflictWarning, PluginProblemError, PluginWarning

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from .paths import ClassPath
    from .report import PluginRecord

__all__ = ["Entry", "RegistryConfig", "RegistryState", "Snapshot"]

_STRICT_KINDS = frozenset({"invalid", "incompatible", "shadowed", "undeclared-requirement"})


@final
@dataclass(frozen=True, slots=True)
class RegistryConfig:
    """What a registry declares about itself (its class keywords)."""

    registry: str
    """The enum class's name."""
    group: str
    host: str
    noun: str
    env_prefix: str
    register_hint: str
    """How messages tell users to register a backend at runtime."""


@final
@dataclass(frozen=True, slots=True)
class Entry:
    """One row of the override table."""

    name: str
    path: ClassPath
    origin: Literal["plugin", "runtime"]
    distribution: str | None = None
    version: str | None = None
    value: str | None = None
    """The entry point's value, as declared (plugins only)."""
    registered_by: str | None = None
    """The module that made a runtime registration."""

    @classmethod
    def from_plugin(cls, plugin: PluginRecord) -> Entry:
        """The table entry for an entry point that discovery merged."""
        if plugin.path is None:  # pragma: no cover - discovery merges only valid ones
            msg = f"plugin {plugin.name!r} has no valid path"
            raise ValueError(msg)
        return cls(
            name=plugin.name,
            path=plugin.path,
            origin="plugin",
            distribution=plugin.distribution,
            version=plugin.distribution_version,
            value=plugin.value,
        )


@final
@dataclass(frozen=True, slots=True)
class Snapshot:
    """A copy of a registry's state at one moment; later changes do not show."""

    discovered: Mapping[str, Entry]
    runtime: Mapping[str, Entry]
    table: Mapping[str, Entry]
    result: DiscoveryResult | None
    cleared: frozenset[str] = field(default_factory=frozenset)


# os.path, not pathlib, which is a noticeable part of attn's import cost.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # noqa: PTH100, PTH120


def _outside_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside attn.

    Discovery runs below many entry points (a lookup, ``get_path``, listing),
    each at its own depth, so a fixed level would blame attn's own code.
    """
    frame = sys._getframe(1)  # the function that is about to warn
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


def _conflict_message(conflict: Conflict, group: str, controls: Controls) -> str:
    claimants = ", ".join(f"{c.origin_label} ({c.status}, {c.value!r})" for c in conflict.claimants)
    choices = " or ".join(
        f"{controls.plugins_variable}={conflict.selection_for(c)}" for c in conflict.claimants
    )
    return (
        f"{conflict.name!r} in entry-point group {group!r} is claimed by "
        f"{len(conflict.claimants)} distributions: {claimants}. "
        f"{conflict.claimants[0].distribution} wins; to choose, set {choices} "
        f"({controls.plugins_variable} lists the plugin distributions to keep), "
        "or uninstall all but one."
    )


@final
@dataclass(frozen=True, slots=True)
class _Layers:
    """The whole mutable state of a registry, replaced (never changed) at once."""

    result: DiscoveryResult | None = None
    discovered: Mapping[str, Entry] = field(default_factory=dict)
    runtime: Mapping[str, Entry] = field(default_factory=dict)
    table: Mapping[str, Entry] = field(default_factory=dict)
    cleared: frozenset[str] = frozenset()


_EMPTY = _Layers()

#: Every registry's state, so a forked child can give each a fresh lock.
_STATES: weakref.WeakSet[RegistryState] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for state in list(_STATES):
        state._lock = threading.RLock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


@final
class RegistryState:
    """The mutable state of one registry: discovery result, layers, table."""

    __slots__ = ("__weakref__", "_builtin_names", "_layers", "_lock", "_sibling_groups", "config")

    def __init__(
        self,
        config: RegistryConfig,
        builtin_names: Sequence[str],
        sibling_groups: Callable[[], Sequence[str]],
    ) -> None:
        """Create the empty, undiscovered state of one registry."""
        self.config = config
        self._builtin_names = tuple(builtin_names)
        self._sibling_groups = sibling_groups
        self._lock = threading.RLock()
        self._layers = _EMPTY
        _STATES.add(self)

    # -- discovery ------------------------------------------------------------

    def ensure(self) -> DiscoveryResult:
        """Run discovery unless it has run; return its result."""
        result = self._layers.result
        if result is not None:
            return result
        with self._lock:
            if self._layers.result is None:
                return self._discover()
            return self._layers.result

    def refresh(self) -> DiscoveryResult:
        """Run discovery again; runtime registrations are kept on top."""
        # A pip install in this process leaves finders with stale listings.
        importlib.invalidate_caches()
        with self._lock:
            return self._discover(fresh=True)

    def controls(self) -> Controls:
        """The controls as the environment sets them now."""
        return read_controls(self.config.env_prefix)

    def _discover(self, *, fresh: bool = False) -> DiscoveryResult:
        try:
            return self._merge(fresh=fresh)
        except BaseException:
            # A refresh that fails (strict mode, a bad ATTN_* value) must not
            # leave the previous result in place: every access runs discovery
            # again, and fails, until the problem is gone; it scans again, too.
            layers = self._layers
            self._layers = replace(layers, result=None)
            forget(self.config.host)
            raise

    def diagnose(self, controls: Controls | None = None, *, fresh: bool = False) -> DiscoveryResult:
        """Run the discovery pipeline for this registry and return what it found.

        Nothing is merged, warned about or raised (strict mode included): this
        is what ``doctor`` reports and what every merge starts from. The scan
        is the one the host's registries share, unless *fresh* asks for a new one.
        """
        controls = self.controls() if controls is None else controls
        host, siblings = self.config.host, self._sibling_groups()
        groups = (self.config.group, *siblings)
        records = (
            None
            if controls.disable_plugins
            else shared_records(host, groups, lambda: scan_host(host, groups), fresh=fresh)
        )
        return discover(
            group=self.config.group,
            host=host,
            controls=controls,
            builtin_names=self._builtin_names,
            sibling_groups=siblings,
            records=records,
        )

    def _merge(self, *, fresh: bool = False) -> DiscoveryResult:
        controls = self.controls()
        result = self.diagnose(controls, fresh=fresh)
        if controls.strict:
            problems = tuple(f.message for f in result.findings if f.kind in _STRICT_KINDS)
            if problems:
                listed = "\n".join(f"  - {p}" for p in problems)
                msg = (
                    f"{controls.strict_variable}=1 and the {self.config.noun} plugins in "
                    f"group {self.config.group!r} have {len(problems)} problem(s):\n{listed}\n"
                    f"Run '{self.config.host} doctor' for the fixes."
                )
                raise PluginProblemError(msg, problems=problems)
        level = _outside_stacklevel()
        for conflict in result.conflicts:
            warnings.warn(
                _conflict_message(conflict, self.config.group, controls),
                ConflictWarning,
                stacklevel=level,
            )
        for finding in result.findings:
            if finding.kind == "unmatched-selection":
                warnings.warn(f"{finding.message}; {finding.fix}", PluginWarning, stacklevel=level)
        discovered = {p.name: Entry.from_plugin(p) for p in result.used}
        runtime = self._layers.runtime
        self._layers = _Layers(result, discovered, runtime, {**discovered, **runtime})
        return result

    # -- the table ------------------------------------------------------------

    def lookup(self, name: str) -> Entry | None:
        """The table's entry for *name*, if any (runs discovery first)."""
        self.ensure()
        return self._layers.table.get(name)

    def names(self) -> tuple[str, ...]:
        """Names in the table, in insertion order (runs discovery first)."""
        self.ensure()
        return tuple(self._layers.table)

    def register(self, entry: Entry) -> None:
        """Put a runtime registration on top of whatever the table had."""
        with self._lock:
            self.ensure()
            layers = self._layers
            self._layers = replace(
                layers,
                runtime={**layers.runtime, entry.name: entry},
                table={**layers.table, entry.name: entry},
                cleared=layers.cleared - {entry.name},
            )

    def clear(self, name: str) -> bool:
        """Drop *name*'s entry from both layers until the next refresh."""
        with self._lock:
            self.ensure()
            layers = self._layers
            runtime = dict(layers.runtime)
            runtime.pop(name, None)
            table = dict(layers.table)
            had = table.pop(name, None) is not None
            self._layers = replace(
                layers, runtime=runtime, table=table, cleared=layers.cleared | {name}
            )
            return had

    def was_cleared(self, name: str) -> bool:
        """Whether *name* was dropped with :meth:`clear` since the last discovery."""
        return name in self._layers.cleared

    def snapshot(self) -> Snapshot:
        """A copy of the state; mutating the registry later does not change it."""
        layers = self._layers  # published whole: no lock needed to read it
        return Snapshot(
            discovered=MappingProxyType(dict(layers.discovered)),
            runtime=MappingProxyType(dict(layers.runtime)),
            table=MappingProxyType(dict(layers.table)),
            result=layers.result,
            cleared=layers.cleared,
        )

    def invalidate(self) -> None:
        """Forget the discovery result: the next access scans and discovers again (runtime kept)."""
        with self._lock:
            forget(self.config.host)
            self._layers = replace(self._layers, result=None)

    def restore(self, snapshot: Snapshot) -> None:
        """Put back the state *snapshot* recorded: discovery result, layers and clears."""
        with self._lock:
            self._layers = _Layers(
                snapshot.result,
                dict(snapshot.discovered),
                dict(snapshot.runtime),
                dict(snapshot.table),
                snapshot.cleared,
            )

    def reset(self) -> None:
        """Forget discovery, the host's shared scan and every runtime registration (for tests)."""
        forget()
        with self._lock:
            self._layers = _EMPTY

    @property
    def discovered_yet(self) -> bool:
        """Whether discovery has run (it runs lazily)."""
        return self._layers.result is not None
