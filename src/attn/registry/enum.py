"""The Enum base of every registry, its metaclass, and the backends plugins add."""

from __future__ import annotations

import enum
import operator
import sys
import warnings
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, final

from attn import _fork

from . import errors
from .controls import canonical_name
from .errors import ClassPath, PluginWarning, UnknownBackendError, joined, parse_path, shown
from .loading import Backend, LoadContext, cleared_note, code_root, load, loading_now, resolve
from .table import Entry, RegistryConfig, RegistryState, fingerprint

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from typing_extensions import Self

    from .selection import Selection

__all__ = ["BackendEnum", "PluginBackend", "register"]

_I = TypeVar("_I")  # the registry's interface, which get_class() returns a subclass of

_GROUPS: dict[str, dict[str, None]] = {}  # by env prefix, the (ordered) groups of one host
_DECLARED: dict[str, BackendEnumMeta] = {}  # every registry, by module:qualname
#: Called with each registry as it is declared: the testing kit isolates one declared mid-test.
ON_DECLARE: list[Callable[[BackendEnumMeta], object]] = []
_NOT_LOADING = LoadContext("", "", "", "", "")


def _path(where: str, value: object) -> ClassPath:  # a member's value, or interface=, named
    try:
        return parse_path(value)
    except errors.InvalidPathError as exc:
        raise type(exc)(value, f"{exc.reason} (the value of {where})") from None


def _keyword(name: str) -> Any:  # a property of the metaclass: read-only, per registry
    return property(lambda cls: str(getattr(cls._attn_state.config, name)))


class BackendEnumMeta(enum.EnumMeta):
    """Metaclass of registries: name lookup runs discovery and explains failures."""

    _attn_state: RegistryState
    _attn_defaults: dict[str, ClassPath | None]
    _attn_interface: type | str

    def __new__(
        metacls,
        cls: str,
        bases: tuple[type, ...],
        classdict: Any,
        *,
        group: str | None = None,
        host: str | None = None,
        interface: type | str | None = None,
        noun: str | None = None,
        env_prefix: str | None = None,
        register_hint: str | None = None,
        **kwds: Any,
    ) -> BackendEnumMeta:
        api = {n for k in (*bases, metacls) for c in k.__mro__ for n in vars(c) if n[0] != "_"}
        if shadow := [name for name in classdict._member_names if name in api]:
            msg = f"{cls}: member {shadow[0]!r} would shadow {cls}.{shadow[0]} of the registry's"
            raise TypeError(msg + " own API; give the backend another name")
        new = super().__new__(metacls, cls, bases, classdict, **kwds)
        members: list[tuple[str, Any]] = list(new.__members__.items())
        if group is None and members:
            raise TypeError(f"{cls} declares members but no entry-point group (group=...)")
        if group is None:
            return new
        if not (isinstance(host, str) and isinstance(group, str)):  # untyped code: group=5
            raise TypeError(f"{cls} must declare host=... (the host's distribution) with group=...")
        if aliases := [f"{n} repeats the value of {m.name}" for n, m in members if m.name != n]:
            raise TypeError(f"{cls}: members must have distinct values, but {joined(aliases)}")
        paths = {n: None if m.value is None else _path(f"{cls}.{n}", m.value) for n, m in members}
        if isinstance(interface, str):
            _path(f"{cls}'s interface=", interface)  # fails here, as a member's value does
        elif not isinstance(interface, (type, type(None))):  # untyped code can pass anything
            msg = f"{cls}: interface= takes a class or a 'module:QualName' string"  # type: ignore[unreachable]
            raise TypeError(f"{msg}, not {shown(interface)}")
        prefix = env_prefix or host.upper().replace("-", "_").replace(".", "_")
        if not (prefix.isidentifier() and prefix.isascii()):  # `export PREFIX_STRICT=1` must work
            msg = f"{cls}: the prefix {prefix!r} (env_prefix, else host) cannot start a variable"
            raise ValueError(msg + "; pass env_prefix='...' of ASCII letters, digits and _")
        noun = noun or f"{host} backend"
        hint = register_hint or f"attn.registry.register({cls}.NAME, 'module:Class')"
        module = new.__module__  # attn's own registries need no --registry in hints
        where = None if module == "attn.backends" else f"{module}:{new.__qualname__}"
        config = RegistryConfig(cls, group, host, noun, prefix, hint, code_root(module), where)
        (groups := _GROUPS.setdefault(prefix, {}))[group] = None
        type.__setattr__(new, "_attn_defaults", paths)  # the default paths of the members
        type.__setattr__(new, "_attn_state", RegistryState(config, paths, groups))
        type.__setattr__(new, "_attn_interface", Backend if interface is None else interface)
        _DECLARED[f"{new.__module__}:{new.__qualname__}"] = new
        for hook in ON_DECLARE:
            hook(new)
        return new

    group, host, noun, env_prefix = map(_keyword, ("group", "host", "noun", "env_prefix"))

    def __getitem__(cls, name: str) -> Any:
        """The member or plugin-added backend called *name*, else `UnknownBackendError`."""
        if "_attn_state" not in cls.__dict__:
            return super().__getitem__(name)
        generation = cls._attn_state.ready()
        if not isinstance(name, str):  # no member and no plugin has one (nor a TypeError)
            raise _unknown(cls, name)
        if (member := cls._member_map_.get(name)) is not None:
            return member
        if cls._attn_state.lookup(name) is None:
            raise _unknown(cls, name)
        with _fork.LOCK:  # two threads looking a new name up get one object
            cache: dict[str, PluginBackend[Any]] = cls.__dict__.get("_attn_added", {})
            if (backend := cache.get(name)) is None or backend._generation is not generation:
                backend = cache[name] = PluginBackend(cls, name, generation)
                type.__setattr__(cls, "_attn_added", cache)
            return backend

    def __getattr__(cls, name: str) -> Any:
        """A member, as `enum` gives it before Python 3.12; for a plugin's name, how to ask."""
        if (member := vars(cls).get("_member_map_", {}).get(name)) is not None:
            return member
        plugin = name[:1] != "_" and "_attn_state" in vars(cls) and cls._attn_state.lookup(name)
        hint = f"; a backend a plugin adds is no attribute: use {cls.__name__}[{name!r}]"
        msg = f"type object {cls.__name__!r} has no attribute {name!r}{hint if plugin else ''}"
        raise AttributeError(msg, name=name, obj=cls)


