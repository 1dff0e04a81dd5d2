"""The Enum base of every registry, its metaclass, and plugin-added backends.

A registry is declared with class keywords::

    class ToyBackendEnum(BackendEnum, group="toy.backends", host="toy",
                         interface=ToyBackend, noun="toy backend"):
        FAST = "toy.fast:FastBackend"
        CUSTOM = None            # no default: must be registered

Members' values are lazy class paths (``module:QualName``, or the dotted
form) or ``None`` for a member without a default. Nothing is imported until
a backend's class is asked for.
"""

from __future__ import annotations

import _thread  # threading.Lock, without importing threading (the warm path)
import enum
import os
import sys

from ._records import final
from .backend import Backend
from .errors import BackendNotRegisteredError, PluginWarning, UnknownBackendError
from .paths import ClassPath, parse_path, path_of_class
from .table import Entry, RegistryConfig, RegistryState

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: typing stays off the warm path

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from typing_extensions import Self

    from .loading import LoadContext

__all__ = [
    "BackendEnum",
    "BackendEnumMeta",
    "PluginBackend",
    "declared_registries",
    "register",
    "state_of",
]

_KEYWORDS = ("group", "host", "interface", "noun", "env_prefix", "register_hint")

# Every declared registry's (env prefix, group), so discovery can tell which
# distributions are plugins of the same host.
_GROUPS: dict[str, list[str]] = {}
# Every declared registry, by module:qualname (a re-declaration replaces it),
# for capture_state().
_DECLARED: dict[str, BackendEnumMeta] = {}
_ADDED_LOCK = _thread.allocate_lock()


def _fresh_lock_in_child() -> None:
    # A child forked while another thread held the lock would wait forever.
    global _ADDED_LOCK  # noqa: PLW0603
    _ADDED_LOCK = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


