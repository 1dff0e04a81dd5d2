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

import _thread  # threading.RLock is _thread.RLock; threading is off the warm path
import os
import sys
from _weakref import ref  # weakref.ref, without importing weakref (the warm path)
from types import MappingProxyType

from . import errors
from ._cache import Outcome, environment_key, forget, host_scan
from ._records import Record, set_field
from .controls import Controls, read_controls
from .errors import PluginProblemError
from .paths import ClassPath

# Not typing.TYPE_CHECKING: the warm path (a cache hit, then a lookup) imports
# neither typing nor dataclasses, nor the discovery pipeline.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Literal

    from ._cache import HostScan
    from ._metadata import DistributionRecord
    from .discovery import Conflict, DiscoveryResult
    from .report import PluginRecord

__all__ = ["Entry", "RegistryConfig", "RegistryState", "Snapshot"]

_STRICT_KINDS = frozenset(
    {"invalid", "incompatible", "shadowed", "undeclared-requirement", "unreadable-metadata"}
)


class RegistryConfig(Record):
    """What a registry declares about itself (its class keywords).

    ``registry`` is the enum class's name; ``register_hint`` how messages tell
    users to register a backend at runtime.
    """

    __slots__ = ("env_prefix", "group", "host", "noun", "register_hint", "registry")

    registry: str
    group: str
    host: str
    noun: str
    env_prefix: str
    register_hint: str

    def __init__(
        self,
        *,
        registry: str,
        group: str,
        host: str,
        noun: str,
        env_prefix: str,
        register_hint: str,
    ) -> None:
        """Hold a registry's declaration."""
        set_field(self, "registry", registry)
        set_field(self, "group", group)
        set_field(self, "host", host)
        set_field(self, "noun", noun)
        set_field(self, "env_prefix", env_prefix)
        set_field(self, "register_hint", register_hint)


class Entry(Record):
    """One row of the override table.

    ``value`` is the entry point's value as declared (plugins only);
    ``registered_by`` the module that made a runtime registration.
    """

    __slots__ = ("distribution", "name", "origin", "path", "registered_by", "value", "version")

    name: str
    path: ClassPath
    origin: Literal["plugin", "runtime"]
    distribution: str | None
    version: str | None
    value: str | None
    registered_by: str | None

    def __init__(  # noqa: PLR0917 - one argument per field
        self,
        name: str,
        path: ClassPath,
        origin: Literal["plugin", "runtime"],
        distribution: str | None = None,
        version: str | None = None,
        value: str | None = None,
        registered_by: str | None = None,
    ) -> None:
        """Hold one row."""
        set_field(self, "name", name)
        set_field(self, "path", path)
        set_field(self, "origin", origin)
        set_field(self, "distribution", distribution)
        set_field(self, "version", version)
        set_field(self, "value", value)
        set_field(self, "registered_by", registered_by)

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


class Snapshot(Record):
    """A copy of a registry's state at one moment; later changes do not show."""

    __slots__ = ("cleared", "discovered", "result", "runtime", "table")

    discovered: Mapping[str, Entry]
    runtime: Mapping[str, Entry]
    table: Mapping[str, Entry]
    result: DiscoveryResult | None
    cleared: frozenset[str]

    def __init__(
        self,
        *,
        discovered: Mapping[str, Entry],
        runtime: Mapping[str, Entry],
        table: Mapping[str, Entry],
        result: DiscoveryResult | None,
        cleared: frozenset[str] = frozenset(),
    ) -> None:
        """Hold a copy of the state."""
        set_field(self, "discovered", discovered)
        set_field(self, "runtime", runtime)
        set_field(self, "table", table)
        set_field(self, "result", result)
        set_field(self, "cleared", cleared)


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
    import warnings  # noqa: PLC0415 - most merges warn about nothing: off the warm path

    level = _outside_stacklevel()
    for category, message in warned:
        kind = getattr(errors, category, None)
        if not (isinstance(kind, type) and issubclass(kind, errors.AttnWarning)):
            kind = errors.PluginWarning
        warnings.warn(message, kind, stacklevel=level)


