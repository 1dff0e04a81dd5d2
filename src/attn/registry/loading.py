"""The one path that resolves a backend's name, imports its class and checks it.

Lookups, listing, ``--load`` and doctor all call `load()`, so a failure is
worded here once. Whatever plugin code raises at import, ``SystemExit`` and its
own ``BaseException`` subclasses and ``GeneratorExit`` included, becomes a
`BackendLoadError` naming the backend and its
distribution; only ``KeyboardInterrupt`` passes through.
Objects that fail even to describe themselves (a ``__repr__``, ``__class__``
or ``__qualname__`` that raises) are load failures too.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from _thread import _local  # threading.local, without importing threading
from typing import IO, TYPE_CHECKING, Literal, NamedTuple, Protocol, cast

from attn import _fork

from .errors import (
    BackendInterfaceError,
    BackendLoadError,
    BackendNotRegisteredError,
    UnknownBackendError,
    describe,
    passes_through,
    shown,
)
from .paths import parse_path

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .paths import ClassPath
    from .table import Entry, RegistryState


class Registry(Protocol):
    """What loading reads of a registry class (a ``BackendEnum`` subclass)."""

    __name__: str
    _attn_state: RegistryState
    _attn_defaults: dict[str, ClassPath | None]
    _attn_interface: type | str


class LoadContext(NamedTuple):
    """Who a path belongs to, so a failure can say so."""

    backend: str
    registry: str
    noun: str
    source: str
    """How messages name where the path came from, e.g. ``acc-foo 1.0``."""
    fix: str
    distribution: str | None = None
    version: str | None = None


def resolve(registry: Registry, name: str) -> tuple[Entry | None, ClassPath]:
    """The table's entry for *name* and its path, or ``None`` and the built-in default.

    Raises:
        BackendNotRegisteredError: a member without a default that nothing registered.
        UnknownBackendError: no member has *name* and the table no longer does.
    """
    entry = registry._attn_state.lookup(name)
    if entry is not None:
        return entry, entry.path
    return None, _default(registry, name)


def _default(registry: Registry, name: str) -> ClassPath:
    state = registry._attn_state
    config = state.config
    default = registry._attn_defaults.get(name)
    if default is not None:
        return default
    if name in registry._attn_defaults:
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


def attribute(path: ClassPath) -> object:
    """The object *path* names: its module imported (once), then each attribute of its qualname.

    Lookups, listing, doctor, ``--registry`` and the testing kit all import through here.
    """
    # A module already imported is taken from sys.modules, as the import
    # statement takes it: on Python 3.10 import_module() takes the module's
    # import lock on every call, and a child forked while another thread held
    # it would wait for it forever.
    obj: object | None = sys.modules.get(path.module)
    if obj is None or getattr(getattr(obj, "__spec__", None), "_initializing", False):
        with _fork.importing():
            obj = importlib.import_module(path.module)
    for part in path.qualname.split("."):
        obj = getattr(obj, part)
    return obj


def interface_of(registry: Registry) -> type:
    """The class every backend of *registry* derives from (imported once if given by path)."""
    interface = registry._attn_interface
    if isinstance(interface, str):
        registry._attn_interface = interface = cast("type", attribute(parse_path(interface)))
    return interface


def load_context(registry: Registry, name: str, entry: Entry | None) -> LoadContext:
    """How a load failure of *name* from *entry* (``None``: built-in) names its source and fix."""
    config = registry._attn_state.config
    here = (name, config.registry, config.noun)
    if entry is None:
        fix = f"Reinstall {config.host}; if that does not help, report a bug"
        return LoadContext(*here, f"{config.host} (built-in)", fix)
    if entry.origin == "runtime":
        by = entry.registrant or "unknown code"
        fix = f"Register an importable class with {config.register_hint}"
        return LoadContext(*here, f"a runtime registration by {by}", fix)
    label = entry.distribution if entry.version is None else f"{entry.distribution} {entry.version}"
    fix = (
        f"Fix or uninstall {entry.distribution}, or block it with "
        f"{config.env_prefix}_BLOCK_PLUGINS={entry.distribution}"
    )
    source = f"{label}, entry point {entry.value!r}"
    return LoadContext(*here, source, fix, entry.distribution, entry.version)


def _fail(
    ctx: LoadContext, path: ClassPath, detail: str, *, interface: bool = False
) -> BackendLoadError:
    cls = BackendInterfaceError if interface else BackendLoadError
    return cls(
        f"Cannot load {ctx.noun} {ctx.backend!r} from {ctx.source} "
        f"(path {path.colon!r}): {detail}. {ctx.fix}",
        backend=ctx.backend,
        registry=ctx.registry,
        path=path.colon,
        distribution=ctx.distribution,
        version=ctx.version,
        detail=detail,
    )


_LOADING = _local()


def loading_now() -> LoadContext | None:
    """The plugin whose module this thread is importing now, if any."""
    stack: list[LoadContext] = getattr(_LOADING, "stack", [])
    return stack[-1] if stack else None


def _import(path: ClassPath, ctx: LoadContext) -> object:
    stack: list[LoadContext] = _LOADING.__dict__.setdefault("stack", [])
    stack.append(ctx)
    try:
        return attribute(path)
    finally:
        stack.pop()


def _import_failure(exc: BaseException, path: ClassPath, ctx: LoadContext) -> str:
    """What went wrong, in one sentence, for the error's detail."""
    if isinstance(exc, BackendLoadError):
        # The module asked attn for another backend while it was imported and
        # that failed: say so once instead of nesting the whole message.
        return f"importing it loads {exc.backend!r}, which fails: {exc.detail}"
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    if missing and ctx.distribution is not None and not f"{path.module}.".startswith(f"{missing}."):
        package = path.module.partition(".")[0]
        if missing.partition(".")[0] == package and _own(package):
            return (
                f"{ctx.distribution}'s own package {package!r} has no module {missing!r} "
                f"({describe(exc)}); reinstall {ctx.distribution} "
                f"(pip install --force-reinstall {ctx.distribution}), or report the broken "
                "release to its authors"
            )
        return (
            f"missing dependency {missing!r} of {ctx.distribution} ({describe(exc)}); "
            f"install it, or reinstall {ctx.distribution} with its dependencies"
        )
    return describe(exc)


