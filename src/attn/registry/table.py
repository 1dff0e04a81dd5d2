"""The override table of one registry and the state object that owns it.

Each registry has exactly one :class:`RegistryState`. It holds two layers,
the entries that discovery merged (plugins) and the registrations made at
runtime, and the table in effect, which is the plugin layer with the runtime
layer on top. Lookups read the table first and fall back to the built-in
default. All of it sits behind one lock, so two threads that touch a registry
for the first time at once scan once and see the same table.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, final

from .controls import Controls, read_controls
from .discovery import Conflict, DiscoveryResult, discover
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
class RegistryState:
    """The mutable state of one registry: discovery result, layers, table."""

    __slots__ = (
        "_builtin_names",
        "_cleared",
        "_discovered",
        "_lock",
        "_result",
        "_runtime",
        "_sibling_groups",
        "_table",
        "config",
    )

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
        self._result: DiscoveryResult | None = None
        self._discovered: dict[str, Entry] = {}
        self._runtime: dict[str, Entry] = {}
        self._table: dict[str, Entry] = {}
        self._cleared: set[str] = set()

    # -- discovery ------------------------------------------------------------

    def ensure(self) -> DiscoveryResult:
        """Run discovery unless it has run; return its result."""
        result = self._result
        if result is not None:
            return result
        with self._lock:
            if self._result is None:
                self._discover()
            assert self._result is not None  # noqa: S101 - set by _discover
            return self._result

    def refresh(self) -> DiscoveryResult:
        """Run discovery again; runtime registrations are kept on top."""
        # A pip install in this process leaves finders with stale listings.
        importlib.invalidate_caches()
        with self._lock:
            self._discover()
            assert self._result is not None  # noqa: S101 - set by _discover
            return self._result

    def controls(self) -> Controls:
        """The controls as the environment sets them now."""
        return read_controls(self.config.env_prefix)

    def _discover(self) -> None:
        try:
            self._merge()
        except BaseException:
            # A refresh that fails (strict mode, a bad ATTN_* value) must not
            # leave the previous result in place: every access runs discovery
            # again, and fails, until the problem is gone.
            self._result = None
            raise

    def diagnose(self, controls: Controls | None = None) -> DiscoveryResult:
        """Run the discovery pipeline for this registry and return what it found.

        Nothing is merged, warned about or raised (strict mode included): this
        is what ``doctor`` reports and what every merge starts from.
        """
        return discover(
            group=self.config.group,
            host=self.config.host,
            controls=self.controls() if controls is None else controls,
            builtin_names=self._builtin_names,
            sibling_groups=self._sibling_groups(),
        )

    def _merge(self) -> None:
        controls = self.controls()
        result = self.diagnose(controls)
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
        self._discovered = discovered
        self._table = {**discovered, **self._runtime}
        self._cleared = set()
        self._result = result

    # -- the table ------------------------------------------------------------

    def lookup(self, name: str) -> Entry | None:
        """The table's entry for *name*, if any (runs discovery first)."""
        self.ensure()
        return self._table.get(name)

    def names(self) -> tuple[str, ...]:
        """Names in the table, in insertion order (runs discovery first)."""
        self.ensure()
        return tuple(self._table)

    def register(self, entry: Entry) -> None:
        """Put a runtime registration on top of whatever the table had."""
        with self._lock:
            self.ensure()
            self._runtime[entry.name] = entry
            self._table[entry.name] = entry
            self._cleared.discard(entry.name)

    def clear(self, name: str) -> bool:
        """Drop *name*'s entry from both layers until the next refresh."""
        with self._lock:
            self.ensure()
            self._runtime.pop(name, None)
            self._cleared.add(name)
            return self._table.pop(name, None) is not None

    def was_cleared(self, name: str) -> bool:
        """Whether *name* was dropped with :meth:`clear` since the last discovery."""
        return name in self._cleared

    def snapshot(self) -> Snapshot:
        """A copy of the state; mutating the registry later does not change it."""
        with self._lock:
            return Snapshot(
                discovered=MappingProxyType(dict(self._discovered)),
                runtime=MappingProxyType(dict(self._runtime)),
                table=MappingProxyType(dict(self._table)),
                result=self._result,
                cleared=frozenset(self._cleared),
            )

    def invalidate(self) -> None:
        """Forget the discovery result: the next access discovers again (runtime layer kept)."""
        with self._lock:
            self._result = None

    def restore(self, snapshot: Snapshot) -> None:
        """Put back the state *snapshot* recorded: discovery result, layers and clears."""
        with self._lock:
            self._result = snapshot.result
            self._discovered = dict(snapshot.discovered)
            self._runtime = dict(snapshot.runtime)
            self._table = dict(snapshot.table)
            self._cleared = set(snapshot.cleared)

    def reset(self) -> None:
        """Forget discovery and every runtime registration (for tests)."""
        with self._lock:
            self._result = None
            self._discovered = {}
            self._runtime = {}
            self._table = {}
            self._cleared = set()

    @property
    def discovered_yet(self) -> bool:
        """Whether discovery has run (it runs lazily)."""
        return self._result is not None
