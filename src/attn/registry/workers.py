"""The same backends in every process: captured states, and checks against them.

An engine's driver captures what its registries resolve to and hands it to
every worker it starts (a ``multiprocessing`` or ``concurrent.futures``
initializer, a Ray task, actor or ``worker_process_setup_hook``):

```python
state = attn.capture_state()
pool = multiprocessing.Pool(initializer=attn.apply_state, initargs=(state,))
```

[`apply_state()`][apply_state] re-makes the driver's runtime registrations in the
worker, then compares each registry's resolution with the driver's and
raises `StateMismatchError` naming every backend that resolves
differently. A [`WorkerState`][WorkerState] holds plain strings only: it is written
to JSON by ``attn state save`` and read back, validated, by ``attn doctor
--against``. Applying a state imports nothing: no backend class (a worker
that cannot import a registered path finds out when it asks for the class,
`BackendLoadError`), and no module that a state names (a
registry that no imported module declared here is a mismatch).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import asdict, astuple, dataclass, fields
from typing import TYPE_CHECKING, TypeVar

from attn import _fork

from ._mismatch import BackendResolution, control_values, mismatch
from .enum import BackendEnumMeta, declared_registries, resolution, state_of
from .paths import parse_path
from .table import Entry, fingerprint

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from .selection import Recorded

_Row = TypeVar("_Row", "BackendResolution", "RuntimeRegistration")

__all__ = ["WorkerState", "apply_state", "capture_state", "ray_setup_hook"]

#: What ``to_json`` writes as ``format``; ``from_json`` accepts this only.
STATE_FORMAT = "attn-worker-state"
STATE_VERSION = 1
_ORIGINS = ("builtin", "plugin", "runtime")
#: Modules that declared a registry in the process that pickled a state and
#: failed to import here, with why (reported by `apply_state()`).
_UNIMPORTABLE: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class RuntimeRegistration:
    """A registration made at runtime in the driver, to be made again in workers.

    ``path`` is ``module:QualName``; ``registered_by`` the module that
    registered it, as load errors name it.
    """

    name: str
    path: str
    registered_by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedRegistry:
    """One registry as the driver resolved it.

    ``registry`` is the class's name, declared in ``module`` as ``qualname``;
    ``cleared`` the names dropped with ``clear_override()`` since the last
    discovery; ``controls`` the ``<PREFIX>_*`` controls and their values
    (``None``: unset); ``selections`` the selections made with the current
    table (its settings, the explicit name if any, the choice and the rows).
    """

    registry: str
    module: str
    qualname: str
    group: str
    host: str
    env_prefix: str
    fingerprint: str
    backends: tuple[BackendResolution, ...]
    runtime: tuple[RuntimeRegistration, ...] = ()
    cleared: tuple[str, ...] = ()
    controls: tuple[tuple[str, str | None], ...] = ()
    selections: tuple[Recorded, ...] = ()

    @property
    def location(self) -> str:
        """``module:QualName`` of the registry class."""
        return f"{self.module}:{self.qualname}"


@dataclass(frozen=True, slots=True)
class WorkerState:
    """What every declared registry resolves to in the process that captured it.

    Made by [`capture_state()`][capture_state], used by [`apply_state()`][apply_state]. It pickles
    (for ``initargs``, Ray tasks and actors) and converts to and from JSON
    ([`to_json()`][to_json], [`from_json()`][from_json]).
    """

    registries: tuple[CapturedRegistry, ...]

    def __post_init__(self) -> None:
        """Hold the registries as a tuple, whatever iterable was given."""
        object.__setattr__(self, "registries", tuple(self.registries))

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickle the registries and the modules that declare them in this process.

        As when pickling a class, the receiving process imports those modules
        (every start method, Ray), so that it declares the same registries;
        only the modules of registries this process declared go along, never
        a name read from the state's data.
        """
        wanted = {r.location for r in self.registries}
        modules = [
            r.__module__
            for r in declared_registries()
            if f"{r.__module__}:{r.__qualname__}" in wanted and "<locals>" not in r.__qualname__
        ]
        return (_unpickled, (self.registries, tuple(dict.fromkeys(modules))))

    def to_json(self) -> dict[str, object]:
        """The state as JSON-ready data (what ``attn state save`` writes)."""
        texts = [f.name for f in fields(CapturedRegistry) if f.type == "str"]
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "registries": [
                {
                    **{name: getattr(r, name) for name in texts},
                    "controls": dict(r.controls),
                    "cleared": list(r.cleared),
                    "runtime": [asdict(x) for x in r.runtime],
                    "backends": [asdict(b) for b in r.backends],
                    "selections": [
                        {**asdict(c), "settings": dict(c.settings), "tried": list(c.tried)}
                        for c in r.selections
                    ],
                }
                for r in self.registries
            ],
        }

    @classmethod
    def from_json(cls, data: object) -> WorkerState:
        """Read a state written by [`to_json()`][to_json], checking every field.

        Raises:
            ValueError: *data* is not such a state (the message says where).
        """
        top = _mapping(data, "the state")
        if top.get("format") != STATE_FORMAT:
            _fail(f"'format' is {top.get('format')!r}, expected {STATE_FORMAT!r}")
        if top.get("version") != STATE_VERSION:
            _fail(f"'version' is {top.get('version')!r}, expected {STATE_VERSION}")
        items = _sequence(top.get("registries"), "'registries'")
        return cls(
            tuple(_registry_from_json(item, f"registries[{i}]") for i, item in enumerate(items))
        )


