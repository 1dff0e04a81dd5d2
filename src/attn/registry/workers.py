"""The same backends in every process: a driver's captured state, applied and checked in workers."""

from __future__ import annotations

import functools
import importlib
import sys
from dataclasses import MISSING, astuple, dataclass, fields, is_dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from attn import _fork

from .controls import canonical_name, control_values, exporting, read_controls
from .enum import _DECLARED, BackendEnumMeta, declared_registries, resolution, state_of
from .errors import StateMismatchError, parse_path
from .table import Entry, fingerprint

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from .selection import Recorded

__all__ = ["WorkerState", "apply_state", "capture_state", "ray_setup_hook"]

_HEADER = {"format": "attn-worker-state", "version": 1}
_UNIMPORTABLE: dict[str, str] = {}  # module: why unpickling a state could not import it
_KEPT_OUT: dict[str, str] = {}  # module: the plugin, kept out here, whose code it is
_LOCAL_FIX = "call register_backend() and clear_override() in the driver, before capture_state()"


@dataclass(frozen=True, slots=True)
class BackendResolution:
    """What one name of a registry resolves to in one process (``path``: ``module:QualName``)."""

    name: str
    origin: str  # builtin, plugin or runtime
    path: str | None  # None for an unregistered member
    distribution: str | None = None
    version: str | None = None


@dataclass(frozen=True, slots=True)
class RuntimeRegistration:
    """A runtime registration of the driver (``path`` is ``module:QualName``), made again."""

    name: str
    path: str
    registered_by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedRegistry:
    """One registry as the driver resolved it, with its ``clear_override()`` names and controls."""

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
    host_version: str | None = None  # the host's version plugins were checked against

    @property
    def location(self) -> str:
        """``module:QualName`` of the registry class."""
        return f"{self.module}:{self.qualname}"