def _own(package: str) -> bool:
    """Whether *package* has an ``__init__`` of its own: a namespace package is shared."""
    with _fork.importing():
        from importlib.util import find_spec  # noqa: PLC0415 - only for a failed import

    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.has_location


def _check_class(obj: object, path: ClassPath, interface: type) -> str | None:
    """Why *obj* is not a backend class of *interface*, or ``None`` when it is one."""
    if not isinstance(obj, type):
        return f"{path.colon!r} is not a class but {type(obj).__name__} {shown(obj)}"
    if not issubclass(obj, interface):
        try:
            name = str(obj.__qualname__)
        except Exception:  # noqa: BLE001 - a metaclass whose __qualname__ raises
            name = path.qualname
        return f"{name} does not derive from {interface.__module__}.{interface.__qualname__}"
    return None


def load_class(path: ClassPath, interface: type, ctx: LoadContext) -> type:
    """Import *path* and return the class, which must derive from *interface*.

    Raises:
        BackendLoadError: the module or attribute cannot be imported, or the
            code run by importing it raised anything but ``KeyboardInterrupt``;
            the original exception is chained as ``__cause__``.
        BackendInterfaceError: the object is not a subclass of *interface*.
    """
    try:
        obj = _import(path, ctx)
    except BaseException as exc:
        if passes_through(exc):
            raise
        raise _fail(ctx, path, _import_failure(exc, path, ctx)) from exc
    try:
        problem = _check_class(obj, path, interface)
    except BaseException as exc:
        if passes_through(exc):
            raise
        problem = f"checking {path.colon!r} against the interface raised {describe(exc)}"
        raise _fail(ctx, path, problem, interface=True) from exc
    if problem is not None:
        raise _fail(ctx, path, problem, interface=True)
    return obj  # type: ignore[return-value]


@contextlib.contextmanager
def plugin_output_to(err: IO[str]) -> Iterator[None]:
    """Within this block, what plugin code prints goes to *err*, never to stdout.

    Python-level prints (``sys.stdout``), as `contextlib.redirect_stdout()`
    does, and writes to file descriptor 1 itself (``os.write(1, ...)``, a C
    extension's ``printf``) when *err* is a real file: ``--json`` stays JSON.
    """
    saved = None
    try:
        target = err.fileno()
        sys.stdout.flush()  # what was written so far stays on stdout
        err.flush()
        saved = os.dup(1)
        os.dup2(target, 1)
    except (AttributeError, OSError, ValueError):
        # err is not a file (tests), or there is no fd 1: Python level only.
        if saved is not None:
            os.close(saved)
            saved = None
    stdout, sys.stdout = sys.stdout, err
    try:
        yield
    finally:
        sys.stdout = stdout
        if saved is not None:
            with contextlib.suppress(OSError, ValueError):
                err.flush()
            os.dup2(saved, 1)
            os.close(saved)


def load(
    registry: Registry,
    name: str,
    entry: Entry | Literal["in effect"] | None = "in effect",
    *,
    output: IO[str] | None = None,
) -> type:
    """Import and check the class of backend *name* of *registry*.

    The class in effect, or *entry*'s (``None``: the built-in default). With
    *output*, what plugin code prints meanwhile goes there (`plugin_output_to()`).

    Raises:
        BackendNotRegisteredError: a member without a default that nothing registered.
        UnknownBackendError: *name* is no longer provided.
        BackendLoadError: the class cannot be imported or is not a backend class.
    """
    if isinstance(entry, str):
        entry, path = resolve(registry, name)
    else:
        path = _default(registry, name) if entry is None else entry.path
    redirect = contextlib.nullcontext() if output is None else plugin_output_to(output)
    with redirect:
        return load_class(path, interface_of(registry), load_context(registry, name, entry))


def try_load(
    registry: Registry,
    name: str,
    entry: Entry | Literal["in effect"] | None = "in effect",
    *,
    output: IO[str] | None = None,
) -> tuple[type | None, BackendLoadError | None]:
    """`load()`, with a load failure returned beside ``None`` instead of raised."""
    try:
        return load(registry, name, entry, output=output), None
    except BackendLoadError as exc:
        return None, exc