def _unpickled(registries: tuple[CapturedRegistry, ...], modules: tuple[str, ...]) -> WorkerState:
    """A pickled `WorkerState`, once the modules that declare its registries are imported."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001, PERF203 - apply_state reports each as a mismatch
            _UNIMPORTABLE[module] = f"{type(exc).__name__}: {exc}"
    return WorkerState(registries)


# -- reading JSON ---------------------------------------------------------------


def _fail(message: str) -> None:
    msg = f"not a saved attn state: {message}"
    raise ValueError(msg)


def _mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        _fail(f"{where} is {type(value).__name__}, expected an object")
    return value  # type: ignore[return-value]


def _sequence(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        _fail(f"{where} is {type(value).__name__}, expected an array")
    return value  # type: ignore[return-value]


def _texts(record: type, obj: Mapping[str, object], where: str) -> dict[str, str | None]:
    """The ``str`` and ``str | None`` fields of a *record* type, read from *obj*, checked."""
    values: dict[str, str | None] = {}
    for field in fields(record):
        value, null = obj.get(field.name), field.type == "str | None"
        if field.type != "str" and not null:
            continue  # the containers, which the caller reads
        if not isinstance(value, str) and not (null and value is None and field.name in obj):
            expected = "a string or null" if null else "a string"
            _fail(f"{where}.{field.name} is {value!r}, expected {expected}")
        values[field.name] = value  # type: ignore[assignment]
        if field.name == "origin" and value not in _ORIGINS:
            _fail(f"{where}.origin is {value!r}, expected builtin, plugin or runtime")
        if field.name == "path" and value is not None:
            try:
                parse_path(value)
            except ValueError as exc:
                _fail(f"{where}.path: {exc}")
    return values


def _rows(record: type[_Row], obj: Mapping[str, object], key: str, where: str) -> tuple[_Row, ...]:
    rows = []
    for i, raw in enumerate(_sequence(obj.get(key), f"{where}.{key}")):
        here = f"{where}.{key}[{i}]"
        rows.append(record(**_texts(record, _mapping(raw, here), here)))  # type: ignore[arg-type]
    return tuple(rows)


def _setting(value: object, where: str) -> object:
    """A setting's value read from JSON: text, a number, a bool, null, or arrays of them."""
    if isinstance(value, list):
        return tuple(_setting(v, where) for v in value)
    if type(value) not in {str, int, float, bool, type(None)}:
        _fail(f"{where} is {value!r}, expected text, a number, a bool, null or an array")
    return value


