"""The same backends in every process: fingerprints, captured states, checks.

An engine's driver captures what its registries resolve to and hands it to
every worker it starts (a ``multiprocessing`` or ``concurrent.futures``
initializer, a Ray task, actor or ``worker_process_setup_hook``)::

    state = attn.capture_state()
    pool = multiprocessing.Pool(initializer=attn.apply_state, initargs=(state,))

:func:`apply_state` re-makes the driver's runtime registrations in the
worker, then compares each registry's fingerprint with the driver's and
raises :class:`~attn.StateMismatchError` naming every backend that resolves
differently. A :class:`WorkerState` holds plain strings only: it pickles, it
is written to JSON by ``attn state save`` and read back, validated, by
``attn doctor --against``; nothing in it is ever executed or unpickled from a
file. Applying imports no backend class: a runtime registration is a path,
recorded as it is, and a worker that cannot import it finds out when it asks
for the class (:class:`~attn.BackendLoadError`).
"""

from __future__ import annotations

import importlib
import os

from .enum import BackendEnumMeta, declared_registries, state_of
from .errors import StateMismatchError
from .paths import parse_path
from .table import Entry

# Not typing.TYPE_CHECKING: this module is on a worker's start-up path.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "BackendResolution",
    "CapturedRegistry",
    "RuntimeRegistration",
    "StateMismatchError",
    "WorkerState",
    "apply_state",
    "capture_state",
    "fingerprint",
    "ray_setup_hook",
]

#: What ``to_json`` writes as ``format``; ``from_json`` accepts this only.
STATE_FORMAT = "attn-worker-state"
STATE_VERSION = 1
_FINGERPRINT_VERSION = "attn-fingerprint-1"
#: The controls that change what a registry resolves to, after the prefix.
_CONTROLS = ("DISABLE_PLUGINS", "PLUGINS", "PREFER")


class _Record:
    """A small immutable record: equality, hashing, repr and pickling by fields."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        """Records are equal when they are of one type with equal fields."""
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        """Hash of the fields."""
        return hash(self._values())

    def __repr__(self) -> str:
        """``Type(field=value, ...)``."""
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def __reduce__(self) -> tuple[object, tuple[type, tuple[object, ...]]]:
        """Pickle as the type and the fields' values, in order."""
        return _rebuild, (type(self), self._values())

    def __setattr__(self, name: str, value: object) -> None:
        """Records are immutable."""
        msg = f"{type(self).__name__} is immutable"
        raise AttributeError(msg)

    def _init(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)


def _rebuild(cls: type[_Record], values: tuple[object, ...]) -> _Record:
    record = cls.__new__(cls)
    record._init(**dict(zip(cls._fields, values, strict=True)))
    return record


class BackendResolution(_Record):
    """What one name of a registry resolves to in one process."""

    __slots__ = ("distribution", "name", "origin", "path", "version")
    _fields = ("name", "origin", "path", "distribution", "version")

    name: str
    origin: str
    """``builtin``, ``plugin`` or ``runtime``."""
    path: str | None
    """The effective class path, ``module:QualName``; ``None`` for an unregistered member."""
    distribution: str | None
    version: str | None

    def __init__(
        self,
        name: str,
        origin: str,
        path: str | None,
        distribution: str | None = None,
        version: str | None = None,
    ) -> None:
        """Record one resolved name."""
        self._init(name=name, origin=origin, path=path, distribution=distribution, version=version)

    def describe(self) -> str:
        """How a mismatch message shows this side: the path, then where it comes from."""
        if self.path is None:
            return "unregistered (no default, nothing registered)"
        dotted = parse_path(self.path).dotted
        if self.origin == "plugin":
            label = self.distribution or "an unknown distribution"
            if self.version is not None:
                label = f"{label} {self.version}"
            return f"{dotted} (plugin {label})"
        if self.origin == "runtime":
            return f"{dotted} (runtime registration)"
        return f"{dotted} (built-in)"