def valid_names(cls: BackendEnumMeta) -> list[str]:
    """Built-in names in enum order, then plugin-added names, sorted."""
    return [*cls._attn_defaults, *sorted(set(cls._attn_state.names()) - set(cls._attn_defaults))]


def resolution(cls: BackendEnumMeta) -> list[tuple[str, str, str | None, str | None, str | None]]:
    """(name, origin, path, distribution, version) of every name, in `valid_names()` order."""
    state, defaults = cls._attn_state, cls._attn_defaults
    with _fork.LOCK:  # one view of the table, even while another thread registers
        table = {name: state.lookup(name) for name in state.names()}
    return [
        (name, "builtin", None if (p := defaults[name]) is None else p.colon, None, None)
        if (e := table.get(name)) is None  # a distribution's name normalized, as installers differ
        else (name, e.origin, e.path.colon, canonical_name(e.distribution or "") or None, e.version)
        for name in (*defaults, *sorted(n for n in table if n not in defaults))
    ]


def close_matches(name: str, valid: Iterable[str], n: int = 3, cutoff: float = 0.75) -> list[str]:
    """Names close to *name* (difflib's 0-1 *cutoff*), ignoring case: case variants all stay."""
    with _fork.importing():
        import difflib  # noqa: PLC0415 - only an unknown name needs it
    folded = name.casefold()
    ratios = {c: difflib.SequenceMatcher(None, folded, c.casefold()).ratio() for c in valid}
    return [c for _, c in sorted((-r, c) for c, r in ratios.items() if r >= cutoff)[:n]]


