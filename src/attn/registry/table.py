"""Each registry's state: the plugins discovery merged, runtime registrations on top."""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from attn import _fork

from ._cache import HostScan, Outcome, forget, host_scan
from .controls import Controls, control_values, read_controls
from .errors import ClassPath, PluginProblemError, PluginWarning, Record

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from .report import DiscoveryResult

_NOTHING: Mapping[str, Entry] = MappingProxyType({})
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # attn's folder


class RegistryConfig(Record):
    """A registry's class name, its class keywords, and where its host's code was imported from."""

    registry: str
    group: str
    host: str
    noun: str
    env_prefix: str
    register_hint: str
    host_root: str | None = None
    where: str | None = None  # MODULE:CLASS, for a registry attn's command needs --registry for

    def command(self, words: str, root: str = "attn") -> str:
        """The command line its users run for *words*: ``'attn doctor'``, quoted (or *root*'s)."""
        return f"'{root} {words} --registry {self.where}'" if self.where else f"'attn {words}'"


class Entry(Record):
    """One row of the override table; a runtime one records who made it (and the plugin)."""

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
        """``DIST VERSION`` of the plugin whose code made a runtime registration."""
        return " ".join(filter(None, (self.plugin_distribution, self.plugin_version))) or None

    @property
    def registrant(self) -> str | None:
        """Who made a runtime registration, as listings show it."""
        if self.plugin_distribution is None:
            return self.registered_by
        return f"{self.registered_by or 'unknown code'} (plugin code of {self.plugin_label})"


class Snapshot(Record):
    """A registry's whole state, read-only, replaced at once; ``warm``, a cached outcome."""

    result: DiscoveryResult | None = None
    discovered: Mapping[str, Entry] = _NOTHING
    runtime: Mapping[str, Entry] = _NOTHING
    table: Mapping[str, Entry] = _NOTHING
    cleared: frozenset[str] = frozenset()
    warm: Outcome | None = None
    controls: tuple[tuple[str, str | None], ...] = ()  # as the environment set them then