class RuntimeRegistration(_Record):
    """A registration made at runtime in the driver, to be made again in workers."""

    __slots__ = ("name", "path", "registered_by")
    _fields = ("name", "path", "registered_by")

    name: str
    path: str
    """``module:QualName``, as the registration recorded it."""
    registered_by: str | None
    """The module that registered it, as load errors name it."""

    def __init__(self, name: str, path: str, registered_by: str | None = None) -> None:
        """Record one runtime registration."""
        self._init(name=name, path=path, registered_by=registered_by)


class CapturedRegistry(_Record):
    """One registry as the driver resolved it."""

    __slots__ = (
        "backends",
        "cleared",
        "controls",
        "env_prefix",
        "fingerprint",
        "group",
        "host",
        "module",
        "qualname",
        "registry",
        "runtime",
    )
    _fields = (
        "registry",
        "module",
        "qualname",
        "group",
        "host",
        "env_prefix",
        "fingerprint",
        "backends",
        "runtime",
        "cleared",
        "controls",
    )

    registry: str
    """The registry class's name (``AttentionBackendEnum``)."""
    module: str
    """The module that declares it, which a worker imports to find it."""
    qualname: str
    group: str
    host: str
    env_prefix: str
    fingerprint: str
    backends: tuple[BackendResolution, ...]
    runtime: tuple[RuntimeRegistration, ...]
    cleared: tuple[str, ...]
    """Names dropped with ``clear_override()`` since the last discovery."""
    controls: tuple[tuple[str, str | None], ...]
    """The ``<PREFIX>_*`` discovery controls and their values (``None``: unset)."""

    def __init__(
        self,
        *,
        registry: str,
        module: str,
        qualname: str,
        group: str,
        host: str,
        env_prefix: str,
        fingerprint: str,
        backends: Iterable[BackendResolution],
        runtime: Iterable[RuntimeRegistration] = (),
        cleared: Iterable[str] = (),
        controls: Iterable[tuple[str, str | None]] = (),
    ) -> None:
        """Record one registry's captured state."""
        self._init(
            registry=registry,
            module=module,
            qualname=qualname,
            group=group,
            host=host,
            env_prefix=env_prefix,
            fingerprint=fingerprint,
            backends=tuple(backends),
            runtime=tuple(runtime),
            cleared=tuple(cleared),
            controls=tuple((str(k), v) for k, v in controls),
        )

    @property
    def location(self) -> str:
        """``module:QualName`` of the registry class."""
        return f"{self.module}:{self.qualname}"