@dataclass(frozen=True, slots=True)
class WorkerState:
    """What every declared registry resolves to, as captured; it pickles, and converts to JSON."""

    registries: tuple[CapturedRegistry, ...]

    def __post_init__(self) -> None:
        """Hold the registries as a tuple."""
        object.__setattr__(self, "registries", tuple(self.registries))

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickle as JSON (newer fields take defaults) with the modules unpickling imports."""
        wanted = {r.location for r in self.registries if "<locals>" not in r.qualname}
        modules = (r.__module__ for key, r in tuple(_DECLARED.items()) if key in wanted)  # a copy
        return (_unpickled, (list(map(_json, self.registries)), tuple(dict.fromkeys(modules))))

    def to_json(self) -> dict[str, object]:
        """The state as JSON-ready data (what ``attn state save`` writes)."""
        return {**_HEADER, "registries": [_json(r) for r in self.registries]}

    @classmethod
    def from_json(cls, data: object) -> WorkerState:
        """Read a state written by [`to_json()`][to_json], checking every field.

        Raises:
            ValueError: *data* is not such a state (the message says where).
        """
        top = _of(dict, data, "the state")
        for k, expected in _HEADER.items():
            if top.get(k) != expected:
                _fail(f"{k!r} is {repr(top[k]) if k in top else 'missing'}, expected {expected!r}")
        registries: list[CapturedRegistry] = []
        for i, raw in enumerate(_of(list, top.get("registries"), "'registries'")):
            registries.append(r := _read(CapturedRegistry, raw, f"registries[{i}]"))
            if r.fingerprint != fingerprint(r.group, map(astuple, r.backends)):
                _fail(f"registries[{i}].fingerprint does not match its backends (edited?)")
            rows = {(b.name, b.path) for b in r.backends if b.origin == "runtime"}
            if odd := [g.name for g in r.runtime if (g.name, g.path) not in rows]:
                _fail(f"registries[{i}].runtime has {odd[0]!r}, not a runtime row of its backends")
        return cls(tuple(registries))


def _unpickled(registries: list[object], modules: tuple[str, ...]) -> WorkerState:
    state = WorkerState(tuple(_read(CapturedRegistry, r, "a pickled state") for r in registries))
    kept_out = {  # the driver's plugins that the controls here keep out: their code stays out
        canonical_name(d)
        for r in state.registries
        for d in (b.distribution for b in r.backends if b.origin == "plugin")
        if d and read_controls(r.env_prefix).leaves_out(d)
    }
    plugins = {r.module: r.host for r in state.registries if canonical_name(r.host) in kept_out}
    for module in modules:
        if dist := plugins.get(module):  # a registry a plugin declares with itself as the host
            _KEPT_OUT[module] = dist
            continue
        _KEPT_OUT.pop(module, None)
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - apply_state reports each as a mismatch
            _UNIMPORTABLE[module] = f"cannot import it ({type(exc).__name__}: {exc})"
    return state


def _json(value: object, name: str = "") -> object:
    if is_dataclass(value):
        return {f.name: _json(getattr(value, f.name), f.name) for f in fields(value)}
    if name in {"controls", "settings"}:
        return {k: _json(v) for k, v in value}  # type: ignore[attr-defined]
    return [_json(v) for v in value] if isinstance(value, tuple) else value


def _fail(message: str) -> NoReturn:
    raise ValueError(f"not a saved attn state: {message}")


def _of(kind: type[Any], value: object, where: str) -> Any:  # noqa: ANN401 - a dict or a list
    if not isinstance(value, kind):
        expected = "an object" if kind is dict else "an array"
        _fail(f"{where} is {type(value).__name__}, expected {expected}")
    return value


def _setting(value: object, where: str) -> object:
    if isinstance(value, list):
        return tuple(_setting(v, where) for v in value)
    if type(value) not in {str, int, float, bool, type(None)}:
        _fail(f"{where} is {value!r}, expected text, a number, a bool, null or an array")
    return value


def _read(record: type[Any], raw: object, where: str) -> Any:  # noqa: ANN401 - a *record*
    obj = _of(dict, raw, where)  # a field with a default may be absent (a state written before it)
    kept = (f for f in fields(record) if f.name in obj or f.default is f.default_factory is MISSING)
    return record(**{f.name: _field(f.name, f.type, obj, where) for f in kept})


def _text(name: str, obj: Mapping[str, object], null: bool, here: str) -> object:
    value = obj.get(name)
    if not isinstance(value, str) and not (null and value is None and name in obj):
        _fail(f"{here} is {value!r}, expected a string{' or null' if null else ''}")
    if name == "origin" and value not in {"builtin", "plugin", "runtime"}:
        _fail(f"{here} is {value!r}, expected builtin, plugin or runtime")
    if name == "path" and value is not None:
        try:
            parse_path(value)
        except ValueError as exc:
            _fail(f"{here}: {exc}")
    return value


def _field(name: str, kind: object, obj: Mapping[str, object], where: str) -> object:
    value, here = obj.get(name), f"{where}.{name}"
    if kind in {"str", "str | None"}:
        return _text(name, obj, kind != "str", here)
    if name == "controls":
        pairs = tuple(_of(dict, value, here).items())
        if not all(v is None or isinstance(v, str) for _, v in pairs):
            _fail(f"{here} must map variables to strings or null")
        return pairs
    if name == "settings":
        items = sorted(_of(dict, value, here).items())
        return tuple((k, _setting(v, f"{here}.{k}")) for k, v in items)
    if kind == "tuple[str, ...]":
        texts = tuple(_of(list, value, here))
        if not all(isinstance(v, str) for v in texts):
            _fail(f"{here} must hold {'lines' if name == 'tried' else 'names'} (strings)")
        return texts
    if name == "selections" and value == []:  # none: the selection module is not imported
        return ()
    if (rows := {"backends": BackendResolution, "runtime": RuntimeRegistration}.get(name)) is None:
        with _fork.importing():
            from .selection import Recorded  # noqa: PLC0415 - a lookup needs no selection
        rows = Recorded
    return tuple(_read(rows, item, f"{here}[{i}]") for i, item in enumerate(_of(list, value, here)))


def mismatch(
    pairs: Iterable[tuple[CapturedRegistry, tuple[BackendResolution, ...] | None, str]],
    chose: Sequence[tuple[str, list[str], bool]] = (),  # True: <PREFIX>_<NOUN> differs
) -> StateMismatchError | None:
    """The error, if any, for (driver's registry, rows here or None, why) and differing *chose*."""
    lines, differing, missing, commands = [], [], [], []
    unpreferable = local = plugins = False  # local: a difference this process's own calls made
    differ: dict[str, tuple[str | None, str | None]] = {}
    versions: dict[str, tuple[str, str | None]] = {}  # a host of another version here: a cause
    selecting: dict[str, None] = {}  # <PREFIX>_PLUGINS of each registry that differs
    for driver, rows, problem in pairs:
        if rows is None:
            missing.append(driver)
            head = f"{driver.registry} ({driver.location}, group {driver.group!r})"
            lines += [f"  {head}", "    driver: declared", f"    worker: absent: {problem}"]
            continue
        theirs, mine = {b.name: b for b in driver.backends}, {b.name: b for b in rows}
        found = [n for n in dict.fromkeys([*theirs, *mine]) if theirs.get(n) != mine.get(n)]
        here, prefix = dict(control_values(driver.env_prefix)), driver.env_prefix
        changed = {  # the controls that differ in meaning, where a backend differs
            v: (was, here.get(v))
            for v, was in driver.controls
            if found and _meaning(prefix, v, was) != _meaning(prefix, v, here.get(v))
        }
        differ |= changed
        if found and (change := _host_change(driver)):
            versions[driver.host] = change
        for name in found:
            sides = theirs.get(name), mine.get(name)
            differing.append((driver.registry, name))
            lines.append(f"  {driver.registry}.{name}")
            lines += [f"    driver: {_described(sides[0])}", f"    worker: {_described(sides[1])}"]
            pip, brings = _commands(driver, *sides)  # brings a plugin no preference could pick
            commands += pip
            unpreferable |= brings or any(b is None or b.origin != "plugin" for b in sides)
            origins = [None if b is None else b.origin for b in sides]  # a call made here alone?
            plugin_gone = origins[0] == "plugin" and not (pip or changed or driver.host in versions)
            local |= "runtime" in origins or plugin_gone
            plugins |= "plugin" in origins
            selecting[f"{prefix}_PLUGINS"] = None
    if not lines and not chose:
        return None
    out = ["The backends in this process differ from the driver's:", *lines] if lines else []
    if chose:
        out.append("The selections in this process differ from the driver's:")
        out += [line for _, shown, _ in chose for line in shown]
    out += [
        f"{v} is {_shown(was)} in the driver and {_shown(now)} here (to match: {exporting(v, was)})"
        for v, (was, now) in differ.items()
    ]
    out += [
        f"{h} is {was} in the driver and {now or 'not installed'} here"
        for h, (was, now) in versions.items()
    ]
    fixes = [f"install {h}=={was} on every node" for h, (was, _) in versions.items()]
    fixes += [_LOCAL_FIX] if local else []
    if differing and (plugins or not local):  # no plugin undoes a registration made here
        fixes.append(_plugin_fix(commands, list(differ), [*selecting], unpreferable))
    if unexplained := [r for r in missing if not (differ and r.module in _KEPT_OUT)]:
        hosts = ", ".join(dict.fromkeys(r.host for r in unexplained))  # else: the controls
        same = f"install the same version of {hosts} on every node, and declare registries in"
        fixes.append(f"{same} modules that workers import")
    if not differing and any(not by_variable for *_, by_variable in chose):  # else: the table
        kernels = "install the same kernel packages on every node (a rejection above names what"
        fixes.append(f"{kernels} is missing), or pass settings that hold on every node")
    fixes += ["set each variable named above alike on every node"] * any(c[2] for c in chose)
    out.append("To fix it, " + "; ".join(fixes) + ".")
    return StateMismatchError(
        "\n".join(out),
        differences=tuple(differing),
        missing_registries=tuple(r.registry for r in missing),
        selections=tuple(dict.fromkeys(registry for registry, *_ in chose)),
    )


def _host_change(driver: CapturedRegistry) -> tuple[str, str | None] | None:
    """The host's version in the driver and here, if they differ (a cause plugins do not undo)."""
    from ._metadata import installed_version  # noqa: PLC0415 - an error's path only

    was, now = driver.host_version, installed_version(driver.host)
    return None if was is None or was == now else (was, now)


def _plugin_fix(
    commands: list[str], controls: list[str], selecting: list[str], unpreferable: bool
) -> str:
    install = "install the same plugin versions on every node"
    install += f" (here: {'; '.join(dict.fromkeys(commands))})" if commands else ""
    same = f"set the same {' and '.join(controls or selecting)} in every process"
    if not controls:  # the plugins every process uses can also be named alike
        return f"{install}, or {same}"
    if not commands:  # the same plugins are installed: the controls make the difference
        return same
    # Unpreferable: a plugin to install, or a built-in: no control alone makes them agree.
    return f"{install}, and {same}" if unpreferable else f"{same}, or {install}"


def _meaning(prefix: str, variable: str, value: str | None) -> object:
    """What *value* of the control *variable* does: names as pip compares them, empty = unset."""
    c = read_controls(prefix, {} if value is None else {variable: value})
    return c.disable_plugins, c.only and set(c.only), set(c.block), c.prefer


def _described(row: BackendResolution | None) -> str:
    if row is None:
        return "absent"
    if row.path is None:
        return "unregistered (no default, nothing registered)"
    label = " ".join(filter(None, (row.distribution or "an unknown distribution", row.version)))
    where = {"plugin": f"plugin {label}", "runtime": "runtime registration"}
    return f"{parse_path(row.path).dotted} ({where.get(row.origin, 'built-in')})"


def _commands(driver: CapturedRegistry, *sides: BackendResolution | None) -> tuple[list[str], bool]:
    """The pip commands to match *driver* (its plugins kept); True if one installs its plugin."""
    from ._findings import check_host_requirement  # noqa: PLC0415 - an error's path only
    from ._metadata import installed_version  # noqa: PLC0415

    (theirs, mine), installs, removes = sides, [], []
    if theirs and theirs.origin == "plugin" and (wanted := theirs.distribution):
        pin = "" if theirs.version is None else f"=={theirs.version}"
        if not pin or (here := installed_version(wanted)) != theirs.version:  # else: the controls
            command = f"pip install '{wanted}{pin}'"
            # pip keeps a version that ==1.0 takes (1.0.0, 1.0+cu121): reinstall exactly 1.0.
            if pin and here and check_host_requirement([wanted + pin], wanted, here).code is None:
                command = f"pip install --force-reinstall --no-deps '{wanted}={pin}'"
            installs.append(command)
    kept = {b.distribution for b in driver.backends if b.origin == "plugin"}
    drivers = read_controls(driver.env_prefix, {v: was for v, was in driver.controls if was})
    mine_dist = mine.distribution if mine and mine.origin == "plugin" else None
    if mine_dist and mine_dist not in kept and not drivers.leaves_out(mine_dist):
        removes.append(f"pip uninstall {mine_dist}")
    return [*installs, *removes], bool(installs)


def _shown(value: str | None) -> str:
    return "unset" if value is None else repr(value)


def _capture(registry: BackendEnumMeta) -> CapturedRegistry:
    state = state_of(registry)
    if selected := f"{__package__}.selection" in sys.modules:  # else no selection was made here
        with _fork.importing():
            from .selection import recorded  # noqa: PLC0415
    with _fork.LOCK:  # the table, registrations, clears, selections and host of one moment
        rows, snapshot, host = resolution(registry), state.snapshot(), state.ensure().host_version
        made: tuple[Recorded, ...] = recorded(registry) if selected else ()
    runtime = [(e.name, e.path.colon, e.registered_by) for e in snapshot.runtime.values()]
    return CapturedRegistry(
        **{k: getattr(state.config, k) for k in ("registry", "group", "host", "env_prefix")},
        module=registry.__module__,
        qualname=registry.__qualname__,
        fingerprint=fingerprint(state.config.group, rows),
        backends=tuple(BackendResolution(*row) for row in rows),
        runtime=tuple(RuntimeRegistration(*r) for r in runtime),
        cleared=tuple(sorted(snapshot.cleared)),
        controls=snapshot.controls or control_values(state.config.env_prefix),
        selections=made,
        host_version=host,
    )


def capture_state() -> WorkerState:
    """Capture every registry declared so far, for [`apply_state()`][apply_state] in a worker."""
    return WorkerState(tuple(_capture(r) for r in declared_registries()))


def _find(captured: CapturedRegistry) -> tuple[BackendEnumMeta | None, str]:
    found = _DECLARED.get(captured.location)
    if found is None and captured.module == "__main__":  # a spawned child's copy of the script
        found = _DECLARED.get(f"__mp_main__:{captured.qualname}")
    if found is not None:
        if (group := state_of(found).config.group) == captured.group:
            return found, ""
        return None, f"{captured.location} here is the registry of group {group!r}"
    if "<locals>" in captured.qualname:
        why = "it was declared inside a function, so no other process can import it"
        return None, f"{why}; declare registries at module level"
    why = "no module imported here declares it (a state never makes attn import one); import "
    why += f"{captured.module} before applying the state (with 'attn doctor --against FILE', add "
    why += f"--registry {captured.location})"
    if dist := _KEPT_OUT.get(captured.module):  # why unpickling did not import it
        return None, f"its module is code of {dist}, kept out here"
    return None, _UNIMPORTABLE.get(captured.module) or why


def apply_state(state: WorkerState, *, check: bool = True) -> None:
    """Make this process resolve backends like the one that captured *state*.

    Its registrations and clears are made again (importing nothing), then with *check* compared.

    Raises:
        StateMismatchError: with *check*, a backend, selection or registry differs here.
        TypeError: *state* is not a [`WorkerState`][WorkerState].
    """
    if not isinstance(state, WorkerState):  # untyped callers (initargs, Ray) pass anything
        raise TypeError(f"apply_state() expects an attn.WorkerState, got {type(state).__name__}")
    pairs, chose = [], []
    for captured, registry, why in [(c, *_find(c)) for c in state.registries]:
        rows = None
        if registry is not None:
            with _fork.LOCK:
                for name in captured.cleared:
                    registry._attn_state.clear(name)
                for r in captured.runtime:
                    path, by = parse_path(r.path), r.registered_by
                    registry._attn_state.register(Entry(r.name, path, "runtime", registered_by=by))
        if registry is not None and check:
            # Row by row, not by fingerprint: no hashlib (OpenSSL's) at every worker's start.
            rows = tuple(BackendResolution(*row) for row in resolution(registry))
            if captured.selections:
                with _fork.importing():
                    from .selection import reselect  # noqa: PLC0415 - a lookup needs no selection
                shown = [reselect(registry, driver) for driver in captured.selections]
                chose += [(captured.registry, *made) for made in shown if made[0]]
        pairs.append((captured, rows, why))
    if check and (error := mismatch(pairs, chose)) is not None:
        raise error


class _SetupHook(functools.partial[None]):
    __name__ = "attn_apply_state"  # Ray names the hook by it, and pickles it


def ray_setup_hook(state: WorkerState | None = None, *, check: bool = True) -> Callable[[], None]:
    """A Ray ``worker_process_setup_hook`` applying *state* (default: captured now) in workers."""
    return _SetupHook(apply_state, capture_state() if state is None else state, check=check)