def _unknown(cls: BackendEnumMeta, name: object) -> UnknownBackendError:
    from .discovery import rejections  # noqa: PLC0415 - an unknown name only

    state, config, valid = cls._attn_state, cls._attn_state.config, valid_names(cls)
    lines = [f"Unknown {config.noun}: {name!r}. Valid options are: {', '.join(valid)}"]
    if isinstance(name, str):
        result = state.ensure()
        rejected = [p for p in result.plugins if p.name == name and p.status != "used"]
        if state.was_cleared(name):  # then refresh() is the fix, whoever else claims it
            rejected = []
            lines.append(cleared_note(config.registry, name))
        else:
            lines += rejections(result, name, state.controls(), config.host)
        if result.plugins_disabled:
            off = f"Plugins are disabled by {config.env_prefix}_DISABLE_PLUGINS"
            lines.append(f"{off}; unset it to use installed plugins")
        typos = [(by, group, v) for n, by, group, v in result.misgrouped if n == name]
        typo = f"which looks like a typo of {config.group!r}; attn does not read that group"
        for by, g, v in typos:
            lines.append(f"{name!r} = {v!r} is declared by {by} in entry-point group {g!r}, {typo}")
        if (close := close_matches(name, valid)) and not (rejected or typos):
            lines.append(f"Did you mean {joined([repr(c) for c in close], 'or')}?")
        if unread := ", ".join(dict.fromkeys(f.subject for f in result.unreadable)):
            lines.append(f"{name!r} may be declared in metadata attn cannot read: {unread}")
        if typos or unread or any(p.status != "disabled" for p in rejected):  # doctor has a fix
            lines.append(f"Run {config.command('doctor')} for the fix.")
    return UnknownBackendError("\n".join(lines), name=str(name), registry=config.registry)


class _BackendMethods:
    """What a member and a backend a plugin added both do."""

    __slots__ = ()

    def _key(self) -> tuple[BackendEnumMeta, str]:
        return type(self), self.name  # type: ignore[return-value, attr-defined]  # a member's

    def get_path(self, include_classname: bool = True) -> str:
        """The effective class path, dotted (``module.QualName``), or its module only.

        Raises:
            BackendNotRegisteredError: no default, and nothing registered.
        """
        path = resolve(*self._key())[1]
        return path.dotted if include_classname else path.module

    def get_class(self) -> type:
        """Import and return the effective backend class.

        Raises:
            BackendLoadError: the class cannot be imported or is not a backend.
        """
        registry, name = self._key()
        before, loaded = registry._attn_state.lookup(name), load(registry, name)
        # Plugin code that registers this name while attn imports it wins, as later.
        return loaded if registry._attn_state.lookup(name) is before else load(registry, name)

    def is_overridden(self) -> bool:
        """Whether a registration overrides the default (of a plugin's backend: a runtime one)."""
        registry, name = self._key()
        entry = registry._attn_state.lookup(name)
        return entry is not None and (entry.origin == "runtime" or name in registry._attn_defaults)

    def clear_override(self) -> None:
        """Drop the override, or a plugin's backend itself, until ``refresh()``."""
        registry, name = self._key()
        registry._attn_state.clear(name)


class BackendEnum(_BackendMethods, enum.Enum, metaclass=BackendEnumMeta):
    """Base of every registry: members are built-in backends with lazy paths."""

    @classmethod
    def refresh(cls) -> None:
        """Run discovery again (after a ``pip install`` in a running process)."""
        state_of(cls).refresh()

    @classmethod
    def lookup(cls, name: str) -> Self | PluginBackend[Any]:
        """``cls[name]``, typed: a member, or a [`PluginBackend`][PluginBackend] a plugin added."""
        return cast("Self | PluginBackend[Any]", cls[name])

    @classmethod
    def select(cls, /, backend: object = None, **settings: object) -> Selection:
        """Choose *backend*, or the first valid of [`priorities()`][priorities], then plugin names.

        Raises:
            SelectionError: the explicit choice, or every candidate, is rejected.
            UnknownBackendError: the explicit choice names no backend.
        """
        with _fork.importing():
            from .selection import select  # noqa: PLC0415 - a lookup needs no selection
        return select(cls, backend, **settings)

    @classmethod
    def priorities(cls, /, **settings: object) -> list[str]:  # noqa: ARG003 - a host's take them
        """Order for *settings*, plugin names after it; default: built-ins, CUSTOM if registered."""
        defaults, state = cls._attn_defaults, cls._attn_state
        return [n for n in defaults if defaults[n] is not None or state.lookup(n)]

    @classmethod
    def fingerprint(cls) -> str:
        """A hex digest, equal in two processes exactly when every name resolves the same."""
        return fingerprint(state_of(cls).config.group, resolution(cls))