def _conflict_message(conflict: Conflict, group: str, controls: Controls) -> str:
    claimants = ", ".join(f"{c.origin_label} ({c.status}, {c.value!r})" for c in conflict.claimants)
    winner = conflict.claimants[0]
    if conflict.within_one_distribution:
        return (
            f"{winner.origin_label} declares {conflict.name!r} {len(conflict.claimants)} times "
            f"in entry-point group {group!r}: {claimants}. The first declaration is used; "
            f"report it to {winner.distribution}'s authors."
        )
    variable = controls.prefer_variable
    choices = " or ".join(f"{variable}={c.distribution}" for c in conflict.claimants)
    return (
        f"{conflict.name!r} in entry-point group {group!r} is claimed by "
        f"{len(conflict.claimants)} distributions: {claimants}. "
        f"{winner.distribution} wins ({winner.won_because}); to choose, set {choices} "
        f"({variable} orders the claimants of every conflict; nothing else changes), "
        "or uninstall all but one."
    )


class _Warm(Record):
    """A merge taken from the cache's outcome: enough to rebuild its result on demand."""

    __slots__ = ("controls", "outcome", "scan")

    scan: HostScan
    controls: Controls
    outcome: Outcome

    def __init__(self, scan: HostScan, controls: Controls, outcome: Outcome) -> None:
        """Remember what the merge used, and what it gave."""
        set_field(self, "scan", scan)
        set_field(self, "controls", controls)
        set_field(self, "outcome", outcome)

    def result(self, pipeline: Callable[[Controls, HostScan], DiscoveryResult]) -> DiscoveryResult:
        """The merge's discovery result: the cached one, else *pipeline* over the cached scan."""
        return self.outcome.discovery() or pipeline(self.controls, self.scan)


class _Layers(Record):
    """The whole mutable state of a registry, replaced (never changed) at once.

    ``result`` is the discovery result; after a merge from the cache it is
    built on first need from ``warm``, which then stands for the discovery
    (``generation``) so plugin-added backends keep their identity.
    """

    __slots__ = ("cleared", "discovered", "result", "runtime", "table", "warm")

    result: DiscoveryResult | None
    discovered: Mapping[str, Entry]
    runtime: Mapping[str, Entry]
    table: Mapping[str, Entry]
    cleared: frozenset[str]
    warm: _Warm | None

    def __init__(  # noqa: PLR0917 - one argument per layer
        self,
        result: DiscoveryResult | None = None,
        discovered: Mapping[str, Entry] | None = None,
        runtime: Mapping[str, Entry] | None = None,
        table: Mapping[str, Entry] | None = None,
        cleared: frozenset[str] = frozenset(),
        warm: _Warm | None = None,
    ) -> None:
        """Hold one version of the state."""
        set_field(self, "result", result)
        set_field(self, "discovered", {} if discovered is None else discovered)
        set_field(self, "runtime", {} if runtime is None else runtime)
        set_field(self, "table", {} if table is None else table)
        set_field(self, "cleared", cleared)
        set_field(self, "warm", warm)

    @property
    def discovered_yet(self) -> bool:
        """Whether a discovery (from a scan or from the cache) is in effect."""
        return self.result is not None or self.warm is not None

    @property
    def generation(self) -> object:
        """An object that stays the same until the next discovery."""
        return self.warm if self.warm is not None else self.result


_EMPTY = _Layers()

_INVALIDATE_LOCK = _thread.allocate_lock()

#: Every registry's state, so a forked child can give each a fresh lock:
#: weak references by id, each removed when its state is collected.
_STATES: dict[int, ref[RegistryState]] = {}


def _track(state: RegistryState) -> None:
    key = id(state)
    _STATES[key] = ref(state, lambda _gone: _STATES.pop(key, None))