class BackendEnumMeta(enum.EnumMeta):
    """Metaclass of registries: name lookup runs discovery and explains failures."""

    _attn_state: RegistryState
    _attn_defaults: dict[str, ClassPath | None]
    _attn_interface: type | str

    @classmethod
    def __prepare__(  # type: ignore[override]
        metacls, cls: str, bases: tuple[type, ...], **kwds: Any
    ) -> Any:
        """Accept the registry keywords; Enum's own preparation ignores them."""
        for key in _KEYWORDS:
            kwds.pop(key, None)
        return super().__prepare__(cls, bases, **kwds)

    def __new__(  # noqa: D102
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
        new = super().__new__(metacls, cls, bases, classdict, **kwds)
        members: list[tuple[str, Any]] = list(new.__members__.items())
        if group is None:
            if members:
                msg = f"{cls} declares members but no entry-point group (group=...)"
                raise TypeError(msg)
            return new
        if host is None:
            msg = f"{cls} must declare host=... (the host distribution's name) along with group=..."
            raise TypeError(msg)
        aliases = [name for name, member in members if member.name != name]
        if aliases:
            msg = (
                f"{cls}: members must have distinct values, but {', '.join(aliases)} "
                "repeat the value of another member"
            )
            raise TypeError(msg)
        defaults: dict[str, ClassPath | None] = {}
        for name, member in members:
            value = member.value
            defaults[name] = None if value is None else parse_path(value)
        prefix = env_prefix or host.upper().replace("-", "_").replace(".", "_")
        config = RegistryConfig(
            registry=cls,
            group=group,
            host=host,
            noun=noun or f"{host} backend",
            env_prefix=prefix,
            register_hint=register_hint
            or f"attn.registry.register({cls}, {cls}.NAME, 'module:Class')",
        )
        groups = _GROUPS.setdefault(prefix, [])
        if group not in groups:
            groups.append(group)
        type.__setattr__(new, "_attn_defaults", defaults)
        # Without an interface, any subclass of the core's Backend is a backend.
        type.__setattr__(new, "_attn_interface", Backend if interface is None else interface)
        type.__setattr__(
            new,
            "_attn_state",
            RegistryState(config, tuple(defaults), lambda: tuple(_GROUPS.get(prefix, ()))),
        )
        _DECLARED[f"{new.__module__}:{new.__qualname__}"] = new
        return new

    def __getitem__(cls, name: str) -> Any:
        """Return the member or plugin-added backend called *name*.

        Raises:
            UnknownBackendError: no member, plugin or registration has *name*.
        """
        if "_attn_state" not in cls.__dict__:
            return super().__getitem__(name)
        state: RegistryState = cls._attn_state
        state.ready()
        member = cls._member_map_.get(name)
        if member is not None:
            return member
        if isinstance(name, str) and state.lookup(name) is not None:
            return _plugin_backend(cls, name)
        raise _unknown(cls, name)


def _plugin_backend(cls: BackendEnumMeta, name: str) -> PluginBackend:
    generation = cls._attn_state.ready()
    with _ADDED_LOCK:  # two threads looking a new name up get one object
        cache: dict[str, PluginBackend] = cls.__dict__.get("_attn_added", {})
        backend = cache.get(name)
        if backend is None or backend._generation is not generation:
            backend = PluginBackend(cls, name, generation)
            cache[name] = backend
            type.__setattr__(cls, "_attn_added", cache)
        return backend


def valid_names(cls: BackendEnumMeta) -> list[str]:
    """Built-in names in enum order, then plugin-added names, sorted."""
    builtins = list(cls._attn_defaults)
    added = sorted(n for n in cls._attn_state.names() if n not in cls._attn_defaults)
    return builtins + added


def close_matches(name: str, valid: Iterable[str], n: int = 3, cutoff: float = 0.75) -> list[str]:
    """Names close to *name*, ignoring case; names that differ only by case all stay.

    *cutoff* is on difflib's 0-1 similarity scale.
    """
    import difflib  # noqa: PLC0415 - only an unknown name needs it

    folded = name.casefold()
    scored = []
    for candidate in dict.fromkeys(valid):
        ratio = difflib.SequenceMatcher(None, folded, candidate.casefold()).ratio()
        if ratio >= cutoff:
            scored.append((-ratio, candidate))
    scored.sort()  # best first; equal scores in name order
    return [candidate for _, candidate in scored[:n]]


def _unknown(cls: BackendEnumMeta, name: object) -> UnknownBackendError:
    config = cls._attn_state.config
    valid = valid_names(cls)
    lines = [
        f"Unknown {config.noun}: {name!r}. Valid options are: {', '.join(valid)}",
    ]
    if isinstance(name, str):
        state = cls._attn_state
        result = state.ensure()
        rejected = [p for p in result.plugins if p.name == name and p.status != "used"]
        lines.extend(
            f"{name!r} is provided by {p.origin_label} but is {p.status}: {p.reason}"
            for p in rejected
        )
        if state.was_cleared(name):
            lines.append(
                f"{name!r} was removed with clear_override(); "
                f"{config.registry}.refresh() discovers it again"
            )
        if result.plugins_disabled:
            lines.append(
                f"Plugins are disabled by {config.env_prefix}_DISABLE_PLUGINS; "
                "unset it to use installed plugins"
            )
        misgrouped = [m for m in result.misgrouped if m[0] == name]
        lines.extend(
            f"{name!r} is declared by {label} in entry-point group {group!r}, which looks "
            f"like a typo of {config.group!r}; attn does not read that group"
            for _, label, group in misgrouped
        )
        close = close_matches(name, valid)
        if close and not rejected:
            lines.append("Did you mean " + " or ".join(repr(c) for c in close) + "?")
        if rejected or misgrouped:
            lines.append(f"Run '{config.host} doctor' for the fix.")
    return UnknownBackendError("\n".join(lines), name=str(name), registry=config.registry)


# -- behaviour shared by members and plugin-added backends ---------------------


def _entry_or_default(cls: BackendEnumMeta, name: str) -> tuple[Entry | None, ClassPath]:
    state = cls._attn_state
    entry = state.lookup(name)
    if entry is not None:
        return entry, entry.path
    config = state.config
    if name in cls._attn_defaults:
        default = cls._attn_defaults[name]
        if default is not None:
            return None, default
        msg = (
            f"{config.registry}.{name} has no default {config.noun}: register one with "
            f"{config.register_hint.replace('NAME', name)}, or declare an entry point "
            f"named {name!r} in the {config.group!r} group of a plugin distribution"
        )
        raise BackendNotRegisteredError(msg, name=name, registry=config.registry)
    if state.was_cleared(name):
        msg = (
            f"{config.noun} {name!r} was removed with clear_override(); "
            f"{config.registry}.refresh() discovers it again"
        )
    else:
        msg = (
            f"{config.noun} {name!r} is no longer provided: since the last discovery no "
            "plugin in effect declares it (was its distribution uninstalled, or left out "
            f"by {config.env_prefix}_PLUGINS?); '{config.host} list' shows what is in effect"
        )
    raise UnknownBackendError(msg, name=name, registry=config.registry)


def _get_path(cls: BackendEnumMeta, name: str, include_classname: bool) -> str:
    _, path = _entry_or_default(cls, name)
    return path.dotted if include_classname else path.module


def _interface(cls: BackendEnumMeta) -> type:
    interface = cls._attn_interface
    if isinstance(interface, str):
        path = parse_path(interface)
        import importlib  # noqa: PLC0415 - off the warm path

        obj: Any = importlib.import_module(path.module)
        for part in path.qualname.split("."):
            obj = getattr(obj, part)
        type.__setattr__(cls, "_attn_interface", obj)
        return obj  # type: ignore[no-any-return]
    return interface


def load_context(cls: BackendEnumMeta, name: str, entry: Entry | None) -> LoadContext:
    """How a load failure of *name* names its source and its fix."""
    config = cls._attn_state.config
    from .loading import LoadContext  # noqa: PLC0415 - loading a class is off the warm path

    base = {"backend": name, "registry": config.registry, "noun": config.noun}
    if entry is None:
        return LoadContext(
            **base,
            source=f"{config.host} (built-in)",
            fix=f"Reinstall {config.host}; if that does not help, report a bug",
        )
    if entry.origin == "runtime":
        return LoadContext(
            **base,
            source=f"a runtime registration by {entry.registrant or 'unknown code'}",
            fix=f"Register an importable class with {config.register_hint}",
        )
    label = entry.distribution if entry.version is None else f"{entry.distribution} {entry.version}"
    return LoadContext(
        **base,
        source=f"{label}, entry point {entry.value!r}",
        fix=(
            f"Fix or uninstall {entry.distribution}, or leave it out with "
            f"{config.env_prefix}_PLUGINS (or {config.env_prefix}_DISABLE_PLUGINS=1)"
        ),
        distribution=entry.distribution,
        version=entry.version,
    )


def _get_class(cls: BackendEnumMeta, name: str) -> type:
    from .loading import load_class  # noqa: PLC0415 - loading a class is off the warm path

    entry, path = _entry_or_default(cls, name)
    return load_class(path, _interface(cls), load_context(cls, name, entry))


class BackendEnum(enum.Enum, metaclass=BackendEnumMeta):
    """Base of every registry: members are built-in backends with lazy paths."""

    def get_path(self, include_classname: bool = True) -> str:
        """The effective class path, dotted (``module.QualName``).

        With ``include_classname=False``, the module path only.

        Raises:
            BackendNotRegisteredError: the member has no default and nothing
                was registered for it.
        """
        return _get_path(type(self), self.name, include_classname)

    def get_class(self) -> type:
        """Import and return the effective backend class.

        Raises:
            BackendLoadError: the class cannot be imported or is not a backend.
        """
        return _get_class(type(self), self.name)

    def is_overridden(self) -> bool:
        """Whether a plugin or runtime registration replaces the built-in default."""
        return type(self)._attn_state.lookup(self.name) is not None

    def clear_override(self) -> None:
        """Drop the override, going back to the built-in default until ``refresh()``."""
        type(self)._attn_state.clear(self.name)

    @classmethod
    def refresh(cls) -> None:
        """Run discovery again (after a ``pip install`` in a running process)."""
        state_of(cls).refresh()

    @classmethod
    def lookup(cls, name: str) -> Self | PluginBackend:
        """The backend called *name*: the same object as ``cls[name]``, typed as it can be.

        Type checkers type ``Registry["NAME"]`` as a member (they treat Enum
        indexing specially), but a name may belong to a backend that a plugin
        added, a :class:`PluginBackend`. ``lookup`` says so to the type checker.

        Raises:
            UnknownBackendError: no member, plugin or registration has *name*.
        """
        found: Self | PluginBackend = BackendEnumMeta.__getitem__(cls, name)
        return found

    @classmethod
    def fingerprint(cls) -> str:
        """A hex digest of what every name resolves to here (runs discovery).

        Equal in two processes exactly when each name of this registry
        resolves to the same path, from the same origin, distribution and
        version; ``attn.apply_state`` compares it between driver and workers.
        """
        from .workers import fingerprint  # noqa: PLC0415 - workers imports this module

        return fingerprint(cls)


@final
class PluginBackend:
    """A backend that a plugin added under a new name.

    It has the same four methods as a member, and ``name``. Lookups return
    the same object until the registry is refreshed.
    """

    __slots__ = ("_generation", "name", "registry")

    def __init__(self, registry: BackendEnumMeta, name: str, generation: object) -> None:
        """Bind *name* of *registry* (use the registry's lookup, not this)."""
        self.registry = registry
        self.name = name
        self._generation = generation

    def __repr__(self) -> str:
        """Like an enum member's repr, marked as a plugin backend."""
        return f"<{self.registry.__name__}.{self.name}: plugin backend>"

    def get_path(self, include_classname: bool = True) -> str:
        """The effective class path, dotted (``module.QualName``)."""
        return _get_path(self.registry, self.name, include_classname)

    def get_class(self) -> type:
        """Import and return the backend class."""
        return _get_class(self.registry, self.name)

    def is_overridden(self) -> bool:
        """Whether a runtime registration replaced the plugin's class."""
        entry = self.registry._attn_state.lookup(self.name)
        return entry is not None and entry.origin == "runtime"

    def clear_override(self) -> None:
        """Remove this backend until the registry is refreshed."""
        self.registry._attn_state.clear(self.name)


def declared_registries() -> tuple[BackendEnumMeta, ...]:
    """Every registry declared so far in this process, in declaration order."""
    return tuple(_DECLARED.values())


def state_of(registry: type) -> RegistryState:
    """The state object of a registry class.

    Raises:
        TypeError: *registry* is not a declared registry.
    """
    state = registry.__dict__.get("_attn_state")
    if not isinstance(state, RegistryState):
        msg = f"{registry!r} is not a registry declared with BackendEnum(group=...)"
        raise TypeError(msg)
    return state


def _registered_by_plugin(state: RegistryState, name: str, during: LoadContext) -> None:
    """Warn when plugin code, while attn imports it, registers a name it does not declare."""
    label = str(during.distribution)
    if during.version is not None:
        label += f" {during.version}"
    declared = any(
        p.name == name and p.distribution == during.distribution for p in state.ensure().plugins
    )
    if not declared:
        import warnings  # noqa: PLC0415 - only when plugin code misbehaves

        config = state.config
        warnings.warn(
            f"plugin code of {label} registered {config.noun} {name!r} while attn imported it "
            f"for {during.backend!r}, but {during.distribution} does not declare {name!r}: "
            "this replaces it past conflict checks and controls. Report it to the plugin's "
            f"authors; '{config.host} doctor --load' lists such registrations",
            PluginWarning,
            stacklevel=4,
        )


def _caller_module(depth: int) -> str | None:
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:  # pragma: no cover - shallow stacks
        return None
    name = frame.f_globals.get("__name__")
    return name if isinstance(name, str) else None


def register(
    registry: type[BackendEnum],
    backend: BackendEnum | PluginBackend,
    class_path: str | None = None,
    *,
    caller_depth: int = 1,
) -> Callable[[type], type]:
    """Register *class_path* for *backend* at runtime, or return a decorator.

    With *class_path*, the registration happens now and an identity function
    is returned (as the seeds do). Without it, the returned decorator records
    the decorated class's ``module:qualname`` and returns the class.

    Raises:
        TypeError: *backend* is not a member or plugin backend of *registry*.
        InvalidPathError: *class_path* is malformed, or the class was defined
            inside a function.
    """
    if isinstance(backend, PluginBackend):
        if backend.registry is not registry:
            msg = f"{backend!r} is not a backend of {registry.__name__}"
            raise TypeError(msg)
    elif not isinstance(backend, registry):
        msg = (
            f"expected a member of {registry.__name__} or a backend a plugin added to it, "
            f"got {backend!r}"
        )
        raise TypeError(msg)
    state = state_of(registry)
    name = backend.name

    def put(path: ClassPath, by: str | None) -> None:
        # Only while attn imports a plugin can plugin code be registering; the
        # loading module is not imported before (it is off the warm path).
        loading = sys.modules.get(f"{__package__}.loading")
        during = None if loading is None else loading.loading_now()
        entry = Entry(name, path, "runtime", registered_by=by)
        if during is not None and during.distribution is not None:
            _registered_by_plugin(state, name, during)
            entry = Entry(
                name,
                path,
                "runtime",
                registered_by=by,
                plugin_distribution=during.distribution,
                plugin_version=during.version,
            )
        state.register(entry)

    if class_path is not None:
        put(parse_path(class_path), _caller_module(caller_depth))

        def identity(cls: type) -> type:
            return cls

        return identity

    state.ready()

    def decorator(cls: type) -> type:
        put(path_of_class(cls), cls.__module__)
        return cls

    return decorator