class WorkerState(_Record):
    """What every declared registry resolves to in the process that captured it.

    Made by :func:`capture_state`, used by :func:`apply_state`. It pickles
    (for ``initargs``, Ray tasks and actors) and converts to and from JSON
    (:meth:`to_json`, :meth:`from_json`).
    """

    __slots__ = ("registries",)
    _fields = ("registries",)

    registries: tuple[CapturedRegistry, ...]

    def __init__(self, registries: Iterable[CapturedRegistry]) -> None:
        """Hold the captured *registries*."""
        self._init(registries=tuple(registries))

    def to_json(self) -> dict[str, object]:
        """The state as JSON-ready data (what ``attn state save`` writes)."""
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "registries": [
                {
                    "registry": r.registry,
                    "module": r.module,
                    "qualname": r.qualname,
                    "group": r.group,
                    "host": r.host,
                    "env_prefix": r.env_prefix,
                    "fingerprint": r.fingerprint,
                    "controls": dict(r.controls),
                    "cleared": list(r.cleared),
                    "runtime": [
                        {"name": x.name, "path": x.path, "registered_by": x.registered_by}
                        for x in r.runtime
                    ],
                    "backends": [
                        {
                            "name": b.name,
                            "origin": b.origin,
                            "path": b.path,
                            "distribution": b.distribution,
                            "version": b.version,
                        }
                        for b in r.backends
                    ],
                }
                for r in self.registries
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> WorkerState:
        """Read a state written by :meth:`to_json`, checking every field.

        Raises:
            ValueError: *data* is not such a state (the message says where).
        """
        reader = _Reader()
        top = reader.mapping(data, "the state")
        if top.get("format") != STATE_FORMAT:
            reader.fail(f"'format' is {top.get('format')!r}, expected {STATE_FORMAT!r}")
        if top.get("version") != STATE_VERSION:
            reader.fail(f"'version' is {top.get('version')!r}, expected {STATE_VERSION}")
        registries = [
            _registry_from_json(reader, item, f"registries[{i}]")
            for i, item in enumerate(reader.sequence(top.get("registries"), "'registries'"))
        ]
        return cls(registries)


class _Reader:
    """Type checks for :meth:`WorkerState.from_json`, failing with a located message."""

    @staticmethod
    def fail(message: str) -> None:
        msg = f"not a saved attn state: {message}"
        raise ValueError(msg)

    def mapping(self, value: object, where: str) -> Mapping[str, object]:
        if not isinstance(value, dict):
            self.fail(f"{where} is {type(value).__name__}, expected an object")
        return value  # type: ignore[return-value]

    def sequence(self, value: object, where: str) -> list[object]:
        if not isinstance(value, list):
            self.fail(f"{where} is {type(value).__name__}, expected an array")
        return value  # type: ignore[return-value]

    def text(self, obj: Mapping[str, object], key: str, where: str, *, null: bool = False) -> str:
        value = obj.get(key)
        if value is None and null and key in obj:
            return None  # type: ignore[return-value]
        if not isinstance(value, str):
            expected = "a string or null" if null else "a string"
            self.fail(f"{where}.{key} is {value!r}, expected {expected}")
        return value  # type: ignore[return-value]


def _registry_from_json(reader: _Reader, item: object, where: str) -> CapturedRegistry:
    obj = reader.mapping(item, where)
    backends = []
    for i, raw in enumerate(reader.sequence(obj.get("backends"), f"{where}.backends")):
        here = f"{where}.backends[{i}]"
        row = reader.mapping(raw, here)
        origin = reader.text(row, "origin", here)
        if origin not in {"builtin", "plugin", "runtime"}:
            reader.fail(f"{here}.origin is {origin!r}, expected builtin, plugin or runtime")
        path = reader.text(row, "path", here, null=True)
        if path is not None:
            _checked_path(reader, path, f"{here}.path")
        backends.append(
            BackendResolution(
                name=reader.text(row, "name", here),
                origin=origin,
                path=path,
                distribution=reader.text(row, "distribution", here, null=True),
                version=reader.text(row, "version", here, null=True),
            )
        )
    runtime = []
    for i, raw in enumerate(reader.sequence(obj.get("runtime"), f"{where}.runtime")):
        here = f"{where}.runtime[{i}]"
        row = reader.mapping(raw, here)
        path = reader.text(row, "path", here)
        _checked_path(reader, path, f"{here}.path")
        runtime.append(
            RuntimeRegistration(
                name=reader.text(row, "name", here),
                path=path,
                registered_by=reader.text(row, "registered_by", here, null=True),
            )
        )
    cleared = reader.sequence(obj.get("cleared"), f"{where}.cleared")
    if not all(isinstance(n, str) for n in cleared):
        reader.fail(f"{where}.cleared must hold names (strings)")
    controls = reader.mapping(obj.get("controls"), f"{where}.controls")
    if not all(v is None or isinstance(v, str) for v in controls.values()):
        reader.fail(f"{where}.controls must map variables to strings or null")
    captured = CapturedRegistry(
        registry=reader.text(obj, "registry", where),
        module=reader.text(obj, "module", where),
        qualname=reader.text(obj, "qualname", where),
        group=reader.text(obj, "group", where),
        host=reader.text(obj, "host", where),
        env_prefix=reader.text(obj, "env_prefix", where),
        fingerprint=reader.text(obj, "fingerprint", where),
        backends=backends,
        runtime=runtime,
        cleared=[str(n) for n in cleared],
        controls=[(str(k), None if v is None else str(v)) for k, v in controls.items()],
    )
    expected = _digest(captured.group, captured.backends)
    if captured.fingerprint != expected:
        reader.fail(
            f"{where}.fingerprint does not match its backends (edited by hand?); "
            "save the state again"
        )
    return captured


def _checked_path(reader: _Reader, path: str, where: str) -> None:
    try:
        parse_path(path)
    except ValueError as exc:
        reader.fail(f"{where}: {exc}")


# -- capturing ------------------------------------------------------------------


def _resolve(registry: BackendEnumMeta, *, digest: bool = True) -> CapturedRegistry:
    """One registry's resolution now (runs discovery unless it has run).

    Without *digest* its fingerprint is left empty: a worker compares its
    resolution with the driver's row by row, which says the same as comparing
    the fingerprints, without importing :mod:`hashlib` (OpenSSL's, at every start).
    """
    state = state_of(registry)
    with state._lock:  # one consistent view, even while another thread registers
        state.ensure()
        snapshot = state.snapshot()
    defaults = registry._attn_defaults
    rows: list[BackendResolution] = []
    added = sorted(n for n in snapshot.table if n not in defaults)
    for name in (*defaults, *added):
        entry = snapshot.table.get(name)
        if entry is None:
            default = defaults[name]
            path = None if default is None else default.colon
            rows.append(BackendResolution(name, "builtin", path))
        else:
            rows.append(
                BackendResolution(
                    name, entry.origin, entry.path.colon, entry.distribution, entry.version
                )
            )
    config = state.config
    return CapturedRegistry(
        registry=config.registry,
        module=registry.__module__,
        qualname=registry.__qualname__,
        group=config.group,
        host=config.host,
        env_prefix=config.env_prefix,
        fingerprint=_digest(config.group, rows) if digest else "",
        backends=rows,
        runtime=[
            RuntimeRegistration(e.name, e.path.colon, e.registered_by)
            for e in snapshot.runtime.values()
        ],
        cleared=sorted(snapshot.cleared),
        controls=_controls(config.env_prefix),
    )


def _controls(prefix: str) -> list[tuple[str, str | None]]:
    return [(f"{prefix}_{c}", os.environ.get(f"{prefix}_{c}")) for c in _CONTROLS]


def _digest(group: str, rows: Iterable[BackendResolution]) -> str:
    import hashlib  # noqa: PLC0415 - only fingerprints need it

    lines = [f"{_FINGERPRINT_VERSION}\0{group}"]
    lines.extend(
        "\0".join((r.name, r.origin, r.path or "", r.distribution or "", r.version or ""))
        for r in rows
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def fingerprint(registry: type) -> str:
    """The hex fingerprint of what *registry* resolves every name to (runs discovery).

    Two processes have equal fingerprints exactly when every name of the
    registry resolves to the same path, from the same origin, distribution
    and version.

    Raises:
        TypeError: *registry* is not a declared registry.
    """
    state_of(registry)
    return _resolve(registry).fingerprint  # type: ignore[arg-type]


def capture_state() -> WorkerState:
    """Capture every registry declared so far, for :func:`apply_state` in a worker.

    Runs discovery where it has not run. Capture after the driver's runtime
    registrations: later ones are not in the state.
    """
    return WorkerState(_resolve(r) for r in declared_registries())


# -- applying -------------------------------------------------------------------


def _find(captured: CapturedRegistry) -> tuple[BackendEnumMeta | None, str]:
    """The registry class in this process, or why there is none."""
    for registry in declared_registries():
        if f"{registry.__module__}:{registry.__qualname__}" == captured.location:
            return registry, ""
    if "<locals>" in captured.qualname:
        return None, (
            "it was declared inside a function, so no other process can import it; "
            "declare registries at module level"
        )
    try:
        obj: object = importlib.import_module(captured.module)
        for part in captured.qualname.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001 - reported as the mismatch it is
        return None, f"cannot import it ({type(exc).__name__}: {exc})"
    if not isinstance(obj, BackendEnumMeta) or "_attn_state" not in obj.__dict__:
        return None, f"{captured.location} is not a registry here"
    group = state_of(obj).config.group
    if group != captured.group:
        return None, f"{captured.location} here is the registry of group {group!r}"
    return obj, ""


def _apply(registry: BackendEnumMeta, captured: CapturedRegistry) -> None:
    state = state_of(registry)
    with state._lock:
        for name in captured.cleared:
            state.clear(name)
        for reg in captured.runtime:
            state.register(
                Entry(
                    name=reg.name,
                    path=parse_path(reg.path),
                    origin="runtime",
                    registered_by=reg.registered_by,
                )
            )


def apply_state(state: WorkerState, *, check: bool = True) -> None:
    """Make this process resolve backends like the one that captured *state*.

    The driver's runtime registrations (and ``clear_override()`` calls) are
    made again here, before or after discovery; no backend class is imported.
    Then, with *check*, every registry's resolution is compared with the
    driver's: what its fingerprint stands for, row by row.

    Raises:
        StateMismatchError: with *check*, some backend resolves differently
            here, or a registry of the state does not exist here; the message
            names each one with both sides and what to do.
        TypeError: *state* is not a :class:`WorkerState`.
    """
    if not isinstance(state, WorkerState):
        # Untyped callers (initargs, Ray) can pass anything.
        msg = f"apply_state() expects an attn.WorkerState, got {type(state).__name__}"  # type: ignore[unreachable]
        raise TypeError(msg)
    pairs: list[tuple[CapturedRegistry, CapturedRegistry | None, str]] = []
    for captured in state.registries:
        registry, problem = _find(captured)
        if registry is None:
            pairs.append((captured, None, problem))
            continue
        _apply(registry, captured)
        if check:
            pairs.append((captured, _resolve(registry, digest=False), ""))
    if check:
        error = mismatch(pairs)
        if error is not None:
            raise error


# -- the mismatch message -------------------------------------------------------


def _differences(
    driver: CapturedRegistry, worker: CapturedRegistry
) -> list[tuple[str, BackendResolution | None, BackendResolution | None]]:
    mine = {b.name: b for b in worker.backends}
    theirs = {b.name: b for b in driver.backends}
    names = [*theirs, *(n for n in mine if n not in theirs)]
    return [(n, theirs.get(n), mine.get(n)) for n in names if theirs.get(n) != mine.get(n)]


class _Report:
    """Collects what differs, registry by registry, into one message."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.differing: list[tuple[str, str]] = []
        self.missing: list[str] = []
        self.commands: list[str] = []
        self.hosts: list[str] = []
        self.prefixes: list[str] = []
        self.controls: dict[str, tuple[str | None, str | None]] = {}

    def absent(self, driver: CapturedRegistry, problem: str) -> None:
        self.missing.append(driver.registry)
        self.hosts.append(driver.host)
        self.lines += [
            f"  {driver.registry} ({driver.location}, group {driver.group!r})",
            "    driver: declared",
            f"    worker: absent: {problem}",
        ]

    def compare(self, driver: CapturedRegistry, worker: CapturedRegistry) -> None:
        found = _differences(driver, worker)
        if not found:  # the same resolution
            return
        for name, theirs, mine in found:
            self.differing.append((driver.registry, name))
            self.lines += [
                f"  {driver.registry}.{name}",
                f"    driver: {'absent' if theirs is None else theirs.describe()}",
                f"    worker: {'absent' if mine is None else mine.describe()}",
            ]
            self.commands += _commands(theirs, mine)
        self.prefixes.append(driver.env_prefix)
        here = dict(_controls(driver.env_prefix))
        for variable, value in driver.controls:
            if here.get(variable) != value:
                self.controls[variable] = (value, here.get(variable))

    def error(self) -> StateMismatchError | None:
        if not self.lines:
            return None
        out = ["The backends in this process differ from the driver's:", *self.lines]
        out.extend(
            f"{variable} is {_shown(theirs)} in the driver and {_shown(mine)} here"
            for variable, (theirs, mine) in self.controls.items()
        )
        fixes = []
        if self.differing:
            commands = list(dict.fromkeys(self.commands))
            install = "install the same plugin versions on every node"
            if commands:
                install += f" (here: {'; '.join(commands)})"
            if self.controls:
                variables = " and ".join(self.controls)
                fixes.append(f"set the same {variables} in every process, or {install}")
            else:
                variables = " and ".join(f"{p}_PLUGINS" for p in dict.fromkeys(self.prefixes))
                fixes.append(f"{install}, or set the same {variables} in every process")
        if self.missing:
            fixes.append(
                "install the same version of "
                + ", ".join(dict.fromkeys(self.hosts))
                + " on every node, and declare registries in modules that workers import"
            )
        out.append("To fix it, " + "; ".join(fixes) + ".")
        return StateMismatchError(
            "\n".join(out),
            differences=tuple(self.differing),
            missing_registries=tuple(self.missing),
        )


def _commands(theirs: BackendResolution | None, mine: BackendResolution | None) -> list[str]:
    """The pip commands that would make this side match the driver's."""
    commands = []
    if theirs is not None and theirs.origin == "plugin" and theirs.distribution:
        pin = (
            theirs.distribution
            if theirs.version is None
            else (f"{theirs.distribution}=={theirs.version}")
        )
        commands.append(f"pip install '{pin}'")
    if (
        mine is not None
        and mine.origin == "plugin"
        and mine.distribution
        and (theirs is None or theirs.distribution != mine.distribution)
    ):
        commands.append(f"pip uninstall {mine.distribution}")
    return commands


def mismatch(
    pairs: Iterable[tuple[CapturedRegistry, CapturedRegistry | None, str]],
) -> StateMismatchError | None:
    """The error for *pairs* of (driver's, this process's or ``None``, why it is missing).

    ``None`` when every registry is present and resolves alike.
    """
    report = _Report()
    for driver, worker, problem in pairs:
        if worker is None:
            report.absent(driver, problem)
        else:
            # Row by row: equal rows are equal fingerprints, whatever the
            # algorithm that made the driver's (an older attn's, say).
            report.compare(driver, worker)
    return report.error()


def _shown(value: str | None) -> str:
    return "unset" if value is None else repr(value)


# -- Ray ------------------------------------------------------------------------


class _SetupHook:
    """A picklable, named callable that applies a captured state (see :func:`ray_setup_hook`)."""

    __slots__ = ("__name__", "check", "state")

    def __init__(self, state: WorkerState, check: bool) -> None:
        self.state = state
        self.check = check
        # Ray names the hook by __name__ when it exports it.
        self.__name__ = "attn_apply_state"

    def __call__(self) -> None:
        apply_state(self.state, check=self.check)

    def __reduce__(self) -> tuple[type, tuple[WorkerState, bool]]:
        return type(self), (self.state, self.check)

    def __repr__(self) -> str:
        return f"<attn.ray_setup_hook of {len(self.state.registries)} registries>"


def ray_setup_hook(state: WorkerState | None = None, *, check: bool = True) -> Callable[[], None]:
    """A Ray ``worker_process_setup_hook`` that applies *state* in every worker process.

    ``ray.init(runtime_env={"worker_process_setup_hook": attn.ray_setup_hook()})``
    captures the driver's state now (or uses *state*) and applies it with
    :func:`apply_state` as each Ray worker process starts; a mismatch fails
    the worker's start-up with :class:`~attn.StateMismatchError`. Ray itself
    is not imported.
    """
    return _SetupHook(capture_state() if state is None else state, check)