def _after_fork_in_child() -> None:
    global _INVALIDATE_LOCK  # noqa: PLW0603 - a lock held at the fork stays held in the child
    _INVALIDATE_LOCK = _thread.allocate_lock()
    for held in list(_STATES.values()):
        state = held()
        if state is not None:
            state._lock = _thread.RLock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _rejected_message(plugin: PluginRecord, config: RegistryConfig, *, builtin: bool) -> str:
    """The warning for a rejected entry point: backend, distribution, reason, consequence."""
    then = (
        f"the built-in {plugin.name} stays in effect"
        if builtin
        else f"{plugin.name!r} is not available"
    )
    return (
        f"{config.noun} {plugin.name!r} from {plugin.origin_label} (entry point "
        f"{plugin.value!r}) is {plugin.status}: {plugin.reason}; {then}. "
        f"Run '{config.host} doctor' for the fix."
    )


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
        self._lock = _thread.RLock()
        self._layers = _EMPTY
        _track(self)

    # -- discovery ------------------------------------------------------------

    def ensure(self) -> DiscoveryResult:
        """Run discovery unless it has run; return its result."""
        result = self._layers.result
        if result is not None:
            return result
        with self._lock:
            layers = self._layers
            if layers.result is not None:
                return layers.result
            if layers.warm is not None:
                # Merged from the cache: its result was cached with the merge (else
                # the pipeline runs over the cached scan with that merge's controls;
                # no scan, no warning again).
                result = layers.warm.result(self._pipeline)
                self._layers = layers.replace(result=result)
                return result
            self._discover()
            return self.ensure()

    def ready(self) -> object:
        """Run discovery unless it has run; return a token that changes at each discovery.

        Unlike :meth:`ensure`, this builds no discovery result after a merge
        from the cache: lookups stay on the warm path.
        """
        layers = self._layers
        if not layers.discovered_yet:
            with self._lock:
                if not self._layers.discovered_yet:
                    self._discover()
                layers = self._layers
        return layers.generation

    def refresh(self) -> DiscoveryResult:
        """Run discovery again; runtime registrations are kept on top."""
        # A pip install in this process leaves finders with stale listings.
        import importlib  # noqa: PLC0415 - off the warm path

        # One thread at a time: Python 3.10's path finder deletes entries of
        # sys.path_importer_cache without a lock (two registries refreshing at
        # once raised KeyError there).
        with _INVALIDATE_LOCK:
            importlib.invalidate_caches()
        with self._lock:
            self._discover(fresh=True)
            return self.ensure()

    def controls(self) -> Controls:
        """The controls as the environment sets them now."""
        return read_controls(self.config.env_prefix)

    def _discover(self, *, fresh: bool = False) -> DiscoveryResult | None:
        try:
            return self._merge(fresh=fresh)
        except BaseException:
            # A refresh that fails (strict mode, a bad ATTN_* value) must not
            # leave the previous result in place: every access runs discovery
            # again, and fails, until the problem is gone; it scans again, too.
            self._layers = self._layers.replace(result=None, warm=None)
            forget(self.config.host)
            raise

    def _scan(self, *, fresh: bool = False) -> HostScan:
        """The scan this registry shares with its siblings (see :mod:`._cache`)."""
        host, groups = self.config.host, (self.config.group, *self._sibling_groups())

        def scan() -> tuple[DistributionRecord, ...]:
            from .discovery import scan_host  # noqa: PLC0415 - the cold path only

            return scan_host(host, groups)

        return host_scan(host, groups, scan, prefix=self.config.env_prefix, fresh=fresh)

    def _pipeline(self, controls: Controls, scan: HostScan | None) -> DiscoveryResult:
        from .discovery import discover  # noqa: PLC0415 - the cold path only

        return discover(
            group=self.config.group,
            host=self.config.host,
            controls=controls,
            builtin_names=self._builtin_names,
            sibling_groups=self._sibling_groups(),
            records=None if scan is None else scan.records,
        )

    def diagnose(self, controls: Controls | None = None, *, fresh: bool = False) -> DiscoveryResult:
        """Run the discovery pipeline for this registry and return what it found.

        Nothing is merged, warned about or raised (strict mode included): this
        is what ``doctor`` reports and what every merge starts from. The scan
        is the one the host's registries share, unless *fresh* asks for a new one.
        """
        controls = self.controls() if controls is None else controls
        scan = None if controls.disable_plugins else self._scan(fresh=fresh)
        return self._pipeline(controls, scan)

    def _outcome(self, result: DiscoveryResult, controls: Controls) -> Outcome:
        """What merging *result* does: the strict error, the warnings, the plugin entries."""
        error = None
        if controls.strict:
            problems = tuple(f.message for f in result.findings if f.kind in _STRICT_KINDS)
            if problems:
                listed = "\n".join(f"  - {p}" for p in problems)
                msg = (
                    f"{controls.strict_variable}=1 and the {self.config.noun} plugins in "
                    f"group {self.config.group!r} have {len(problems)} problem(s):\n{listed}\n"
                    f"Run '{self.config.host} doctor' for the fixes."
                )
                error = (msg, problems)
        warned = [
            ("ConflictWarning", _conflict_message(conflict, self.config.group, controls))
            for conflict in result.conflicts
            if not conflict.preferred(controls)  # the user chose the winner
        ]
        warned.extend(
            ("PluginWarning", f"{finding.message}; {finding.fix}")
            for finding in result.findings
            if finding.kind == "unmatched-selection"
        )
        # Never silent: a rejected claimant, or metadata nobody can read.
        warned.extend(
            (
                "RejectedPluginWarning",
                _rejected_message(plugin, self.config, builtin=plugin.name in self._builtin_names),
            )
            for plugin in result.plugins
            if plugin.status in {"incompatible", "invalid"}
        )
        warned.extend(
            (
                "RejectedPluginWarning",
                f"{finding.message}. Run '{self.config.host} doctor' for the fix.",
            )
            for finding in result.unreadable
        )
        entries = tuple(
            (
                p.name,
                p.path.module,
                p.path.qualname,
                p.distribution,
                p.distribution_version,
                p.value,
            )
            for p in result.used
            if p.path is not None
        )
        from .report import result_data  # noqa: PLC0415 - the cold path only

        return Outcome(entries, tuple(warned), error, result_data(result))

    def _merge(self, *, fresh: bool = False) -> DiscoveryResult | None:
        controls = self.controls()
        result = None
        warm = None
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
                outcome, warm = cached, _Warm(scan, controls, cached)
        if outcome.error is not None:
            message, problems = outcome.error
            raise PluginProblemError(message, problems=problems)
        if outcome.warnings:
            _warn(outcome.warnings)
        discovered = {
            name: Entry(name, ClassPath(module, qualname), "plugin", dist, version, value)
            for name, module, qualname, dist, version, value in outcome.entries
        }
        runtime = self._layers.runtime
        self._layers = _Layers(
            result, discovered, runtime, {**discovered, **runtime}, frozenset(), warm
        )
        return result

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
        with self._lock:
            self.ready()
            layers = self._layers
            self._layers = layers.replace(
                runtime={**layers.runtime, entry.name: entry},
                table={**layers.table, entry.name: entry},
                cleared=layers.cleared - {entry.name},
            )

    def clear(self, name: str) -> bool:
        """Drop *name*'s entry from both layers until the next refresh."""
        with self._lock:
            self.ready()
            layers = self._layers
            runtime = dict(layers.runtime)
            runtime.pop(name, None)
            table = dict(layers.table)
            had = table.pop(name, None) is not None
            self._layers = layers.replace(
                runtime=runtime, table=table, cleared=layers.cleared | {name}
            )
            return had

    def was_cleared(self, name: str) -> bool:
        """Whether *name* was dropped with :meth:`clear` since the last discovery."""
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
        with self._lock:
            forget(self.config.host)
            self._layers = self._layers.replace(result=None, warm=None)

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
        return self._layers.discovered_yet


def fingerprint(group: str, rows: Iterable[Sequence[str | None]]) -> str:
    """The hex digest of what a registry of *group* resolves every name to.

    *rows* are ``(name, origin, path, distribution, version)`` in the
    registry's order (built-ins, then added names, sorted); two processes get
    equal digests exactly when their rows are equal.
    """
    import hashlib  # noqa: PLC0415 - only fingerprints need it (OpenSSL's, at every start)

    lines = [f"attn-fingerprint-1\0{group}", *("\0".join(f or "" for f in row) for row in rows)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