def _selections(obj: Mapping[str, object], where: str) -> tuple[Recorded, ...]:
    """The ``selections`` of a registry (absent in states saved before they were recorded)."""
    if not obj.get("selections"):  # absent, or none: selection need not be imported
        _sequence(obj.get("selections", []), f"{where}.selections")
        return ()
    with _fork.importing():
        from .selection import Recorded  # noqa: PLC0415 - a lookup needs no selection

    rows = []
    for i, raw in enumerate(_sequence(obj["selections"], f"{where}.selections")):
        here = f"{where}.selections[{i}]"
        item = _mapping(raw, here)
        settings = _mapping(item.get("settings"), f"{here}.settings")
        tried = _sequence(item.get("tried"), f"{here}.tried")
        if not all(isinstance(t, str) for t in tried):
            _fail(f"{here}.tried must hold lines (strings)")
        rows.append(
            Recorded(
                **_texts(Recorded, item, here),  # type: ignore[arg-type]
                settings=tuple(
                    (k, _setting(v, f"{here}.settings.{k}")) for k, v in sorted(settings.items())
                ),
                tried=tuple(str(t) for t in tried),
            )
        )
    return tuple(rows)


def _registry_from_json(item: object, where: str) -> CapturedRegistry:
    obj = _mapping(item, where)
    backends = _rows(BackendResolution, obj, "backends", where)
    runtime = _rows(RuntimeRegistration, obj, "runtime", where)
    cleared = _sequence(obj.get("cleared"), f"{where}.cleared")
    if not all(isinstance(n, str) for n in cleared):
        _fail(f"{where}.cleared must hold names (strings)")
    controls = _mapping(obj.get("controls"), f"{where}.controls")
    if not all(v is None or isinstance(v, str) for v in controls.values()):
        _fail(f"{where}.controls must map variables to strings or null")
    captured = CapturedRegistry(
        **_texts(CapturedRegistry, obj, where),  # type: ignore[arg-type]
        backends=backends,
        runtime=runtime,
        cleared=tuple(str(n) for n in cleared),
        controls=tuple((str(k), None if v is None else str(v)) for k, v in controls.items()),
        selections=_selections(obj, where),
    )
    if captured.fingerprint != fingerprint(captured.group, map(astuple, backends)):
        _fail(
            f"{where}.fingerprint does not match its backends (edited by hand?); "
            "save the state again"
        )
    return captured


# -- capturing ------------------------------------------------------------------


def _capture(registry: BackendEnumMeta) -> CapturedRegistry:
    """One registry's resolution now (runs discovery unless it has run)."""
    state = state_of(registry)
    with _fork.LOCK:  # the table, registrations and clears of one moment
        rows = resolution(registry)
        snapshot = state.snapshot()
    config = state.config
    return CapturedRegistry(
        registry=config.registry,
        module=registry.__module__,
        qualname=registry.__qualname__,
        group=config.group,
        host=config.host,
        env_prefix=config.env_prefix,
        fingerprint=fingerprint(config.group, rows),
        backends=tuple(BackendResolution(*row) for row in rows),
        runtime=tuple(
            RuntimeRegistration(e.name, e.path.colon, e.registered_by)
            for e in snapshot.runtime.values()
        ),
        cleared=tuple(sorted(snapshot.cleared)),
        controls=control_values(config.env_prefix),
        selections=_recorded(registry),
    )


def _recorded(registry: BackendEnumMeta) -> tuple[Recorded, ...]:
    """The selections made with *registry*'s table; none if no selection was ever made here."""
    if f"{__package__}.selection" not in sys.modules:
        return ()  # and a worker's start imports no selection module
    with _fork.importing():
        from .selection import recorded  # noqa: PLC0415

    return recorded(registry)


def capture_state() -> WorkerState:
    """Capture every registry declared so far, for [`apply_state()`][apply_state] in a worker.

    Runs discovery where it has not run. Capture after the driver's runtime
    registrations: later ones are not in the state.
    """
    return WorkerState(tuple(_capture(r) for r in declared_registries()))


