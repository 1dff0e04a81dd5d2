"""`Backend`, base of every backend class; `load()`, which imports and checks one."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from _thread import _local  # threading.local, without importing threading
from typing import IO, TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeAlias, cast

from attn import _fork

from .errors import (
    BackendInterfaceError,
    BackendLoadError,
    BackendNotRegisteredError,
    ClassPath,
    Record,
    UnknownBackendError,
    describe,
    parse_path,
    passes_through,
    reinstalling,
    shown,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .table import Entry, RegistryState

    # The class in effect, an entry's, the built-in's (an explicit alias: mypy may read it first).
    Which: TypeAlias = Entry | Literal["in effect"] | None

    class Registry(Protocol):
        """What loading and selection read of a registry class."""

        __name__: str
        _attn_state: RegistryState
        _attn_defaults: dict[str, ClassPath | None]
        _attn_interface: type | str

        def __getitem__(self, name: str, /) -> Any: ...  # noqa: ANN401, D105 - a member or a plugin backend


_MEMO = _local()  # per thread, while same_modules() is in effect: whether each module is found
_LOADING = _local()  # per thread, the stack of plugins whose modules it is importing


def _installed(top: str) -> bool:
    memo: dict[str, bool] | None = getattr(_MEMO, "installed", None)
    memo = {} if memo is None else memo
    if top not in memo:
        with _fork.importing():
            from importlib.util import find_spec  # noqa: PLC0415 - only listing needs it
        try:
            memo[top] = sys.modules.get(top) is not None or find_spec(top) is not None
        except (ImportError, ValueError):
            memo[top] = False
    return memo[top]


@contextlib.contextmanager
def same_modules() -> Iterator[None]:
    """Within this block, this thread looks for each top-level module once (one listing's rows)."""
    outer = getattr(_MEMO, "installed", None)
    _MEMO.installed = {} if outer is None else outer
    try:
        yield
    finally:
        _MEMO.installed = outer


class Backend:
    """A backend: a class a registry hands out by name.

    [`is_available()`][is_available] checks, importing nothing, that its [`requires`][requires]
    are installed.
    """

    requires: ClassVar[tuple[str, ...]] = ()
    """Distribution names of the packages the kernel needs (``"flash-attn"``)."""

    requires_modules: ClassVar[tuple[str, ...] | None] = None
    """Their import names, in order, if not derived (``flash-attn`` -> ``flash_attn``)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Refuse a `requires` or `requires_modules` that cannot be right."""
        super().__init_subclass__(**kwargs)
        if isinstance(cls.requires, (str, tuple, list)):  # anything else is checked when used
            import_names(cls)

    @classmethod
    def get_name(cls) -> str:
        """The backend's display name; the class name unless overridden."""
        return cls.__name__

    @classmethod
    def missing_requirements(cls) -> tuple[str, ...]:
        """The entries of [`requires`][requires] that are not installed."""
        return _not_installed(cls)

    @classmethod
    def is_available(cls) -> bool:
        """Whether every package in [`requires`][requires] is installed (nothing is imported)."""
        return not cls.missing_requirements()


def _not_installed(cls: type[Any]) -> tuple[str, ...]:
    modules = (m.split(".", 1)[0] for m in import_names(cls))
    return tuple(d for d, m in zip(cls.requires, modules, strict=True) if not _installed(m))


def missing_of(cls: type) -> tuple[str, ...] | None:
    """*cls*'s missing kernel packages: its ``missing_requirements()``, else Backend's rule."""
    if callable(check := getattr(cls, "missing_requirements", None)):
        found = () if (found := check()) is None else found  # a str is no list of letters
        if not isinstance(found, (list, tuple)) or not all(isinstance(f, str) for f in found):
            raise TypeError(f"missing_requirements() must return a list of str, not {shown(found)}")
        return tuple(found)
    return None if getattr(cls, "requires", None) is None else _not_installed(cls)


def import_names(cls: type[Any]) -> tuple[str, ...]:
    """The import names of *cls*'s `requires`, in order (`TypeError` if they cannot be right)."""
    requires, modules = cls.requires, getattr(cls, "requires_modules", None)
    for attribute in ("requires", "requires_modules"):
        if isinstance(value := getattr(cls, attribute, None), str):
            msg = f"{cls.__qualname__}.{attribute} is the string {value!r}, not a tuple: "
            raise TypeError(f"{msg}write {attribute} = ({value!r},)")
    if wrong := [n for n in (*requires, *(modules or ())) if not isinstance(n, str)]:
        msg = f"{cls.__qualname__}.requires and requires_modules hold str, not {wrong[0]!r}"
        raise TypeError(msg)
    if modules is None:
        return tuple(name.replace("-", "_").replace(".", "_") for name in requires)
    if len(modules) != len(requires):
        msg = f"{cls.__qualname__}.requires_modules {tuple(modules)!r} does not match requires "
        msg += f"{tuple(requires)!r}: give one import name per distribution, in the same order"
        raise TypeError(msg)
    return tuple(modules)


def code_root(module: str) -> str | None:
    """The folder the top-level package (or module) of the imported *module* came from."""
    top = sys.modules.get(module.partition(".")[0])
    spec = getattr(top, "__spec__", None)
    locations = list(getattr(spec, "submodule_search_locations", None) or ())
    where = locations[0] if locations else getattr(top, "__file__", None)
    return os.path.dirname(where) if isinstance(where, str) else None  # noqa: PTH120


class LoadContext(Record):
    """Who a path belongs to, so a failure can say so."""

    backend: str
    registry: str
    noun: str
    source: str
    fix: str
    distribution: str | None = None
    version: str | None = None


def resolve(registry: Registry, name: str) -> tuple[Entry | None, ClassPath]:
    """The entry for *name* and its path, or ``None`` and the default."""
    entry = registry._attn_state.lookup(name)
    return (None, _default(registry, name)) if entry is None else (entry, entry.path)


def _default(registry: Registry, name: str) -> ClassPath:
    state, config = registry._attn_state, registry._attn_state.config
    if (default := registry._attn_defaults.get(name)) is not None:
        return default
    if state.was_cleared(name):
        msg = f"{config.noun} {cleared_note(config.registry, name)}"
    elif name in registry._attn_defaults:
        msg = f"{config.registry}.{name} has no default {config.noun}: register one with "
        msg += f"{config.register_hint.replace('NAME', name)}, or declare an entry point "
        msg += f"named {name!r} in the {config.group!r} group of a plugin distribution"
    else:
        msg = f"{config.noun} {name!r} is no longer provided: since the last discovery no "
        msg += "plugin in effect declares it (was its distribution uninstalled, or left out by "
        msg += f"{config.env_prefix}_PLUGINS or {config.env_prefix}_BLOCK_PLUGINS?); "
        msg += f"{config.command('list')} shows what is in effect"
    error = BackendNotRegisteredError if name in registry._attn_defaults else UnknownBackendError
    raise error(msg, name=name, registry=config.registry)  # the first for CUSTOM, no default


def cleared_note(registry: str, name: str) -> str:
    """Why *name* of *registry* is gone since ``clear_override()``, and what brings it back."""
    return f"{name!r} was removed with clear_override(); {registry}.refresh() discovers it again"


def attribute(path: ClassPath) -> object:
    """The object *path* names, its module imported once."""
    # Not import_module() each time: on 3.10 it takes the import lock, which a fork may orphan.
    obj: object | None = sys.modules.get(path.module)
    if obj is None or getattr(getattr(obj, "__spec__", None), "_initializing", False):
        with _fork.importing():
            obj = importlib.import_module(path.module)
    for part in path.qualname.split("."):
        obj = getattr(obj, part)
    return obj


def interface_of(registry: Registry) -> type:
    """The class every backend of *registry* derives from (imported once if a path)."""
    if isinstance(interface := registry._attn_interface, str):
        registry._attn_interface = interface = cast("type", attribute(parse_path(interface)))
    return interface


def _context(registry: Registry, name: str, entry: Entry | None) -> LoadContext:
    config = registry._attn_state.config
    here = (name, config.registry, config.noun)
    if entry is None:
        fix = f"Reinstall {config.host}; if that does not help, report a bug"
        return LoadContext(*here, f"{config.host} (built-in)", fix)
    dist, version = entry.distribution, entry.version
    source = f"{dist if version is None else f'{dist} {version}'}, entry point {entry.value!r}"
    if entry.origin == "runtime":  # by plugin code: the plugin's fix; else how to register
        source = f"a runtime registration by {entry.registrant or 'unknown code'}"
        if (dist := entry.plugin_distribution) is None:
            hint = config.register_hint
            dotted = ".NAME" in hint and name not in registry._attn_defaults  # added: no attribute
            hint = hint.replace(".NAME", f"[{name!r}]") if dotted else hint.replace("NAME", name)
            return LoadContext(*here, source, f"Register an importable {config.noun} with {hint}")
        version = entry.plugin_version
    block = f"block it with {registry._attn_state.controls().adding(str(dist))}"
    return LoadContext(*here, source, f"Fix or uninstall {dist}, or {block}", dist, version)


def _fail(ctx: LoadContext, path: ClassPath, detail: str, interface: bool) -> BackendLoadError:
    error = BackendInterfaceError if interface else BackendLoadError
    message = f"Cannot load {ctx.noun} {ctx.backend!r} from {ctx.source} (path {path.colon!r}): "
    about = {key: getattr(ctx, key) for key in ("backend", "registry", "distribution", "version")}
    return error(f"{message}{detail}. {ctx.fix}", path=path.colon, **about, detail=detail)


def loading_now() -> LoadContext | None:
    """The plugin whose module this thread is importing now, if any."""
    stack: list[LoadContext] = getattr(_LOADING, "stack", [])
    return stack[-1] if stack else None


def _import_failure(exc: BaseException, path: ClassPath, ctx: LoadContext) -> str:
    if isinstance(exc, BackendLoadError):
        # Importing it loaded another backend, which failed: say so once, not nested.
        return f"importing it loads {exc.backend!r}, which fails: {exc.detail}"
    dist, missing = ctx.distribution, exc.name if isinstance(exc, ModuleNotFoundError) else None
    if not missing or dist is None or f"{path.module}.".startswith(f"{missing}."):
        return describe(exc)
    package = path.module.partition(".")[0]
    if missing.partition(".")[0] == package:
        with _fork.importing():
            from importlib.util import find_spec  # noqa: PLC0415 - only for a failed import
        # A package with an __init__ of its own is the distribution's; a namespace is shared.
        with contextlib.suppress(ImportError, ValueError):
            if (spec := find_spec(package)) is not None and spec.has_location:
                msg = f"{dist}'s own package {package!r} has no module {missing!r} "
                msg += f"({describe(exc)}); reinstall {dist} ({reinstalling(dist, ctx.version)})"
                return f"{msg}, or report the broken release to its authors"
    msg = f"missing dependency {missing!r} of {dist} ({describe(exc)}); install it, or reinstall "
    msg += f"{dist} with its dependencies"
    return f"{msg} (a kernel imported at module level: import it in methods)"


def load_class(path: ClassPath, interface: type, ctx: LoadContext) -> type:
    """Import *path* and return the class, which must derive from *interface*."""
    stack: list[LoadContext] = _LOADING.__dict__.setdefault("stack", [])
    stack.append(ctx)
    try:
        obj = attribute(path)
    except BaseException as exc:
        if passes_through(exc):
            raise
        raise _fail(ctx, path, _import_failure(exc, path, ctx), interface=False) from exc
    finally:
        stack.pop()
    try:
        if not isinstance(obj, type):
            problem = f"{path.colon!r} is not a class but {type(obj).__name__} {shown(obj)}"
        elif interface in obj.__mro__ or issubclass(obj, interface):  # a Protocol's heirs too
            return obj
        else:  # named as the path names it (a metaclass's __qualname__ may raise)
            where = f"{interface.__module__}.{interface.__qualname__}"
            problem = f"{path.qualname} does not derive from {where}"
    except BaseException as exc:
        if passes_through(exc):
            raise
        problem = f"checking {path.colon!r} against the interface raised {describe(exc)}"
        raise _fail(ctx, path, problem, interface=True) from exc
    raise _fail(ctx, path, problem, interface=True)


@contextlib.contextmanager
def plugin_output_to(err: IO[str]) -> Iterator[None]:
    """What plugin code prints in this block goes to *err* (fd 1 too if it is a file)."""
    saved = None
    with contextlib.suppress(AttributeError, OSError, ValueError):  # not a file, or no fd 1
        target = err.fileno()
        sys.stdout.flush()  # what was written so far stays on stdout
        err.flush()
        saved = os.dup(1)
        os.dup2(target, 1)
    try:
        with contextlib.redirect_stdout(err):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError, ValueError):
                err.flush()
            os.dup2(saved, 1)
            os.close(saved)


def load(registry: Registry, name: str, entry: Which = "in effect") -> type:
    """Import and check *name*'s class in effect, or *entry*'s (``None``: the built-in's)."""
    if isinstance(entry, str):
        entry = registry._attn_state.lookup(name)
    path = _default(registry, name) if entry is None else entry.path
    ctx, config = _context(registry, name, entry), registry._attn_state.config
    try:
        interface = interface_of(registry)
    except BaseException as exc:  # the host's own interface= path: the host's fix, for any backend
        if passes_through(exc):
            raise
        what = f"its registry's interface {registry._attn_interface!r} cannot be imported: "
        ctx = ctx._replace(fix=f"Fix the interface= of {ctx.registry} ({config.host}'s code)")
        raise _fail(ctx, path, what + describe(exc), interface=False) from exc
    return load_class(path, interface, ctx)


def try_load(
    registry: Registry, name: str, entry: Which = "in effect", *, output: IO[str] | None = None
) -> tuple[type | None, BackendLoadError | None]:
    """`load()`, with a load failure returned, not raised; what plugin code prints to *output*."""
    try:
        with contextlib.nullcontext() if output is None else plugin_output_to(output):
            return load(registry, name, entry), None
    except BackendLoadError as exc:
        return None, exc
