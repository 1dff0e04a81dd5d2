"""The override table of one registry and the state object that owns it.

Each registry's `RegistryState` holds two layers, the plugins discovery
merged and the runtime registrations, and the table in effect: the plugin
layer with the runtime one on top. Every change publishes a new `_Layers`
with one assignment, so readers never see half of one; writers hold one lock
(`_fork.LOCK`), shared by every registry, from start to end.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, NamedTuple

from attn import _fork

from ._cache import Outcome, environment_key, forget, host_scan
from .controls import Controls, read_controls
from .errors import (
    Code,
    ConflictWarning,
    PluginProblemError,
    PluginWarning,
    RejectedPluginWarning,
)
from .paths import ClassPath

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from ._cache import HostScan, RecordData
    from .errors import AttnWarning
    from .report import DiscoveryResult, PluginRecord

__all__ = ["Entry", "RegistryConfig", "RegistryState", "Snapshot"]

# Internal records are NamedTuples, not dataclasses: a lookup warm from the
# cache defines no dataclass (each costs about 1 ms to create; docs/decisions.md).

_NOTHING: Mapping[str, Entry] = MappingProxyType({})


class RegistryConfig(NamedTuple):
    """What a registry declares about itself: the enum class's name and its class keywords."""

    registry: str
    group: str
    host: str
    noun: str
    env_prefix: str
    register_hint: str
    host_root: str | None = None
    """Where the host's code was imported from (the registry's top-level package)."""


class Entry(NamedTuple):
    """One row of the override table.

    ``value`` is the entry point's value (plugins only). A runtime registration
    records the module that made it and, if plugin code made it while attn
    imported that plugin, the plugin's distribution and version.
    """

    name: str
    path: ClassPath
    origin: Literal["plugin", "runtime"]
    distribution: str | None = None
    version: str | None = None
    value: str | None = None
    registered_by: str | None = None
    plugin_distribution: str | None = None
    plugin_version: str | None = None

    @property
    def plugin_label(self) -> str | None:
        """``DIST VERSION`` of the plugin whose code made a runtime registration, if one did."""
        if self.plugin_distribution is None or self.plugin_version is None:
            return self.plugin_distribution
        return f"{self.plugin_distribution} {self.plugin_version}"

    @property
    def registrant(self) -> str | None:
        """Who made a runtime registration, as listings show it."""
        if self.plugin_distribution is None:
            return self.registered_by
        return f"{self.registered_by or 'unknown code'} (plugin code of {self.plugin_label})"

    @classmethod
    def from_plugin(cls, plugin: PluginRecord) -> Entry:
        """The table entry for an entry point that discovery merged.

        Raises:
            ValueError: *plugin* is one discovery rejected for its value (it has no path).
        """
        if plugin.path is None:
            msg = f"{plugin.name!r} = {plugin.value!r} of {plugin.origin_label} has no class path"
            raise ValueError(msg)
        return cls(
            plugin.name,
            plugin.path,
            "plugin",
            plugin.distribution,
            plugin.distribution_version,
            plugin.value,
        )


class Snapshot(NamedTuple):
    """A copy of a registry's state at one moment; later changes do not show."""

    discovered: Mapping[str, Entry]
    runtime: Mapping[str, Entry]
    table: Mapping[str, Entry]
    result: DiscoveryResult | None
    cleared: frozenset[str] = frozenset()


class _Layers(NamedTuple):
    """The whole mutable state of a registry, replaced (never changed) at once.

    After a merge from the cache, ``result`` is built on first need from
    ``warm``, the cached outcome, which stands for the discovery meanwhile.
    """

    result: DiscoveryResult | None = None
    discovered: Mapping[str, Entry] = _NOTHING
    runtime: Mapping[str, Entry] = _NOTHING
    table: Mapping[str, Entry] = _NOTHING
    cleared: frozenset[str] = frozenset()
    warm: Outcome | None = None

    @property
    def discovered_yet(self) -> bool:
        """Whether a discovery (from a scan or from the cache) is in effect."""
        return self.result is not None or self.warm is not None

    @property
    def generation(self) -> object:
        """An object that stays the same until the next discovery."""
        return self.warm if self.warm is not None else self.result


_EMPTY = _Layers()

#: The class of each warning a merge issues, by the code its (cached) outcome stores.
_WARNINGS: dict[str, type[AttnWarning]] = {
    Code.SHADOWED: ConflictWarning,
    Code.UNMATCHED_SELECTION: PluginWarning,
    Code.INCOMPATIBLE: RejectedPluginWarning,
    Code.INVALID: RejectedPluginWarning,
    Code.UNREADABLE_METADATA: RejectedPluginWarning,
}

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


def _warn(warned: Sequence[tuple[str, str]]) -> None:
    """Issue a merge's warnings, each as its attn warning class, at the caller outside attn."""
    level = _outside_stacklevel()
    for code, message in warned:
        warnings.warn(message, _WARNINGS.get(code, PluginWarning), stacklevel=level)