# -- applying -------------------------------------------------------------------


def _find(captured: CapturedRegistry) -> tuple[BackendEnumMeta | None, str]:
    """The registry class in this process, or why there is none; nothing is imported."""
    declared = {f"{r.__module__}:{r.__qualname__}": r for r in declared_registries()}
    found = declared.get(captured.location)
    if found is None and captured.module == "__main__":  # a spawned child's copy of the script
        found = declared.get(f"__mp_main__:{captured.qualname}")
    if found is not None:
        group = state_of(found).config.group
        if group == captured.group:
            return found, ""
        return None, f"{captured.location} here is the registry of group {group!r}"
    if "<locals>" in captured.qualname:
        return None, (
            "it was declared inside a function, so no other process can import it; "
            "declare registries at module level"
        )
    if captured.module in _UNIMPORTABLE:
        return None, f"cannot import it ({_UNIMPORTABLE[captured.module]})"
    return None, (
        f"no module imported here declares it (a state never makes attn import one); "
        f"import {captured.module} before applying the state"
    )


def _apply(registry: BackendEnumMeta, captured: CapturedRegistry) -> None:
    state = state_of(registry)
    with _fork.LOCK:
        for name in captured.cleared:
            state.clear(name)
        for reg in captured.runtime:
            entry = Entry(
                reg.name, parse_path(reg.path), "runtime", registered_by=reg.registered_by
            )
            state.register(entry)


def apply_state(state: WorkerState, *, check: bool = True) -> None:
    """Make this process resolve backends like the one that captured *state*.

    The driver's runtime registrations (and ``clear_override()`` calls) are
    made again here, before or after discovery; nothing of the state is
    imported. Then, with *check*, every registry's resolution is compared
    with the driver's (what its fingerprint stands for, row by row), and each
    selection the driver made is made again with the same settings (which
    imports the candidates it tries, as `select()` does).

    Raises:
        StateMismatchError: with *check*, some backend resolves differently
            here, a registry of the state is not declared here, or a
            selection chooses differently here; the message names each one
            with both sides (choices and reasons) and what to do.
        TypeError: *state* is not a [`WorkerState`][WorkerState].
    """
    if not isinstance(state, WorkerState):
        # Untyped callers (initargs, Ray) can pass anything.
        msg = f"apply_state() expects an attn.WorkerState, got {type(state).__name__}"  # type: ignore[unreachable]
        raise TypeError(msg)
    pairs: list[tuple[CapturedRegistry, tuple[BackendResolution, ...] | None, str]] = []
    chose: list[tuple[str, list[str]]] = []
    for captured in state.registries:
        registry, problem = _find(captured)
        if registry is not None:
            _apply(registry, captured)
        if check:
            # Row by row: equal rows are equal fingerprints, whatever the
            # algorithm that made the driver's (an older attn's, say), and no
            # hashlib (OpenSSL's) to import at every worker's start.
            rows = None if registry is None else resolution(registry)
            mine = None if rows is None else tuple(BackendResolution(*row) for row in rows)
            pairs.append((captured, mine, problem))
    for captured in state.registries if check else ():
        registry, _ = _find(captured)
        if registry is not None and captured.selections:  # no registry: a mismatch already
            with _fork.importing():
                from .selection import reselect  # noqa: PLC0415 - a lookup needs no selection

            shown = [reselect(registry, driver) for driver in captured.selections]
            chose += [(captured.registry, lines) for lines in shown if lines]
    error = mismatch(pairs, chose)
    if error is not None:
        raise error


# -- Ray ------------------------------------------------------------------------


class _SetupHook:
    """A picklable, named callable that applies a captured state (see `ray_setup_hook()`)."""

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
    [`apply_state()`][apply_state] as each Ray worker process starts; a mismatch fails
    the worker's start-up with `StateMismatchError`. Ray itself
    is not imported.
    """
    return _SetupHook(capture_state() if state is None else state, check)