@final
class PluginBackend(_BackendMethods, Generic[_I]):
    """A plugin's new backend: a member's four methods; compared and pickled as (registry, name)."""

    __slots__ = ("_generation", "name", "registry")
    _generation: object
    name: str
    registry: BackendEnumMeta

    def __init__(self, registry: BackendEnumMeta, name: str, generation: object) -> None:
        """Bind *name* of *registry* (the registry's lookup makes them)."""
        for slot, value in zip(self.__slots__, (generation, name, registry), strict=True):
            object.__setattr__(self, slot, value)

    def __setattr__(self, name: str, value: object = None) -> None:
        """Refused, as for a member: the object is a key of dicts and sets."""
        raise AttributeError(f"{self!r} is read-only")

    __delattr__ = __setattr__

    def _key(self) -> tuple[BackendEnumMeta, str]:
        return self.registry, self.name

    def __repr__(self) -> str:
        """Like an enum member's repr, marked as a plugin backend."""
        return f"<{self.registry.__name__}.{self.name}: plugin backend>"

    def __eq__(self, other: object) -> bool:
        """Equal to the plugin backend of the same registry and name."""
        return self._key() == other._key() if isinstance(other, PluginBackend) else NotImplemented

    def __hash__(self) -> int:
        """Hash of the registry and the name."""
        return hash(self._key())

    def __reduce__(self) -> tuple[object, tuple[BackendEnumMeta, str]]:
        """Pickle as ``registry[name]``, looked up again where loaded."""
        return (operator.getitem, self._key())

    def __copy__(self, memo: object = None) -> Self:
        """The object itself, as a member's copy and deep copy are."""
        return self

    __deepcopy__ = __copy__

    def get_class(self) -> type[_I]:
        """Import and return the backend class."""
        return cast("type[_I]", super().get_class())


def declared_registries() -> tuple[BackendEnumMeta, ...]:
    return tuple(_DECLARED.values())


def state_of(registry: type) -> RegistryState:
    """The state object of a registry class; `TypeError` if it is not a declared registry."""
    if not isinstance(state := registry.__dict__.get("_attn_state"), RegistryState):
        raise TypeError(f"{registry!r} is not a registry declared with BackendEnum(group=...)")
    return state


def registration(
    registry: BackendEnumMeta, backend: BackendEnum | PluginBackend[Any], class_path: str | None
) -> Callable[[type], type]:
    """`register()` for *registry* only, called by a register function: its caller registers."""
    if not isinstance(backend, _BackendMethods) or backend._key()[0] is not registry:
        msg = f"expected a member of {registry.__name__} or a backend a plugin added to it, "
        raise TypeError(f"{msg}got {backend!r}")
    state, name = state_of(registry), backend.name
    if not isinstance(backend, enum.Enum) and not state.was_cleared(name):
        resolve(registry, name)  # UnknownBackendError if no plugin provides it any more

    def put(path: ClassPath, by: str | None, stacklevel: int) -> None:
        during = loading_now() or _NOT_LOADING  # plugin code registers while attn imports it
        dist, config = during.distribution, state.config
        entry = Entry(name, path, "runtime", None, None, None, by, dist, during.version)
        if dist is not None and all(
            p.name != name or p.distribution != dist for p in state.ensure().plugins
        ):
            msg = f"plugin code of {entry.plugin_label} registered {config.noun} {name!r} while "
            msg += f"attn imported it for {during.backend!r}, but {dist} does not declare {name!r}"
            msg += f": this replaces it with {path.colon!r} past conflict checks and controls. "
            doctor = config.command("doctor --load")
            msg += f"Report it to the plugin's authors; {doctor} lists such registrations"
            warnings.warn(msg, PluginWarning, stacklevel=stacklevel)  # the registering code
        state.register(entry)

    def decorator(cls: type) -> type:
        if not isinstance(cls, type):  # a function would fail only when the class is asked for
            raise TypeError(f"the registration decorator takes a class, not {shown(cls)}")
        put(parse_path(f"{cls.__module__}:{cls.__qualname__}"), cls.__module__, 3)
        return cls

    if class_path is None:
        state.ready()
        return decorator
    caller = getattr(sys._getframe(1).f_back, "f_globals", {}).get("__name__")  # or C
    put(parse_path(class_path), caller if isinstance(caller, str) else None, 4)  # that caller
    return lambda cls: cls  # an identity function, as the seeds return


def register(
    backend: BackendEnum | PluginBackend[Any], class_path: str | None = None
) -> Callable[[type], type]:
    """Register *class_path* for *backend*, or return a decorator that registers a class.

    Raises:
        TypeError: *backend* is not a member or plugin backend of a registry.
        InvalidPathError: *class_path* is malformed, or the class is local to a function.
    """
    if not isinstance(backend, _BackendMethods):
        msg = f"expected a member of a registry or a backend a plugin added to one, got {backend!r}"  # type: ignore[unreachable]
        raise TypeError(msg)
    return registration(backend._key()[0], backend, class_path)