class RegistryState:
    """The mutable state of one registry: discovery result, layers, table."""

    __slots__ = ("_builtins", "_groups", "_layers", "config")

    def __init__(
        self, config: RegistryConfig, builtins: Mapping[str, object], groups: dict[str, None]
    ) -> None:
        """Undiscovered; *builtins* maps each member to its default path (or None, as CUSTOM)."""
        self.config, self._builtins, self._groups = config, builtins, groups
        self._layers = Snapshot()

    @property
    def discovered_yet(self) -> bool:
        """Whether a discovery (scanned or cached) is in effect."""
        return self._layers.result is not None or self._layers.warm is not None

    def ensure(self) -> DiscoveryResult:
        """Run discovery unless it has run; return its result."""
        if (result := self._layers.result) is not None:
            return result
        with _fork.LOCK:
            self.ready()
            if (layers := self._layers).result is None:  # merged from the cache
                from .report import result_from  # noqa: PLC0415 - listing's records, off the warm path

                assert layers.warm is not None  # noqa: S101 - ready() merged
                self._layers = layers._replace(result=result_from(layers.warm.result))
            return self.ensure()

    def ready(self) -> object:
        """`ensure()` on the warm path; returns a token that changes at each discovery."""
        if (layers := self._layers).result is None and layers.warm is None:
            with _fork.LOCK:
                if not self.discovered_yet:
                    self._discover()
                layers = self._layers
        return layers.warm or layers.result

    def refresh(self) -> None:
        """Run discovery again; runtime registrations are kept on top."""
        with _fork.LOCK:
            # Stale after a pip install; locked: 3.10 races on sys.path_importer_cache.
            importlib.invalidate_caches()
            self._discover(fresh=True)

    def controls(self) -> Controls:
        """The controls as the environment sets them now."""
        return read_controls(self.config.env_prefix)

    def _discover(self, *, fresh: bool = False) -> None:
        try:
            warned = self._merge(fresh=fresh)
        except BaseException:
            self.invalidate()  # strict mode, a bad ATTN_* value: every access fails until fixed
            raise
        # Once the table is set (-W error fails only this access), at the first caller outside attn.
        frame, level = sys._getframe(), 1
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
            frame, level = frame.f_back, level + 1
        if warned:  # the codes' module only then: a lookup without warnings needs no code
            from .codes import WARNINGS  # noqa: PLC0415
        for code, message in warned:
            warnings.warn(message, WARNINGS.get(code, PluginWarning), stacklevel=level)

    def _scan(self, controls: Controls, fresh: bool) -> HostScan | None:
        if controls.disable_plugins:
            return None
        return host_scan(self.config.host, self._groups, controls=controls, fresh=fresh)

    def _pipeline(self, controls: Controls, scan: HostScan | None) -> DiscoveryResult:
        from ._metadata import records_from  # noqa: PLC0415 - as scan_host, the cold path only
        from .discovery import discover  # noqa: PLC0415

        return discover(
            group=self.config.group,
            host=self.config.host,
            controls=controls,
            builtin_names=tuple(self._builtins),
            sibling_groups=tuple(self._groups),
            records=() if scan is None else records_from(scan.records),  # () when disabled
            host_root=self.config.host_root,
        )

    def diagnose(self, *, fresh: bool = False) -> DiscoveryResult:
        """What discovery finds (on the host's shared scan unless *fresh*); nothing is merged."""
        controls = self.controls()
        with _fork.LOCK:
            return self._pipeline(controls, self._scan(controls, fresh))

    def _merge(self, *, fresh: bool = False) -> Sequence[tuple[str, str]]:
        # Returns the warnings to issue: not those another registry issued for the same scan.
        config, controls = self.config, self.controls()
        scan = self._scan(controls, fresh)
        defaults = tuple(p is not None for p in self._builtins.values())  # the warnings say which
        context = (config.group, tuple(controls), tuple(self._builtins), defaults)  # but the scan
        outcome = warm = None if scan is None else scan.outcomes.get(context)
        result = None
        if outcome is None:  # the cold path only (a cached outcome holds its warnings)
            from ._findings import merge_warnings  # noqa: PLC0415
            from .report import plain  # noqa: PLC0415

            result = self._pipeline(controls, scan)
            problems = tuple(dict.fromkeys(f.message for f in result.findings if f.is_problem))
            doctor = config.command("doctor")
            if controls.strict and problems:  # a failing merge is not cached: worked out each time
                heading = f"{controls.strict_variable}=1 and the {config.noun} plugins in group "
                heading += f"{config.group!r} have {len(problems)} problem(s):"
                text = PluginProblemError._render(heading, problems, doctor)
                raise PluginProblemError(text, heading=heading, problems=problems)
            warned = merge_warnings(result, config.noun, doctor, self._builtins)
            outcome = Outcome(tuple(warned), plain(result))
            if scan is not None:
                scan.remember(context, outcome)
        discovered = {  # the plugins merged, from the result's plain PluginRecord tuples
            name: Entry(name, ClassPath(*path), "plugin", dist, version, value)
            for name, value, dist, _, version, *_, status, _, path, _, _ in outcome.result[2]
            if status == "used" and path is not None
        }
        runtime = self._layers.runtime
        table = MappingProxyType({**discovered, **runtime})
        layers = (result, MappingProxyType(discovered), runtime, table, frozenset[str](), warm)
        self._layers = Snapshot(*layers, control_values(config.env_prefix))  # workers compare them
        seen = set() if scan is None else scan.warned
        warned = [w for w in outcome.warnings if w not in seen]
        seen.update(warned)
        return warned

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
                runtime=MappingProxyType({**layers.runtime, entry.name: entry}),
                table=MappingProxyType({**layers.table, entry.name: entry}),
                cleared=layers.cleared - {entry.name},
            )

    def clear(self, name: str) -> None:
        """Drop *name*'s entry from both layers until the next refresh."""
        with _fork.LOCK:
            self.ready()
            layers = self._layers
            self._layers = layers._replace(
                runtime=MappingProxyType({n: e for n, e in layers.runtime.items() if n != name}),
                table=MappingProxyType({n: e for n, e in layers.table.items() if n != name}),
                cleared=layers.cleared | {name},
            )

    def was_cleared(self, name: str) -> bool:
        """Whether *name* was dropped with `clear()` since the discovery that provides it."""
        return name in self._layers.cleared and name in self._layers.discovered

    def snapshot(self) -> Snapshot:
        """A read-only copy of the state, which later changes do not alter."""
        if self.discovered_yet:
            self.ensure()
        return self._layers  # published whole, read-only, never changed: no lock, no copy

    def invalidate(self) -> None:
        """Forget the discovery and the host's scan: the next access discovers again."""
        with _fork.LOCK:
            forget(self.config.host)
            self._layers = self._layers._replace(result=None, warm=None)

    def restore(self, snapshot: Snapshot) -> None:
        """Put back the state *snapshot* recorded."""
        with _fork.LOCK:
            self._layers = snapshot._replace(warm=None)

    def reset(self) -> None:
        """Forget discovery, every host's shared scan and every runtime registration (for tests)."""
        with _fork.LOCK:
            forget()
            self._layers = Snapshot()


def fingerprint(group: str, rows: Iterable[Sequence[str | None]]) -> str:
    """The hex digest of a registry's ``(name, origin, path, distribution, version)`` rows."""
    with _fork.importing():
        import hashlib  # noqa: PLC0415 - only fingerprints need it (OpenSSL's, at every start)
    lines = [f"attn-fingerprint-1\0{group}", *("\0".join(f or "" for f in row) for row in rows)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