class RegistryState:
    """The mutable state of one registry: discovery result, layers, table."""

    __slots__ = ("_builtin_names", "_layers", "_sibling_groups", "config")

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
        self._layers = _EMPTY

    # -- discovery ------------------------------------------------------------

    def ensure(self) -> DiscoveryResult:
        """Run discovery unless it has run; return its result."""
        result = self._layers.result
        if result is not None:
            return result
        with _fork.LOCK:
            self.ready()
            layers = self._layers
            if layers.result is not None:
                return layers.result
            # Merged from the cache: the result the table's entries came from.
            assert layers.warm is not None  # noqa: S101 - ready() merged, from a scan or the cache
            from .report import result_from  # noqa: PLC0415 - listing's records, off the warm path

            result = result_from(layers.warm.result)
            self._layers = layers._replace(result=result)
            return result

    def ready(self) -> object:
        """Run discovery unless it has run; return a token that changes at each discovery.

        Unlike `ensure()`, this builds no discovery result after a merge
        from the cache: lookups stay on the warm path.
        """
        layers = self._layers
        if not layers.discovered_yet:
            with _fork.LOCK:
                if not self._layers.discovered_yet:
                    self._discover()
                layers = self._layers
        return layers.generation

    def refresh(self) -> DiscoveryResult:
        """Run discovery again; runtime registrations are kept on top."""
        with _fork.LOCK:
            # A pip install in this process leaves finders with stale listings
            # (and under the lock: Python 3.10's path finder deletes entries of
            # sys.path_importer_cache unlocked, so two at once raised KeyError).
            importlib.invalidate_caches()
            self._discover(fresh=True)
            return self.ensure()

    def controls(self) -> Controls:
        """The controls as the environment sets them now."""
        return read_controls(self.config.env_prefix)

    def _discover(self, *, fresh: bool = False) -> None:
        try:
            warned = self._merge(fresh=fresh)
        except BaseException:
            # A refresh that fails (strict mode, a bad ATTN_* value) must not
            # leave the previous result in place: every access runs discovery
            # again, and fails, until the problem is gone; it scans again, too.
            self._layers = self._layers._replace(result=None, warm=None)
            forget(self.config.host)
            raise
        # Once the table is in place: a warning that a filter turns into an error
        # (python -W error) fails this access, not every access after it.
        if warned:
            _warn(warned)

    def _scan(self, *, fresh: bool = False) -> HostScan:
        """The scan this registry shares with its siblings (see `._cache`)."""
        host, groups = self.config.host, (self.config.group, *self._sibling_groups())

        def scan() -> tuple[RecordData, ...]:
            # Imported by the cold path only (and under _fork.LOCK, so a fork waits for it).
            from .discovery import scan_host  # noqa: PLC0415
            from .report import plain  # noqa: PLC0415

            return plain(scan_host(host, groups, self.config.env_prefix))  # type: ignore[no-any-return]

        return host_scan(host, groups, scan, prefix=self.config.env_prefix, fresh=fresh)

    def _pipeline(self, controls: Controls, scan: HostScan | None) -> DiscoveryResult:
        from ._metadata import records_from  # noqa: PLC0415 - as scan_host, the cold path only
        from .discovery import discover  # noqa: PLC0415

        return discover(
            group=self.config.group,
            host=self.config.host,
            controls=controls,
            builtin_names=self._builtin_names,
            sibling_groups=self._sibling_groups(),
            records=None if scan is None else records_from(scan.records),
            host_root=self.config.host_root,
        )

    def diagnose(self, controls: Controls | None = None, *, fresh: bool = False) -> DiscoveryResult:
        """Run the discovery pipeline for this registry and return what it found.

        Nothing is merged, warned about or raised (strict mode included): this
        is what ``doctor`` reports and what every merge starts from. The scan
        is the one the host's registries share, unless *fresh* asks for a new one.
        """
        controls = self.controls() if controls is None else controls
        with _fork.LOCK:
            scan = None if controls.disable_plugins else self._scan(fresh=fresh)
            return self._pipeline(controls, scan)

    def _outcome(self, result: DiscoveryResult, controls: Controls) -> Outcome:
        """What merging *result* does: the strict error, the warnings, the plugin entries."""
        error = None
        problems = tuple(f.message for f in result.findings if f.is_problem)
        if controls.strict and problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            message = (
                f"{controls.strict_variable}=1 and the {self.config.noun} plugins in "
                f"group {self.config.group!r} have {len(problems)} problem(s):\n{listed}\n"
                f"Run '{self.config.host} doctor' for the fixes."
            )
            error = (message, problems)
        # Imported by the cold path only, as discover (a cached outcome holds its warnings).
        from ._findings import merge_warnings  # noqa: PLC0415
        from .report import plain  # noqa: PLC0415

        warned = merge_warnings(
            result, controls, self.config.noun, self.config.host, self._builtin_names
        )
        return Outcome(tuple(warned), error, plain(result))

    def _merge(self, *, fresh: bool = False) -> Sequence[tuple[str, str]]:
        """Merge the plugins into the table; return the warnings to issue.

        A warning the host's other registries issued for the same scan (metadata
        nobody can read, a control that matches nothing) is not issued again.
        """
        controls = self.controls()
        result = scan = warm = None
        if controls.disable_plugins:
            result = self._pipeline(controls, None)
            outcome = self._outcome(result, controls)
        else:
            scan = self._scan(fresh=fresh)
            context = (environment_key(self.config.env_prefix), self._builtin_names)
            cached = scan.outcome(self.config.group, context)
            if cached is None:
                result = self._pipeline(controls, scan)
                outcome = self._outcome(result, controls)
                if outcome.error is None:  # a failing merge is worked out again each time
                    scan.remember(self.config.group, context, outcome)
            else:
                outcome = warm = cached
        if outcome.error is not None:
            message, problems = outcome.error
            raise PluginProblemError(message, problems=problems)
        discovered = {
            name: Entry(name, ClassPath(module, qualname), "plugin", dist, version, value)
            for name, module, qualname, dist, version, value in outcome.entries()
        }
        runtime = self._layers.runtime
        self._layers = _Layers(result, discovered, runtime, {**discovered, **runtime}, warm=warm)
        if scan is None:
            return outcome.warnings
        warned = [w for w in outcome.warnings if w not in scan.warned]
        scan.warned.update(warned)
        return warned

    # -- the table ------------------------------------------------------------

    def lookup(self, name: str) -> Entry | None:
        """The table's entry for *name*, if any (runs discovery first)."""
        self.ready()
        return self._layers.table.get(name)

    def names(self) -> tuple[str, ...]:
        """Names in the table, in insertion order (runs discovery first)."""
        self.ready()
        return tuple(self._layers.table)

    def register(self, entry: Entry) -> None:
        """Put a runtime registration on top of whatever the table had."""
        with _fork.LOCK:
            self.ready()
            layers = self._layers
            self._layers = layers._replace(
                runtime={**layers.runtime, entry.name: entry},
                table={**layers.table, entry.name: entry},
                cleared=layers.cleared - {entry.name},
            )

    def clear(self, name: str) -> bool:
        """Drop *name*'s entry from both layers until the next refresh."""
        with _fork.LOCK:
            self.ready()
            layers = self._layers
            runtime = dict(layers.runtime)
            runtime.pop(name, None)
            table = dict(layers.table)
            had = table.pop(name, None) is not None
            self._layers = layers._replace(
                runtime=runtime, table=table, cleared=layers.cleared | {name}
            )
            return had

    def was_cleared(self, name: str) -> bool:
        """Whether *name* was dropped with `clear()` since the last discovery."""
        return name in self._layers.cleared

    def snapshot(self) -> Snapshot:
        """A copy of the state; mutating the registry later does not change it."""
        layers = self._layers  # published whole: no lock needed to read it
        if layers.result is None and layers.warm is not None:
            self.ensure()
            layers = self._layers
        return Snapshot(
            discovered=MappingProxyType(dict(layers.discovered)),
            runtime=MappingProxyType(dict(layers.runtime)),
            table=MappingProxyType(dict(layers.table)),
            result=layers.result,
            cleared=layers.cleared,
        )

    def invalidate(self) -> None:
        """Forget the discovery result: the next access scans and discovers again (runtime kept)."""
        with _fork.LOCK:
            forget(self.config.host)
            self._layers = self._layers._replace(result=None, warm=None)

    def restore(self, snapshot: Snapshot) -> None:
        """Put back the state *snapshot* recorded: discovery result, layers and clears."""
        with _fork.LOCK:
            self._layers = _Layers(
                snapshot.result,
                dict(snapshot.discovered),
                dict(snapshot.runtime),
                dict(snapshot.table),
                snapshot.cleared,
            )

    def reset(self) -> None:
        """Forget discovery, the host's shared scan and every runtime registration (for tests)."""
        with _fork.LOCK:
            forget()
            self._layers = _EMPTY

    @property
    def discovered_yet(self) -> bool:
        """Whether discovery has run (it runs lazily)."""
        return self._layers.discovered_yet


def fingerprint(group: str, rows: Iterable[Sequence[str | None]]) -> str:
    """The hex digest of what a registry of *group* resolves every name to.

    *rows* are ``(name, origin, path, distribution, version)`` in the
    registry's order (built-ins, then added names, sorted); two processes get
    equal digests exactly when their rows are equal.
    """
    with _fork.importing():
        import hashlib  # noqa: PLC0415 - only fingerprints need it (OpenSSL's, at every start)

    lines = [f"attn-fingerprint-1\0{group}", *("\0".join(f or "" for f in row) for row in rows)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
